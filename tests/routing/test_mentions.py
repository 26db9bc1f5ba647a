"""`named_servers`: the servers a request names by a word of their names, and none by a file or packaging word."""

from __future__ import annotations

import pytest

from nexus_gateway.routing.mentions import named_servers, server_words

SERVERS = [
    "npm-github",
    "npm-firecrawl",
    "py-git",
    "npm-chrome-devtools",
    "hello-world",
    "mcp-server-time",
    "pg",
    "py-word",
    "py-excel",
]


@pytest.mark.parametrize(
    ("request_text", "named"),
    [
        ("who on github goes by the name torvalds", {"npm-github"}),
        ("scrape https://shop.example.com with firecrawl", {"npm-firecrawl"}),
        ("take a screenshot of the page in Chrome", {"npm-chrome-devtools"}),
        ("what time is it in Paris?", {"mcp-server-time"}),
        ("read the file /tmp/hello-world/hello.txt", set()),  # a path names its kind, not a server
        ("commit my changes", set()),
        ("run select 1 on pg", set()),  # too short a word to tell
        ("replace 'ACME Ltd' with 'ACME GmbH' in /home/sam/contract.docx", {"py-word"}),  # the format's app
        ("what sheets are in budget.xlsx", {"py-excel"}),
        ("check the docs for the word count", {"py-word"}),  # the word itself names it, as before
        ("how do I set up useEffect? check the docs", set()),  # "docs" is no file of Word's format
    ],
)
def test_a_request_names_the_servers_whose_words_it_uses(request_text: str, named: set[str]):
    assert named_servers(request_text, SERVERS) == named


def test_packaging_words_and_short_words_do_not_name_a_server():
    assert server_words("mcp-server-time") == {"time"} and server_words("npm-github") == {"github"}
    assert server_words("py-ha") == set() and server_words("chrome-devtools") == {"chrome", "devtool"}
