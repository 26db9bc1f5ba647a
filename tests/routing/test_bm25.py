from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import BM25Retriever, tokenize, weighted_terms
from nexus_gateway.routing.retriever import FieldWeights, ToolFields


def record(server: str, name: str, description: str, *params: str) -> ToolRecord:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in params}}
    return ToolRecord.from_tool(server, {"name": name, "description": description, "inputSchema": schema})


CATALOG = [
    record("calendar", "create_event", "Create a calendar event with attendees", "title", "start"),
    record("weather", "get_forecast", "Weather forecast for a city for the next days", "city", "days"),
    record("notes", "search_notes", "Full-text search over your notes", "query"),
    record("issues", "create_issue", "Open a new issue in the tracker", "title", "body"),
]


def test_tokenizer_splits_camel_case_and_drops_stopwords():
    assert tokenize("getCurrentWeather for the city") == ["current", "weather", "city"]


def test_the_tool_that_matches_the_request_ranks_first():
    retriever = BM25Retriever()
    retriever.index(CATALOG)
    assert retriever.search("what is the weather forecast in Paris", 2)[0].name == "weather__get_forecast"
    assert retriever.search("open an issue about the crash", 2)[0].name == "issues__create_issue"
    assert retriever.search("find my notes about taxes", 2)[0].name == "notes__search_notes"


def test_no_overlap_returns_nothing_and_empty_index_is_fine():
    retriever = BM25Retriever()
    assert retriever.search("anything", 3) == []
    retriever.index(CATALOG)
    assert retriever.search("zzzz qqqq", 3) == []


HELLO = [
    record("hello", "debug", "Lists all available tools and methods"),
    record("filesystem", "read_text_file", "Read the complete contents of a file as text", "path"),
    record("mail", "send_email", "Send an email", "to"),
]


def _scores(weights: FieldWeights, query: str) -> dict[str, float]:
    retriever = BM25Retriever(weights=weights)
    retriever.index(HELLO)
    return {hit.name: hit.score for hit in retriever.search(query, len(HELLO))}


def test_a_file_named_like_a_server_does_not_pull_its_tools_when_the_server_weighs_nothing():
    query = "read the hello file"  # a word that names a server (paths are masked before: routing/query.py)
    assert "hello__debug" in _scores(FieldWeights(server=1.0), query)
    scores = _scores(FieldWeights(server=0.0), query)
    assert "hello__debug" not in scores and next(iter(scores)) == "filesystem__read_text_file"


def test_a_heavier_field_scores_its_terms_higher():
    light, heavy = _scores(FieldWeights(name=1.0), "send email"), _scores(FieldWeights(name=3.0), "send email")
    assert heavy["mail__send_email"] > light["mail__send_email"] > 0


def test_weighted_terms_count_each_field_its_weight_times():
    fields = ToolFields("send email", "Send a message", "to recipient", "mail")
    terms, length = weighted_terms(fields, FieldWeights(name=2.0, description=1.0, parameters=0.5, server=0.0))
    assert terms["send"] == 2.0 + 1.0 and terms["recipient"] == 0.5 and "mail" not in terms
    assert length == 2.0 * 2 + 1.0 * 2 + 0.5 * 1  # "to" is a stopword
