from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import BM25Retriever, tokenize


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
