import json
import math
from pathlib import Path

import pytest

from nexus_gateway.errors import ConfigError
from nexus_gateway.routing.gate import Calibration, calibrate_tau, decide, gate_stats, margin


def test_tau_is_the_smallest_margin_meeting_the_target_precision():
    margins = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    correct = [True, True, True, True, False, True, False, False]
    tau, precision, coverage = calibrate_tau(margins, correct, 0.8)
    assert tau == 0.4 and precision == pytest.approx(5 / 6) and coverage == pytest.approx(6 / 8)
    assert gate_stats(margins, correct, tau) == (pytest.approx(0.75), pytest.approx(5 / 6))


def test_unreachable_precision_means_never_automatic():
    tau, _, coverage = calibrate_tau([0.5, 0.4], [False, True], 0.99)
    assert math.isinf(tau) and coverage == 0.0


def test_tied_margins_are_decided_together():
    tau, _, _ = calibrate_tau([0.5, 0.5, 0.1], [True, False, False], 0.6)
    assert math.isinf(tau)


def test_calibration_round_trips_and_rejects_garbage(tmp_path: Path):
    calibration = Calibration(0.38, 0.98, 0.983, 0.17, 1000, "all-MiniLM-L6-v2-int8", 199, "linear")
    calibration.save(tmp_path / "c.json")
    assert Calibration.load(tmp_path / "c.json") == calibration
    sound = json.loads((tmp_path / "c.json").read_text())
    changes = [{"tau": "0.38"}, {"tau": -1}, {"tau": None}, {"precision": 3}, {"fusion": "magic"}, {"x": 1}]
    for text in ["{not json", "[0.38]", *(json.dumps(sound | change) for change in changes)]:
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(ConfigError, match="not a routing calibration"):
            Calibration.load(tmp_path / "bad.json")
    infinite = Calibration(math.inf, 0.99, 0.0, 0.0, 10, "hashing", 50)  # no margin reached the target
    infinite.save(tmp_path / "inf.json")
    assert Calibration.load(tmp_path / "inf.json") == infinite


def test_the_shipped_calibration_matches_the_default_embedder():
    from nexus_gateway.routing.embedders import make_embedder
    from nexus_gateway.routing.hybrid import DEFAULT_CALIBRATION

    calibration = Calibration.load(DEFAULT_CALIBRATION)
    assert calibration.embedder == make_embedder("default").name
    assert calibration.precision >= calibration.target_precision and 0 < calibration.tau < 1


def test_the_gate_decides_alone_only_when_the_best_clears_the_second_by_tau():
    assert decide([0.9, 0.5], 0.4) and not decide([0.9, 0.6], 0.4)
    assert decide([0.3], math.inf)  # a single candidate is the choice, whatever tau says
    assert not decide([], 0.0)
    assert margin([0.9, 0.5]) == pytest.approx(0.4) and math.isinf(margin([0.9]))
