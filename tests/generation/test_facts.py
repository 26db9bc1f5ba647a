"""Facts the request does not give (facts.py), with the shapes grounding.py asks of them. No model."""

from nexus_gateway.generation.facts import missing_facts
from nexus_gateway.generation.grounding import ungrounded

STOCK = {
    "type": "object",
    "properties": {"ticker": {"type": "string", "description": "The stock ticker symbol, e.g. 'AAPL'."}},
    "required": ["ticker"],
}
QUOTE = {
    "type": "object",
    "properties": {"symbol": {"type": "string", "description": "Stock symbol to quote."}},
    "required": ["symbol"],
}
CODE = {
    "type": "object",
    "properties": {"symbol": {"type": "string", "description": "Name of the function or class."}},
    "required": ["symbol"],
}


def _missing(request: str, schema: dict, arguments: dict) -> list[str]:
    return missing_facts(schema, arguments, ungrounded(request, schema, arguments))


def test_a_company_name_is_not_a_ticker_so_the_ticker_is_missing():
    assert _missing("What's the share price of Volkswagen?", STOCK, {"ticker": "Volkswagen"}) == ["ticker"]
    assert _missing("price of Volkswagen", QUOTE, {"symbol": "Volkswagen"}) == ["symbol"]


def test_a_ticker_the_request_writes_is_no_missing_fact():
    assert _missing("how is AAPL doing?", STOCK, {"ticker": "AAPL"}) == []
    assert _missing("quote VOW3.DE", QUOTE, {"symbol": "VOW3.DE"}) == []


def test_a_symbol_that_is_no_stock_symbol_may_be_any_name_the_request_writes():
    assert _missing("where is parseConfig defined?", CODE, {"symbol": "parseConfig"}) == []
