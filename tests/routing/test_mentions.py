"""`named_servers`: the servers a request names by a word of their names, and none by a file or packaging word;
`mention_bonus`: their tools count for more in retrieval."""

from __future__ import annotations

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.hybrid import HybridRetriever
from nexus_gateway.routing.mentions import (
    FEW_TOOLS,
    FEW_TOOLS_FACTOR,
    MENTION_BONUS,
    SOLE_MENTION_FACTOR,
    initialism_names,
    mention_bonus,
    named_servers,
    product_words,
    server_words,
)

SERVERS = [
    "npm-github",
    "npm-kubernetes",
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
        ("open PRs on kubernetes/kubernetes? check github", {"npm-github"}),  # a slug names a repository
    ],
)
def test_a_request_names_the_servers_whose_words_it_uses(request_text: str, named: set[str]):
    assert named_servers(request_text, SERVERS) == named


def test_packaging_words_and_short_words_do_not_name_a_server():
    assert server_words("mcp-server-time") == {"time"} and server_words("npm-github") == {"github"}
    assert server_words("py-ha") == set() and server_words("chrome-devtools") == {"chrome", "devtool"}


def _catalog() -> list[tuple[str, str, str]]:
    """(server, name, description): an Atlassian server serving Jira and Confluence, a Kubernetes one named for
    kubectl, three browser servers whose tool names or descriptions all say "browser", a workspace server whose
    names often lead with "manage"."""
    atlassian = [("py-atlassian", f"jira_{verb}_issue", f"{verb} a Jira issue") for verb in ("get", "create", "delete")]
    atlassian += [
        ("py-atlassian", f"confluence_{verb}", f"{verb} Confluence pages")
        for verb in ("search", "get_page", "get_space")
    ]
    kubernetes = [
        ("npm-kubernetes", f"kubectl_{verb}", f"kubectl {verb} resources") for verb in ("get", "apply", "logs")
    ]
    browsers = [("npm-playwright", f"browser_{verb}", f"{verb} in the browser") for verb in ("click", "type", "close")]
    browsers += [("npm-puppeteer", f"puppeteer_{verb}", f"{verb} in the browser page") for verb in ("click", "fill")]
    browsers += [("chrome-devtools", "new_page", "Open a new browser tab")]
    workspace = [
        ("py-workspace", f"manage_{thing}", f"Create or change {thing}s") for thing in ("event", "task", "form")
    ]
    workspace += [
        ("py-workspace", f"get_{thing}", f"Read {thing}s") for thing in ("event", "task", "form", "doc", "file")
    ]
    return atlassian + kubernetes + browsers + workspace


def test_a_server_serves_the_products_its_tool_names_lead_with_and_no_other_server_mentions():
    assert product_words(_catalog()) == {
        "py-atlassian": {"jira", "confluence"},  # not "atlassian" (its name already says it)
        "npm-kubernetes": {"kubectl"},
    }  # not "browser": other servers' tools say it; not "manage": 3 of 8 tools, and a verb-like word
    assert product_words([("py-atlassian", "jira_get_issue", "Get a Jira issue")]) == {}  # one tool is no product


def test_a_request_names_a_server_by_a_product_it_serves():
    products = product_words(_catalog())
    servers = {server for server, _, _ in _catalog()}
    request = "where's our onboarding checklist? should be a confluence page somewhere"
    assert named_servers(request, servers, products) == {"py-atlassian"}
    assert named_servers(request, servers) == set()  # without the products, as before
    assert named_servers("close the browser", servers, products) == set()
    bonus = mention_bonus("in jira, move PROJ-7 to Done", ["py-atlassian"] * 4 + ["npm-kubernetes"], products)
    assert bonus.tolist() == [SOLE_MENTION_FACTOR * MENTION_BONUS] * 4 + [0.0]


def test_the_bonus_goes_to_every_tool_of_a_named_server_and_no_other():
    servers = ["npm-github", "npm-gitlab", "npm-github", "py-git", "npm-github", "npm-github"]
    bonus = mention_bonus("file a bug on github octo/app: login fails", servers)
    sole = SOLE_MENTION_FACTOR * MENTION_BONUS  # the only server named counts for more
    assert bonus.tolist() == [sole, 0.0, sole, 0.0, sole, sole]
    both = mention_bonus("copy the issue from gitlab to github", servers)
    assert both.tolist() == [MENTION_BONUS, MENTION_BONUS, MENTION_BONUS, 0.0, MENTION_BONUS, MENTION_BONUS]
    assert not mention_bonus("read the file /tmp/github/notes.txt", servers).any()  # a path names no server


