"""The cluster bench's arithmetic and probes (the bench itself runs for minutes: `nexus-gateway bench cluster`;
tests/cluster/ runs the same processes)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nexus_gateway.bench.cluster import _paired, _per_call, _redis_commands, _store_round_trips, _with_background
from nexus_gateway.bench.cluster.processes import MissingBinary, binary, start_redis, stop


def counts(**given: object) -> dict[str, object]:
    base: dict[str, object] = {
        "replica_calls": 1000,
        "store_round_trips": None,
        "store_round_trips_idle_same_time": None,
        "redis_commands": None,
        "redis_commands_idle_same_time": None,
    }
    return base | given


def test_round_trips_per_call_are_the_measured_window_less_the_background_of_an_idle_one():
    assert _per_call(counts(store_round_trips=410, store_round_trips_idle_same_time=400)) == 0.01
    assert _per_call(counts(store_round_trips=390, store_round_trips_idle_same_time=400)) == 0.0  # never below 0
    assert _with_background(counts(store_round_trips=390)) == 0.39
    # no store counter: Redis's commands instead
    assert _per_call(counts(redis_commands=3000, redis_commands_idle_same_time=1000)) == 2.0
    assert _per_call(counts()) is None and _with_background(counts()) is None


def test_the_paired_difference_follows_calls_made_side_by_side():
    # the load drifts (every path slower in the later rounds); the path costs 1 ms more in each round
    baseline = [0.010, 0.020, 0.030, 0.040, 0.050]
    path = [value + 0.001 for value in baseline]
    assert _paired(path, baseline) == 1.0


def test_a_missing_program_names_the_package_to_install():
    with pytest.raises(MissingBinary, match="apt-get install -y some-package"):
        binary("no-such-program-for-nexus", "some-package")


@pytest.fixture
def metrics_server() -> Iterator[str]:
    text = (
        "# TYPE nexus_store_round_trips_total counter\n"
        'nexus_store_round_trips_total{use="activity"} 7\n'
        'nexus_store_round_trips_total{use="pins"} 2\n'
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(text.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_store_counter_is_summed_by_use_over_the_replicas(metrics_server: str):
    assert _store_round_trips([metrics_server, metrics_server]) == {"activity": 14, "pins": 4}


def test_redis_commands_are_read_from_a_real_redis(tmp_path: Path):
    try:
        process, url = start_redis(tmp_path)
    except MissingBinary as exc:
        pytest.fail(str(exc))
    try:
        first = _redis_commands(url)
        second = _redis_commands(url)
        assert first is not None and second is not None and second - first == 1  # the INFO itself
    finally:
        stop(process)
    assert _redis_commands(None) is None
