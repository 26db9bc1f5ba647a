"""`name_terms` and `name_coverage`: how much of a tool's own name a request says, and the retriever adding
`NAME_WEIGHT` times it to the tool's score."""

from __future__ import annotations

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import tokenize
from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.hybrid import HybridRetriever
from nexus_gateway.routing.names import NAME_WEIGHT, name_coverage, name_terms


def test_a_name_is_read_without_its_server_prefix_and_words():
    assert name_terms("npm-github__list_issues", "npm-github") == {"list", "issu"}
    assert name_terms("github_list_issues", "npm-github") == {"list", "issu"}  # the server's word in the name itself
    assert name_terms("getCurrentTime") == {"current", "time"}  # "get" is a stopword to BM25 too
    assert name_terms("mcp__server", "") == frozenset()


def test_coverage_is_the_share_of_a_name_the_request_says():
    request = set(tokenize("list the open issues on octo/app"))
    names = [name_terms("list_issues"), name_terms("jira_search_project_issues"), frozenset()]
    assert name_coverage(request, names).tolist() == [1.0, 0.25, 0.0]


@pytest.mark.parametrize("large", [False, True])
def test_the_retriever_adds_the_named_share_to_each_tools_score(monkeypatch: pytest.MonkeyPatch, large: bool):
    """The same tools searched with the weight and without it: each score moves by the weight times its share
    (in a large catalog too, where the dense and lexical top lists are fused apart)."""
    from nexus_gateway.routing import hybrid, slb

    if large:
        monkeypatch.setattr(slb, "FAISS_ABOVE", 50)
        monkeypatch.setattr(hybrid, "LARGE_POOL", 200)
    tools = [
        ToolRecord.from_tool("github", {"name": "list_issues", "description": "Issues of a repository."}),
        ToolRecord.from_tool("jira", {"name": "search_project_issues", "description": "Issues of a project."}),
        *(ToolRecord.from_tool("bulk", {"name": f"tool_{i}", "description": f"issue kind {i}"}) for i in range(80)),
    ]
    retriever = HybridRetriever(make_embedder("hashing"))
    retriever.index(tools)
    request = "list the open issues"
    weighted = {hit.name: hit.score for hit in retriever.search(request, 5)}
    monkeypatch.setattr(hybrid, "NAME_WEIGHT", 0.0)
    plain = {hit.name: hit.score for hit in retriever.search(request, 5)}
    assert weighted["github__list_issues"] - plain["github__list_issues"] == pytest.approx(NAME_WEIGHT)
    assert weighted["jira__search_project_issues"] - plain["jira__search_project_issues"] == pytest.approx(
        NAME_WEIGHT / 3
    )
