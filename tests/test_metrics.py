"""The `/metrics` counters on their own: what a call observes and the Prometheus text they render."""

from __future__ import annotations

from nexus_gateway.metrics import Metrics


def samples(text: str) -> dict[str, float]:
    """Each sample line of a Prometheus text exposition, name{labels} -> value."""
    return {
        line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_calls_are_counted_per_server_and_outcome():
    metrics = Metrics()
    metrics.observe_call("git", "ok", 0.002)
    metrics.observe_call("git", "ok", 0.2)
    metrics.observe_call("git", "timeout", 30.0)
    metrics.observe_call("time", "tool_error", 0.01)
    got = samples(metrics.render({"git": True, "time": False}, tools=7))
    assert got['nexus_tool_calls_total{server="git",outcome="ok"}'] == 2
    assert got['nexus_tool_calls_total{server="git",outcome="timeout"}'] == 1
    assert got['nexus_tool_calls_total{server="time",outcome="tool_error"}'] == 1
    assert got["nexus_tools"] == 7
    assert got['nexus_upstream_up{server="git"}'] == 1 and got['nexus_upstream_up{server="time"}'] == 0


def test_latency_buckets_are_cumulative_with_sum_and_count():
    metrics = Metrics()
    for elapsed in (0.002, 0.2, 3.0):
        metrics.observe_call("git", "ok", elapsed)
    got = samples(metrics.render({}, tools=0))
    bucket = 'nexus_tool_call_seconds_bucket{{server="git",le="{}"}}'.format
    assert got[bucket(0.001)] == 0 and got[bucket(0.0025)] == 1 and got[bucket(0.25)] == 2
    assert got[bucket(2.5)] == 2 and got[bucket(5.0)] == 3 and got[bucket("+Inf")] == 3
    assert got['nexus_tool_call_seconds_count{server="git"}'] == 3
    assert abs(got['nexus_tool_call_seconds_sum{server="git"}'] - 3.202) < 1e-6


def test_a_call_slower_than_every_bucket_counts_only_in_inf():
    metrics = Metrics()
    metrics.observe_call("slow", "timeout", 60.0)
    got = samples(metrics.render({}, tools=0))
    assert got['nexus_tool_call_seconds_bucket{server="slow",le="30.0"}'] == 0
    assert got['nexus_tool_call_seconds_bucket{server="slow",le="+Inf"}'] == 1


def test_searches_are_counted_and_every_metric_is_declared_once():
    metrics = Metrics()
    metrics.searches += 3
    text = metrics.render({"a": True}, tools=1)
    assert samples(text)["nexus_searches_total"] == 3
    declared = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(declared) == len(set(declared)) == 5
    assert text.endswith("\n")


def test_nothing_observed_renders_no_call_samples():
    got = samples(Metrics().render({}, tools=0))
    assert got == {"nexus_tools": 0, "nexus_searches_total": 0}


def test_a_call_exactly_on_a_bucket_bound_counts_in_that_bucket():
    metrics = Metrics()
    metrics.observe_call("git", "ok", 0.1)
    got = samples(metrics.render({}, tools=0))
    assert got['nexus_tool_call_seconds_bucket{server="git",le="0.05"}'] == 0
    assert got['nexus_tool_call_seconds_bucket{server="git",le="0.1"}'] == 1
