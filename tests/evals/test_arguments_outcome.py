"""How `eval arguments` judges one case: an alternative tool is right and is compared on the gold parameters
it has; a parameter reported missing counts as left out."""

from nexus_gateway.evals.arguments import Outcome
from nexus_gateway.evals.dataset import Case
from nexus_gateway.generation.generator import Generated

CASE = Case(
    "c1",
    "read /work/a.txt",
    "fs__read_file",
    {"path": ["/work/a.txt"], "encoding": ["", "utf-8"]},
    ("desktop__read_file",),
)


def generated(arguments: dict, *, missing: tuple[str, ...] = ()) -> Generated:
    return Generated("t", arguments, "{}", "signature", "schema", None, missing=missing)


def test_an_alternative_tool_is_right_and_only_the_gold_parameters_it_has_are_compared():
    outcome = Outcome(CASE, "desktop__read_file", generated({"path": "/work/a.txt"}), None, frozenset({"path"}))
    assert outcome.tool_ok and outcome.args_ok and outcome.wrong() == []
    wrong_path = Outcome(CASE, "desktop__read_file", generated({"path": "a.txt"}), None, frozenset({"path"}))
    assert wrong_path.tool_ok and not wrong_path.args_ok and wrong_path.wrong() == ["path"]


def test_another_tool_is_wrong():
    assert not Outcome(CASE, "fs__write_file", generated({"path": "/work/a.txt"})).tool_ok


def test_a_parameter_reported_missing_counts_as_left_out():
    case = Case("c2", "how is Siemens stock doing?", "quote", {"symbol": [""]})
    assert Outcome(case, "quote", generated({"symbol": "SIE.DE"}, missing=("symbol",))).args_ok
    assert not Outcome(case, "quote", generated({"symbol": "SIE.DE"})).args_ok
