"""The last calls and `run` traces of every replica, in two capped Redis lists the dashboard reads.

    <prefix>calls   list, newest first, at most `KEEP`: [at, tool, server, outcome, seconds, error, replica]
    <prefix>runs    list, newest first, at most `KEEP`: {"at", "request", "status", "seconds", "trace", "replica"}

Recording stays what it is in one process (an append to a ring buffer, activity.py): nothing is sent on a
call's path. The store's background task sends what was recorded since its last tick and reads both lists
back, in one pipeline (`flush`); the dashboard reads that copy, plus what this replica recorded since. When
Redis is unreachable the dashboard shows this replica's own entries.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Sequence
from typing import Any

from nexus_gateway.activity import KEEP, Activity, CallEntry, RunEntry

logger = logging.getLogger(__name__)


class SharedActivity(Activity):
    """`Activity` whose reads show every replica's entries (from the last `flush`)."""

    def __init__(self, prefix: str, keep: int = KEEP) -> None:
        super().__init__(keep)
        self.keep = keep
        self.calls_key, self.runs_key = f"{prefix}calls", f"{prefix}runs"
        self.replica = f"{socket.gethostname()}:{id(self) & 0xFFFF:04x}"
        self._sent_calls = 0
        self._sent_runs = 0
        self._recorded_calls = 0
        self._recorded_runs = 0
        self._shared_calls: list[CallEntry] | None = None
        self._shared_runs: list[RunEntry] | None = None

    def record_call(
        self, tool: str, server: str, outcome: str, seconds: float, error: BaseException | None = None
    ) -> None:
        super().record_call(tool, server, outcome, seconds, error)
        self._recorded_calls += 1

    def record_run(self, request: str, result: Any, seconds: float) -> None:
        super().record_run(request, result, seconds)
        self._recorded_runs += 1

    def _unsent(self) -> tuple[list[tuple[Any, ...]], list[RunEntry]]:
        calls = list(self._calls)[len(self._calls) - min(self._recorded_calls - self._sent_calls, len(self._calls)) :]
        runs = list(self._runs)[len(self._runs) - min(self._recorded_runs - self._sent_runs, len(self._runs)) :]
        return calls, runs

    def pending(self) -> tuple[list[str], list[str], int, int]:
        """What to send (oldest first, as JSON) and the record counts it covers (`sent` takes them back)."""
        calls, runs = self._unsent()
        call_lines = [json.dumps([*entry, self.replica]) for entry in calls]
        run_lines = [
            json.dumps(
                {
                    "at": run.at,
                    "request": run.request,
                    "status": run.status,
                    "seconds": run.seconds,
                    "trace": run.trace,
                    "replica": self.replica,
                },
                default=str,
            )
            for run in runs
        ]
        return call_lines, run_lines, self._recorded_calls, self._recorded_runs

    def sent(self, calls_upto: int, runs_upto: int, calls: Sequence[Any], runs: Sequence[Any]) -> None:
        """The entries up to these counts are in Redis; `calls` and `runs` are the lists read back."""
        self._sent_calls, self._sent_runs = calls_upto, runs_upto
        self._shared_calls = [entry for raw in calls if (entry := _call(raw)) is not None]
        self._shared_runs = [run for raw in runs if (run := _run(raw)) is not None]

    def unreachable(self) -> None:
        """Redis is down: show this replica's own entries until it answers again."""
        self._shared_calls = self._shared_runs = None

    def calls(self) -> list[CallEntry]:
        if self._shared_calls is None:
            return super().calls()
        calls, _ = self._unsent()
        fresh = [CallEntry(at, t, s, o, round(sec * 1000, 2), m) for at, t, s, o, sec, m in reversed(calls)]
        return (fresh + self._shared_calls)[: self.keep]

    def runs(self) -> list[RunEntry]:
        if self._shared_runs is None:
            return super().runs()
        _, runs = self._unsent()
        return (list(reversed(runs)) + self._shared_runs)[: self.keep]


def _call(raw: Any) -> CallEntry | None:
    try:
        at, tool, server, outcome, seconds, error = json.loads(raw)[:6]
        return CallEntry(float(at), str(tool), str(server), str(outcome), round(float(seconds) * 1000, 2), error)
    except (ValueError, TypeError):
        logger.warning("state store: an entry of the shared call list is not one; skipped")
        return None


def _run(raw: Any) -> RunEntry | None:
    try:
        data = json.loads(raw)
        trace = data.get("trace")
        return RunEntry(
            float(data["at"]),
            str(data["request"]),
            str(data["status"]),
            float(data["seconds"]),
            trace if isinstance(trace, dict) else {},
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        logger.warning("state store: an entry of the shared run list is not one; skipped")
        return None
