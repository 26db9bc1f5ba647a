"""The activity log: bounded, newest first, and what `run` answered read from either form of its result."""

import mcp_types as types

from nexus_gateway.activity import Activity
from nexus_gateway.errors import ArgumentsInvalid


def test_the_activity_log_keeps_only_the_newest_entries_newest_first():
    activity = Activity(keep=3)
    for n in range(5):
        activity.record_call(f"s__t{n}", "s", "ok", n / 1000)
    assert [call.tool for call in activity.calls()] == ["s__t4", "s__t3", "s__t2"]
    assert activity.calls()[0].latency_ms == 4.0 and activity.calls()[0].error is None


def test_a_failed_call_keeps_its_error_message():
    activity = Activity()
    activity.record_call("s__t", "s", "invalid_arguments", 0.01, ArgumentsInvalid("s__t", ["'text' is required"]))
    assert "'text' is required" in (activity.calls()[0].error or "")


def test_a_run_is_recorded_with_its_status_and_trace_from_a_model_or_wire_result():
    activity = Activity()
    trace = {"routing": "automatic", "margin": 0.2, "tool": "time__now", "ttft_ms": 12.5}
    model = types.CallToolResult(content=[], structured_content={"status": "proposed", "trace": trace})
    activity.record_run("now", model, 0.5)
    activity.record_run("later", {"content": [], "structuredContent": {"status": "called", "trace": trace}}, 0.25)
    activity.record_run("odd", {"content": []}, 0.1)
    assert [(run.request, run.status) for run in activity.runs()] == [
        ("odd", "unknown"),
        ("later", "called"),
        ("now", "proposed"),
    ]
    assert activity.runs()[1].trace == trace
