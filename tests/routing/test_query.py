"""What routing reads of a request: values named by their kind (routing/query.py)."""

from __future__ import annotations

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import BM25Retriever
from nexus_gateway.routing.query import routing_text


@pytest.mark.parametrize(
    ("request_text", "routed"),
    [
        ("read ~/notes/todo.md", "read file md"),
        ("what files are in /home/sam/Downloads", "what files are in folder"),
        ("fetch https://example.com/pricing and give me the text", "fetch url and give me the text"),
        ("find the contact with email jane@corp.com", "find the contact with email email address"),
        ("read A1:F30 from /home/sam/budget.xlsx", "read A1:F30 from file xlsx"),
        ("show me this picture cat.png", "show me this picture file png"),
        (r"open C:\Users\sam\a.docx", "open file docx"),
        ("show me /srv/app/.env", "show me file"),
    ],
)
def test_values_are_named_by_their_kind(request_text: str, routed: str) -> None:
    assert routing_text(request_text) == routed


@pytest.mark.parametrize(
    "request_text",
    [
        "what time is it in Paris?",
        "list all the pages on docs.example.com",
        "what is 17.5% of 2340",
        "upgrade to v1.2.3",
        "fork vercel/next.js to my account",
        "convert 3/4 cups to grams",
    ],
)
def test_requests_without_paths_urls_or_addresses_are_read_as_written(request_text: str) -> None:
    assert routing_text(request_text) == request_text


def _tool(name: str, description: str) -> ToolRecord:
    return ToolRecord.from_tool("s", {"name": name, "description": description, "inputSchema": {"type": "object"}})


def test_a_paths_words_do_not_pull_tools_that_share_them() -> None:
    """The path's letters ("projects", "app", "env", "example") name two other tools; its kind names the right one."""
    retriever = BM25Retriever()
    retriever.index(
        [
            _tool("get_script_project", "Get the details of an Apps Script project: its files and example code."),
            _tool("get_env", "Print the environment variables (env) of the app, for example to debug configuration."),
            _tool("read_text_file", "Read the complete contents of a file as text."),
        ]
    )
    hits = retriever.search("show me what's in /home/sam/projects/app/.env.example", 3)
    assert hits[0].name == "s__read_text_file"
