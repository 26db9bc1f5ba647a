from pathlib import Path

import pytest

from nexus_gateway.errors import ConfigError
from nexus_gateway.evals.dataset import arguments_match, load_cases, value_matches


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
