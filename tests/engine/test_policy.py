"""The depth policy and its calibration (no model needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_gateway.engine.policy import Cell, SplicePolicy, calibrate, load_policy, save_policy


def test_default_policy_splices_only_a_fresh_session():
    policy = SplicePolicy()
    assert policy.decide(0, 100).mode == "splice"
    assert policy.decide(1, 100).mode == "prefill"


def test_policy_recomputes_a_growing_suffix_between_p_and_d_and_prefills_beyond():
    policy = SplicePolicy(P=100, D=300)
    assert policy.decide(100, 80) == policy.decide(0, 80) and policy.decide(100, 80).recompute == 0
    middle = policy.decide(200, 80)
    assert middle.mode == "recompute" and middle.recompute == 40
    assert policy.decide(250, 80).recompute == 60 and policy.decide(299, 80).mode == "prefill"
    assert policy.decide(300, 80).mode == "prefill" and policy.decide(300, 80).recompute == 80


def test_a_recompute_of_every_token_is_a_prefill_never_a_splice():
    policy = SplicePolicy(P=0, D=1000, curve=((500, 1.0),))
    decision = policy.decide(10, 50)
    assert decision.mode == "prefill" and decision.recompute == 50


def test_step_curve_gives_a_depth_the_fraction_of_the_next_calibrated_depth():
    policy = SplicePolicy(P=64, D=513, curve=((128, 0.25), (256, 0.25), (512, 0.5)))
    assert [policy.fraction(d) for d in (64, 65, 128, 129, 300, 512, 513)] == [0, 0.25, 0.25, 0.25, 0.5, 0.5, 1]


def cells(depth: int, passing: dict[float, bool]) -> list[Cell]:
    return [Cell(depth, r, 0.001 if ok else 0.5, 1.0 if ok else 0.8, 1.0 if ok else 0.0) for r, ok in passing.items()]


def test_calibration_splices_up_to_the_last_passing_depth_and_never_trusts_beyond_the_last_measured_pass():
    measured = (
        cells(0, {0: True, 0.25: True, 0.5: True, 1: True})
        + cells(64, {0: True, 0.25: True, 0.5: True, 1: True})
        + cells(128, {0: False, 0.25: True, 0.5: True, 1: True})
        + cells(256, {0: False, 0.25: False, 0.5: True, 1: True})
        + cells(512, {0: False, 0.25: False, 0.5: False, 1: False})
    )
    policy = calibrate(measured, kl_target=0.01, source="test").policy
    assert (policy.P, policy.D) == (64, 257)
    assert policy.curve == ((128, 0.25), (256, 0.5))
    assert policy.decide(512, 100).mode == "prefill"


def test_calibration_requires_every_larger_fraction_to_pass_too():
    measured = cells(0, {0: True}) + cells(64, {0: False, 0.25: True, 0.5: False})
    assert calibrate(measured, kl_target=0.01, source="test").policy.D == 1


def test_calibration_that_finds_no_safe_splice_prefills_everywhere():
    policy = calibrate(cells(0, {0: False, 0.5: False}), kl_target=0.01, source="test").policy
    assert policy.decide(0, 10).mode == "prefill"


def test_policy_round_trips_through_its_file_and_a_broken_file_falls_back_to_the_default(tmp_path: Path):
    policy = SplicePolicy(P=64, D=257, curve=((128, 0.25),), kl_target=0.01, source="calibrated")
    save_policy(tmp_path, policy)
    assert load_policy(tmp_path) == policy
    (tmp_path / "splice_policy.json").write_text("{not json")
    assert load_policy(tmp_path) == SplicePolicy()


def test_policy_rejects_thresholds_in_the_wrong_order():
    with pytest.raises(ValueError):
        SplicePolicy(P=10, D=10)


def test_without_a_calibration_file_the_models_shipped_policy_applies_and_a_file_beside_the_blocks_wins(
    tmp_path: Path,
):
    shipped = SplicePolicy(P=0, D=1, kl_target=0.01, source="shipped")
    assert load_policy(tmp_path, shipped) == shipped
    (tmp_path / "splice_policy.json").write_text("{not json")
    assert load_policy(tmp_path, shipped) == shipped
    local = SplicePolicy(P=64, D=129, kl_target=0.01, source="calibrated here")
    save_policy(tmp_path, local)
    assert load_policy(tmp_path, shipped) == local
