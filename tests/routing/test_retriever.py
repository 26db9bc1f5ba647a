from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.retriever import DENSE_FIELDS, FieldWeights, ToolFields, index_text, tool_text

TOOL = {
    "name": "read_text_file",
    "description": "Read a file as text",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "Where the file is"}}},
}


def test_fields_read_the_name_in_words_and_the_parameters_with_their_descriptions():
    fields = ToolFields.of("readTextFile", "Read a file", TOOL["inputSchema"], "npm-filesystem")
    assert fields == ToolFields("read Text File", "Read a file", "path Where the file is", "npm filesystem")


def test_a_name_prefixed_by_its_server_counts_the_server_once_as_a_server():
    fields = ToolFields.of("files__read_text_file", "Read", None, "files")
    assert fields.name == "read text file" and fields.server == "files"


def test_the_embedded_text_leaves_out_fields_of_weight_zero():
    fields = ToolFields("read text file", "Read a file", "path", "files")
    assert fields.text(FieldWeights()) == "read text file files Read a file path"
    assert fields.text(FieldWeights(server=0.0, parameters=0.0)) == "read text file Read a file"


def test_the_gateway_and_the_evaluations_embed_the_same_text_for_a_tool():
    """One spelling: a catalog record (bare upstream name) and an evaluation set's `server__tool` entry."""
    record = ToolRecord.from_tool("files", TOOL)
    listed = index_text("files__read_text_file", TOOL["description"], TOOL["inputSchema"], "files")
    assert tool_text(record) == listed == ToolFields.of_record(record).text(DENSE_FIELDS)
