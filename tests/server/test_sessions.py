"""Streamable-HTTP sessions under a flood: bounded, oldest idle evicted first, nobody locked out (issue 10.3).

Each test runs a real gateway process with a small `max_sessions` and the echo server behind it, floods
it with raw `initialize` POSTs that never DELETE their session, then checks what a newcomer gets.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nexus_gateway.bench.load import ECHO, INITIALIZE, POST_HEADERS
from tests.conftest import start_gateway_http, text_of, write_config

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "flood", "version": "0"},
}


@contextmanager
def gateway(tmp_path: Path, **nexus: Any) -> Iterator[tuple[str, psutil.Process]]:
    servers = {"echo": {"command": sys.executable, "args": [str(ECHO)]}}
    config = write_config(tmp_path, servers, mode="passthrough", run=False, embedder="hashing", **nexus)
    proc, url = start_gateway_http(config)
    try:
        yield url, psutil.Process(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def rss_mib(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


async def open_sessions(url: str, count: int, *, token: str | None = None, workers: int = 8) -> list[str | int]:
    """`count` initialize POSTs, never DELETEd: each a session id, or the HTTP status when none was given."""
    headers = POST_HEADERS | ({"Authorization": f"Bearer {token}"} if token else {})
    results: list[str | int] = []

    async def worker(http: httpx.AsyncClient, share: int) -> None:
        for _ in range(share):
            response = await http.post(f"{url}/mcp", json=INITIALIZE, headers=headers)
            results.append(response.headers.get("mcp-session-id") or response.status_code)

    async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
        for index in range(workers):
            group.start_soon(worker, http, count // workers + (index < count % workers))
    return results


async def ping(url: str, session: str, *, token: str | None = None) -> int:
    """The HTTP status of a ping in `session` (200 while it lives, 404 once it is gone)."""
    return (await live(url, [session], token=token) and 200) or 404


async def live(url: str, sessions: list[str], *, token: str | None = None) -> list[str]:
    """The sessions that still answer a ping (probed 8 at a time), in the order given."""
    headers = (
        POST_HEADERS | {"mcp-protocol-version": "2025-06-18"} | ({"Authorization": f"Bearer {token}"} if token else {})
    )
    statuses: dict[str, int] = {}
    limit = anyio.Semaphore(8)

    async def probe(http: httpx.AsyncClient, session: str) -> None:
        async with limit:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            response = await http.post(f"{url}/mcp", json=body, headers=headers | {"mcp-session-id": session})
            statuses[session] = response.status_code

    async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
        for session in sessions:
            group.start_soon(probe, http, session)
    assert set(statuses.values()) <= {200, 404}, statuses
    return [session for session in sessions if statuses[session] == 200]


async def open_gauge(url: str, headers: dict[str, str] | None = None) -> int:
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{url}/metrics", headers=headers)).text
    return int(next(line.split()[1] for line in metrics.splitlines() if line.startswith("nexus_http_sessions ")))


async def lists_and_calls(url: str, mode: str, token: str | None = None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    text = f"after the flood ({mode})"
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode, cache=None) as client,  # type: ignore[arg-type]
    ):
        assert "echo__echo" in {tool.name for tool in (await client.list_tools()).tools}
        assert text_of(await client.call_tool("echo__echo", {"text": text})) == text


async def test_an_initialize_flood_evicts_the_oldest_idle_sessions_and_locks_nobody_out(tmp_path: Path):
    with gateway(tmp_path, max_sessions=16) as (url, process), anyio.fail_after(120):
        await lists_and_calls(url, "legacy")  # warm: imports, the upstream, the first session
        before = rss_mib(process)
        flood = await open_sessions(url, 300)
        after = rss_mib(process)

        assert all(isinstance(result, str) for result in flood), "a newcomer was refused while idle sessions existed"
        sessions = [result for result in flood if isinstance(result, str)]
        survivors = await live(url, sessions)
        assert 1 <= len(survivors) <= 16 and sessions[0] not in survivors
        assert set(survivors) <= set(sessions[-40:]), "the newest sessions survive, the oldest idle ones went"
        assert after - before < 40, f"RSS grew {after - before:.0f} MiB for a 16-session pool"
        await lists_and_calls(url, "legacy")
        await lists_and_calls(url, "auto")  # the modern era: stateless, never in the pool
        assert await open_gauge(url) <= 16


async def test_the_stateless_era_holds_no_session_and_no_memory_per_request(tmp_path: Path):
    """2026-07-28 over /mcp: each POST is served and forgotten, however many arrive."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    headers = POST_HEADERS | {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"}
    with gateway(tmp_path, max_sessions=16) as (url, process), anyio.fail_after(120):
        await lists_and_calls(url, "legacy")
        before = rss_mib(process)
        answered: list[bool] = []

        async def worker(http: httpx.AsyncClient) -> None:
            for _ in range(50):
                response = await http.post(f"{url}/mcp", json=body, headers=headers)
                answered.append(response.status_code == 200 and "result" in response.json())

        async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(worker, http)
        assert answered == [True] * 400
        assert rss_mib(process) - before < 40
        assert await open_gauge(url) == 0
        await lists_and_calls(url, "legacy")


async def test_a_token_flood_evicts_only_its_own_sessions_and_unauthenticated_requests_open_none(tmp_path: Path):
    tokens = {"auth_tokens": ["alice-token", "mallory-token"], "max_sessions": 8, "max_sessions_per_token": 4}
    with gateway(tmp_path, **tokens) as (url, _), anyio.fail_after(120):
        alice = [result for result in await open_sessions(url, 3, token="alice-token", workers=1)]
        assert all(isinstance(session, str) for session in alice)
        assert set(await open_sessions(url, 50)) == {401}  # no token: refused before any session exists
        mallory = await open_sessions(url, 100, token="mallory-token")  # 8 at once: over its cap of 4 in flight
        assert set(mallory) - {503} and all(isinstance(s, str) or s == 503 for s in mallory)

        assert await live(url, alice, token="alice-token") == alice  # (pinging keeps them fresh, not safe)
        assert len(await live(url, [s for s in mallory if isinstance(s, str)], token="mallory-token")) <= 4
        assert await ping(url, str(alice[0]), token="mallory-token") == 404  # a session is its token's own
        await lists_and_calls(url, "legacy", token="alice-token")
        await lists_and_calls(url, "auto", token="alice-token")
        assert await open_gauge(url, {"Authorization": "Bearer alice-token"}) <= 8


async def test_a_newcomer_is_refused_only_while_every_session_is_busy(tmp_path: Path):
    """Sessions with an open GET stream are busy: they are never evicted; closing one frees its place."""
    with gateway(tmp_path, max_sessions=2) as (url, _), anyio.fail_after(60):
        sessions = [s for s in await open_sessions(url, 2, workers=1) if isinstance(s, str)]
        async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
            opened = [anyio.Event(), anyio.Event()]
            release = anyio.Event()

            async def hold(session: str, ready: anyio.Event) -> None:
                headers = {
                    "Accept": "text/event-stream",
                    "mcp-session-id": session,
                    "mcp-protocol-version": "2025-06-18",
                }
                async with http.stream("GET", f"{url}/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    ready.set()
                    await release.wait()

            for session, ready in zip(sessions, opened, strict=True):
                group.start_soon(hold, session, ready)
            for ready in opened:
                await ready.wait()
            assert await open_sessions(url, 1, workers=1) == [503]
            release.set()
        while (newcomer := await open_sessions(url, 1, workers=1)) == [503]:
            await anyio.sleep(0.05)  # the server sees the streams close a moment after the client does
        assert isinstance(newcomer[0], str)
