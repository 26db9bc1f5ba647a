"""Exposed tool names: injective, stable, always valid, and unchanged where they were already fine."""

import json
import os
import random
import re
import subprocess
import sys

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexus_gateway.catalog import Catalog, namespaced_name
from nexus_gateway.catalog.naming import tool_name

VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
PIECES = ["a", "b", "_", "__", "-", ".", " ", "é", "日", "\n", "x" * 30]
tricky = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join)
names = tricky | st.text(min_size=1, max_size=90) | st.text(alphabet="ab_", min_size=1, max_size=70)
pairs = st.tuples(names, names)


@given(names, names)
@example("s", "x\n")
def test_exposed_names_always_match_the_mcp_pattern(server: str, tool: str):
    assert VALID.fullmatch(namespaced_name(server, tool))


@settings(max_examples=300)
@given(st.lists(pairs, min_size=2, max_size=40, unique=True))
@example([("a_", "deploy"), ("a", "_deploy")])
@example([("a", "b__c"), ("a__b", "c")])
@example([("s", "x\n"), ("s", "x")])
def test_distinct_pairs_never_share_a_name(pairs: list[tuple[str, str]]):
    assert len({namespaced_name(server, tool) for server, tool in pairs}) == len(pairs)


def test_the_name_is_a_pure_function_of_the_pair_across_processes():
    rng = random.Random(7)
    sample = [("".join(rng.choices(PIECES, k=rng.randint(1, 6))), "".join(rng.choices(PIECES, k=rng.randint(1, 6))))]
    sample += [(f"s{i}_", f"_t{i}") for i in range(50)] + [("time", "get_current_time")]
    script = (
        "import json, sys\nfrom nexus_gateway.catalog import namespaced_name\n"
        "print(json.dumps([namespaced_name(s, t) for s, t in json.load(sys.stdin)]))"
    )
    env = os.environ | {"PYTHONHASHSEED": "12345"}
    other = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(sample), capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(other.stdout) == [namespaced_name(server, tool) for server, tool in sample]


def test_names_that_were_already_fine_are_unchanged():
    assert namespaced_name("time", "get_current_time") == "time__get_current_time"
    assert namespaced_name("git", "git_status") == "git__git_status"
    assert namespaced_name("everything", "echo") == "everything__echo"
    assert namespaced_name("a", "_deploy") == "a___deploy"


@given(
    st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,18}[a-z0-9])?", fullmatch=True),
    st.from_regex(r"[a-zA-Z0-9_-]{1,40}", fullmatch=True),
)
def test_plain_server_and_tool_names_keep_the_natural_name_which_reads_back(server: str, tool: str):
    name = namespaced_name(server, tool)
    assert name == f"{server}__{tool}"
    assert name.split("__", 1) == [server, tool]


def test_an_ambiguous_pair_gets_a_hash_suffix_without_a_double_underscore():
    name = namespaced_name("a_", "deploy")
    assert name != "a___deploy" and "__" not in name and re.fullmatch(r"a_deploy_[0-9a-f]{12}", name)


def test_long_and_odd_names_are_shortened_with_a_hash_suffix():
    name = namespaced_name("my.server", "a tool with spaces and a very long name that keeps going and going")
    assert len(name) == 64 and name.startswith("my_server_a_tool_with_spaces")


def test_a_custom_prefix_replaces_the_server_name_and_empty_keeps_the_upstream_name():
    assert tool_name("github", "create_issue", "gh_") == "gh_create_issue"
    assert tool_name("github", "create_issue", "") == "create_issue"
    odd = tool_name("github", "create issue", "")
    assert VALID.fullmatch(odd) and odd.startswith("create_issue_")


@given(st.lists(st.tuples(tricky, tricky), min_size=1, max_size=12, unique=True), st.randoms())
@example([("a_", "deploy"), ("a", "_deploy")], random.Random(0))
def test_a_servers_names_do_not_depend_on_which_other_servers_were_added(entries, rng):
    servers: dict[str, list[str]] = {}
    for server, tool in entries:
        servers.setdefault(server, []).append(tool)

    def names_after(order: list[str]) -> dict[tuple[str, str], str]:
        catalog = Catalog()
        for server in order:
            catalog.replace_server(server, [{"name": tool} for tool in servers[server]])
        return {(record.server, record.upstream_name): record.name for record in catalog}

    order = list(servers)
    shuffled = order[:]
    rng.shuffle(shuffled)
    alone = {pair: name for server in order for pair, name in names_after([server]).items()}
    assert names_after(order) == names_after(shuffled) == alone
