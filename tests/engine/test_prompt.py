"""The text layout: one way to write an earlier turn, for every model family."""

import pytest

from nexus_gateway.engine import Turn
from nexus_gateway.engine.prompt import CHATML, GEMMA, PLAIN, PromptLayout


@pytest.mark.parametrize("layout", [GEMMA, CHATML, PLAIN], ids=lambda layout: layout.name)
def test_a_turn_is_the_request_its_arguments_and_the_start_of_its_result(layout: PromptLayout):
    called = Turn("weather in Oslo", '{"city": "Oslo"}', "Sunny, 12 C")
    proposed = Turn("email bob", '{"to": "bob"}')
    assert (
        layout.turn_text(called)
        == 'Earlier request: weather in Oslo\nArguments: {"city": "Oslo"}\nResult: Sunny, 12 C\n'
    )
    assert layout.turn_text(proposed) == 'Earlier request: email bob\nArguments: {"to": "bob"}\n'


def test_a_tool_line_reads_the_whole_description_where_the_listed_signature_keeps_its_first_sentence():
    from nexus_gateway.catalog import ToolRecord
    from nexus_gateway.engine.prompt import tool_line

    tool = {
        "name": "FinanceTool",
        "description": "Stay informed with the latest financial updates. Options, stocks, cryptocurrencies, and more.",
        "inputSchema": {"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]},
    }
    record = ToolRecord.from_tool("finance", tool)
    assert "cryptocurrencies" not in record.signature
    text = tool_line(record)
    assert text.startswith("Tool: " + record.name + "(symbol: str) - Stay informed")
    assert "cryptocurrencies" in text and text.endswith("\n")