def test_a_server_with_few_tools_named_outright_counts_almost_as_its_tool_named():
    """ "in postgres, ..." names a server whose one tool (`query`) shares no word with the rest of the request."""
    servers = ["npm-postgres"] + ["npm-sentry"] * 5
    bonus = mention_bonus("in postgres, how many users signed up in November?", servers)
    assert bonus.tolist() == [FEW_TOOLS_FACTOR * SOLE_MENTION_FACTOR * MENTION_BONUS] + [0.0] * 5
    many = mention_bonus("in sentry, list the unresolved issues", servers)  # five tools: no more than a sole mention
    assert many.tolist() == [0.0] + [SOLE_MENTION_FACTOR * MENTION_BONUS] * 5
    assert FEW_TOOLS < 5


def test_a_named_server_decides_between_equal_tools_and_reaches_tools_retrieval_missed(monkeypatch):
    """Two servers' `create_issue` are the same text: the one named wins. In a large catalog the named server's
    tools join the pool even when neither retriever's top list holds them."""
    from nexus_gateway.routing import hybrid, slb

    def tools(server: str) -> list[ToolRecord]:
        return [
            ToolRecord.from_tool(server, {"name": "create_issue", "description": "Create a new issue in a project."}),
            ToolRecord.from_tool(server, {"name": "list_labels", "description": "List the labels of a project."}),
        ]

    filler = [
        ToolRecord.from_tool("bulk", {"name": f"tool_{i}", "description": f"creates new issue kind {i}"})
        for i in range(120)
    ]
    for large in (False, True):
        if large:
            monkeypatch.setattr(slb, "FAISS_ABOVE", 50)
            monkeypatch.setattr(hybrid, "LARGE_POOL", 5)
        retriever = HybridRetriever(make_embedder("hashing"))
        retriever.index([*tools("gitlab"), *tools("github"), *filler])
        hits = retriever.search("on github, create a new issue: login fails", 3)
        assert hits[0].name == "github__create_issue", (large, hits)
        assert retriever.search("create a new issue: login fails", 1)[0].name != "github__create_issue"


def test_a_server_named_by_initials_is_named_by_what_its_tools_call_it():
    """`py-ddg` is DuckDuckGo, `py-ha` Home Assistant, `npm-awskb` the AWS Knowledge Base: users say the product."""
    assert initialism_names("py-ddg", ["Search the web using DuckDuckGo. Returns results."]) == {
        "duckduckgo",
        "duck duck go",
    }
    assert initialism_names("py-ha", ["Get the state of an entity in Home Assistant."]) == {"home assistant"}
    assert initialism_names("npm-awskb", ["Retrieval from the AWS Knowledge Base by ID."]) == {"aws knowledge base"}
    assert initialism_names("py-ha", ["Get the state of an entity. Hello Again."]) == {"hello again"}
    assert initialism_names("py-git", ["Show the Git Index Tree."]) == set()  # git is a word, not initials
    catalog = [
        ("py-ddg", "search", "Search the web using DuckDuckGo."),
        ("py-ha", "ha_get_state", "Get the state of an entity in Home Assistant."),
        ("py-duckdb", "query", "Run a SQL query on DuckDB."),
    ]
    products = product_words(catalog)
    servers = {server for server, _, _ in catalog}
    assert named_servers("duckduckgo rust async runtimes", servers, products) == {"py-ddg"}
    assert named_servers("search duck duck go for ramen", servers, products) == {"py-ddg"}
    assert named_servers("in home assistant, turn off the porch light", servers, products) == {"py-ha"}
    assert named_servers("I'm home, any assistant free?", servers, products) == set()  # words apart: no phrase


def test_only_a_server_named_by_a_name_of_its_own_or_as_a_service_counts_twice():
    servers = ["py-time", "npm-slack", "npm-postgres", "weather"]
    servers += ["npm-slack", "npm-postgres", "npm-slack", "npm-postgres", "npm-slack", "npm-postgres"]  # 4 tools each
    sole = SOLE_MENTION_FACTOR * MENTION_BONUS

    def said(bonus: float, *servers_named: str) -> list[float]:
        return [bonus if server in servers_named else 0.0 for server in servers]

    assert mention_bonus("in postgres, how many users signed up?", servers).tolist() == said(sole, "npm-postgres")
    everyday = mention_bonus("what time is it in Lima?", servers)  # an everyday word
    assert everyday.tolist() == said(MENTION_BONUS, "py-time")
    assert mention_bonus("post 'done' in slack", servers).tolist() == said(sole, "npm-slack")  # said as a service is
    assert mention_bonus("slack: post 'done' to #ops", servers).tolist() == said(sole, "npm-slack")
    assert mention_bonus("cut me some slack, post 'late'", servers).tolist() == said(MENTION_BONUS, "npm-slack")
