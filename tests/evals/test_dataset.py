from pathlib import Path

import pytest

from nexus_gateway.errors import ConfigError
from nexus_gateway.evals.dataset import arguments_match, load_cases, value_matches
from tests.conftest import write_labelled_set


def test_values_compare_as_numbers_when_both_parse():
    assert value_matches(["3"], 3.0) and value_matches([3], "3.0") and not value_matches(["3"], 4)


def test_strings_compare_case_insensitively_after_trimming():
    assert value_matches(["Paris"], "  paris ") and not value_matches(["Paris"], "Lyon")


def test_empty_string_means_the_parameter_may_be_omitted():
    assert arguments_match({"city": ["Paris"], "units": ["", "metric"]}, {"city": "paris"})
    assert not arguments_match({"city": ["Paris"]}, {})
    assert not arguments_match({"units": ["", "metric"]}, {"units": "imperial"})


def test_a_broken_cases_line_is_reported_with_its_number(tmp_path: Path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "query": "q", "tool": "t"}\n{"id": "b", "query": "q"}\n')
    with pytest.raises(ConfigError, match=r"cases\.jsonl:2: not a case"):
        load_cases(path)


def test_an_offset_split_leaves_out_exactly_the_cases_the_plain_sample_takes(tmp_path: Path):
    from nexus_gateway.cli.evals import _load

    tools = [{"name": "t", "inputSchema": {"type": "object"}}]
    cases = [{"id": f"c{i}", "query": f"q{i}", "tool": "t"} for i in range(50)]
    paths = write_labelled_set(tmp_path, tools, cases)
    _, reported = _load(*paths, [], 20, 0)
    _, tuning = _load(*paths, [], 20, 0, 20)
    _, rest = _load(*paths, [], None, 0, 20)
    assert len(reported) == len(tuning) == 20 and len(rest) == 30
    assert {case.id for case in reported}.isdisjoint(case.id for case in rest)
    assert {case.id for case in tuning} <= {case.id for case in rest}


def test_alternatives_are_read_as_tools_as_right_as_the_gold_one(tmp_path: Path):
    path = tmp_path / "cases.jsonl"
    first_line = '{"id": "a", "query": "q", "tool": "t", "alternatives": ["u", "t", "v", "u"]}'
    path.write_text(first_line + '\n{"id": "b", "query": "q", "tool": "t"}\n')
    first, second = load_cases(path)
    assert first.alternatives == ("u", "v") and first.right == {"t", "u", "v"}
    assert second.alternatives == () and second.right == {"t"}


def test_alternatives_that_are_not_a_list_of_names_are_reported_with_their_line(tmp_path: Path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "query": "q", "tool": "t", "alternatives": "u"}\n')
    with pytest.raises(ConfigError, match=r"cases\.jsonl:1: not a case .*alternatives"):
        load_cases(path)
