"""Fuzz the fronts: random and malformed JSON-RPC, and meta-tool calls with wrong arguments.

One long-lived gateway process per front (stdio: raw lines on its stdin; streamable HTTP: raw POSTs to
/mcp in both eras). Whatever arrives, every request that carries an id gets exactly one response with
that id (an envelope too broken to trust may be answered with one `id: null` error instead), the
process stays up, and stdout carries nothing but JSON-RPC lines. `NEXUS_FUZZ_EXAMPLES` sets how many
examples each front gets (100 by default, to keep CI short).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from nexus_gateway.bench.load import ECHO
from tests.conftest import start_gateway_http, write_config

EXAMPLES = int(os.environ.get("NEXUS_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 100,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
WAIT = 15.0
"""Seconds the gateway may take to answer a ping (the machine may be busy)."""
GRACE = 5.0
"""Seconds a reply may come after the ping's (the upstream call timeout is 3 s)."""
MODERN = "2026-07-28"
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}
_ids = itertools.count(1)

# ---- what is sent -----------------------------------------------------------------------------------------

_huge = st.sampled_from(["x" * 70_000, "\u00e9" * 30_000, "\U0001f600" * 20_000])
_text = st.one_of(st.text(max_size=40), _huge)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _text)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12,
)
_methods = st.one_of(
    st.sampled_from(
        [
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "prompts/list",
            "prompts/get",
            "initialize",
            "logging/setLevel",
            "completion/complete",
            "notifications/initialized",
            "notifications/cancelled",
            "server/discover",
        ]
    ),
    _text,
    _scalar,
)
_meta_tools = st.sampled_from(["search_tools", "call_tool", "describe_tool", "run", "echo__echo", "no__such"])
_meta_arguments = st.one_of(
    _json,
    st.fixed_dictionaries(
        {},
        optional={
            "query": _json,
            "k": _json,
            "name": st.one_of(st.sampled_from(["echo__echo", "run", ""]), _json),
            "arguments": st.one_of(st.fixed_dictionaries({}, optional={"text": _json, "repeat": _json}), _json),
            "request": _json,
        },
    ),
)
_bad_ids = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2))


@st.composite
def _id(draw: st.DrawFn) -> Any:
    """A fresh valid id (unique, so its reply can be matched), or a malformed one."""
    kind = draw(st.sampled_from(["int", "negative", "str", "bad", "absent"]))
    n = next(_ids)
    if kind == "int":
        return n
    if kind == "negative":
        return -n
    if kind == "str":
        return f"{draw(st.text(max_size=20))}#{n}"
    return draw(_bad_ids) if kind == "bad" else _ABSENT


_ABSENT = object()


@st.composite
def envelope(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {}
    jsonrpc = draw(st.one_of(st.just("2.0"), st.just("2.0"), _scalar))
    if draw(st.integers(0, 9)) > 0:
        message["jsonrpc"] = jsonrpc
    if (request_id := draw(_id())) is not _ABSENT:
        message["id"] = request_id
    if draw(st.booleans()):  # a meta-tool call, arguments of any shape
        message["method"] = "tools/call"
        params: Any = {"name": draw(_meta_tools), "arguments": draw(_meta_arguments)}
        if draw(st.integers(0, 9)) == 0:
            params = draw(_json)
    else:
        if draw(st.integers(0, 9)) > 0:
            message["method"] = draw(_methods)
        params = draw(_json)
    if draw(st.integers(0, 4)) > 0:
        message["params"] = params
    if draw(st.integers(0, 14)) == 0:
        message[draw(st.sampled_from(["result", "error"]))] = draw(_json)
    return message


_not_objects = _json.filter(lambda value: not isinstance(value, dict))
messages = st.one_of(envelope(), envelope(), envelope(), st.lists(envelope(), max_size=4), _not_objects)
"""One line: mostly single envelopes, sometimes a batch, sometimes JSON that is no envelope at all."""
raw_lines = st.one_of(messages.map(json.dumps), st.text(max_size=60).filter(lambda t: "\n" not in t and "\r" not in t))


def owed(sent: Any) -> tuple[set[Any], bool]:
    """(ids that must be answered exactly once, whether an `id: null` error may come instead/besides)."""
    if not isinstance(sent, dict):
        return set(), True  # a batch (MCP has none since 2025-06-18), other JSON, or no JSON at all
    if not _valid_id(sent.get("id")) or "result" in sent or "error" in sent or "method" not in sent:
        return set(), True
    well_formed = sent.get("jsonrpc") == "2.0" and isinstance(sent["method"], str)
    return {sent["id"]}, not well_formed


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def may_answer(sent: Any) -> set[Any]:
    """Every id a reply to `sent` may carry (a batch's members may be answered, at most once each)."""
    items = sent if isinstance(sent, list) else [sent]
    return {m["id"] for m in items if isinstance(m, dict) and _valid_id(m.get("id"))}


def is_jsonrpc(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        return isinstance(message["method"], str)
    return "id" in message and (("result" in message) != ("error" in message))


@dataclass
class Ledger:
    """Replies seen so far, across examples: no id may ever be answered twice."""

    answered: Counter[Any] = field(default_factory=Counter)

    def check(self, sent: Any, replies: list[dict[str, Any]]) -> None:
        must, null_ok = owed(sent)
        allowed = may_answer(sent)
        ids = [reply["id"] for reply in replies if "method" not in reply]
        nulls = [reply for reply in replies if "method" not in reply and reply["id"] is None]
        for reply_id in ids:
            if reply_id is not None:
                assert reply_id in allowed, f"a reply for an id never sent: {reply_id!r} (sent {sent!r:.300})"
                self.answered[_key(reply_id)] += 1
                assert self.answered[_key(reply_id)] == 1, f"id {reply_id!r} answered twice"
        for request_id in must:
            got = ids.count(request_id)
            assert got == 1 or (got == 0 and null_ok and nulls), f"id {request_id!r}: {got} replies to {sent!r:.300}"
        assert all("error" in reply for reply in nulls), "an id-null reply that is no error"
        assert len(nulls) <= (1 if null_ok else 0), f"{len(nulls)} id-null replies to {sent!r:.300}"


def _key(request_id: Any) -> tuple[type, Any]:
    return (type(request_id), request_id)  # 1 and "1" are different ids


def _config(tmp: Path) -> Path:
    servers = {"echo": {"command": sys.executable, "args": [str(ECHO)]}}
    return write_config(tmp, servers, mode="routed", run=False, embedder="hashing", call_timeout=3)


# ---- stdio ------------------------------------------------------------------------------------------------


class StdioGateway:
    """`python -m nexus_gateway serve` on pipes; a thread reads stdout lines into a queue."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.garbage: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def replies_until(self, sentinel: str, owed_ids: set[Any]) -> list[dict[str, Any]]:
        """Every message read until the sentinel ping and all `owed_ids` are answered (or WAIT runs out)."""
        replies: list[dict[str, Any]] = []
        pending = {_key(i) for i in owed_ids} | {_key(sentinel)}
        while pending:
            try:
                line = self.lines.get(timeout=WAIT if _key(sentinel) in pending else GRACE)
            except queue.Empty:
                break
            try:
                message = json.loads(line)
            except ValueError:
                self.garbage.append(line)
                continue
            if not is_jsonrpc(message):
                self.garbage.append(line)
                continue
            if message.get("id") == sentinel and "method" not in message:
                pending.discard(_key(sentinel))
                continue
            replies.append(message)
            if "method" not in message and message.get("id") is not None:
                pending.discard(_key(message["id"]))
        assert _key(sentinel) not in pending, "the gateway stopped answering (no reply to a ping)"
        return replies


@pytest.fixture(scope="module")
def stdio_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioGateway]:
    gateway = StdioGateway(_config(tmp_path_factory.mktemp("fuzz-stdio")))
    gateway.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INITIALIZE}))
    gateway.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert gateway.replies_until("init", set()) == []
    yield gateway
    gateway.proc.send_signal(signal.SIGTERM)
    gateway.proc.wait(timeout=15)


_stdio_ledger = Ledger()


@FUZZ
@given(line=raw_lines)
def test_every_stdio_request_with_an_id_gets_exactly_one_reply(stdio_gateway: StdioGateway, line: str):
    try:
        sent: Any = json.loads(line)
    except ValueError:
        sent = None  # not JSON at all: owed nothing, an id-null parse error at most
    sentinel = f"sentinel-{next(_ids)}"
    stdio_gateway.send(line)
    stdio_gateway.send(json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "ping"}))
    replies = stdio_gateway.replies_until(sentinel, owed(sent)[0])
    _stdio_ledger.check(sent, replies)
    assert stdio_gateway.proc.poll() is None, "the gateway exited"
    assert stdio_gateway.garbage == [], f"stdout carried non-JSON-RPC lines: {stdio_gateway.garbage[:3]!r}"


# ---- streamable HTTP --------------------------------------------------------------------------------------


@dataclass
class HttpGateway:
    url: str
    http: httpx.Client
    session: str


@pytest.fixture(scope="module")
def http_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    proc, url = start_gateway_http(_config(tmp_path_factory.mktemp("fuzz-http")))
    with httpx.Client(timeout=WAIT, headers={"Accept": "application/json, text/event-stream"}) as http:
        opened = http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
        session = opened.headers["mcp-session-id"]
        http.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"},
        )
        yield HttpGateway(url, http, session)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


def http_replies(response: httpx.Response) -> list[Any]:
    """The JSON-RPC messages in a response body (plain JSON or an SSE stream); empty for a bare 4xx."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:]]
    if kind.startswith("application/json") and response.content:
        body = response.json()
        return body if isinstance(body, list) else [body]
    return []


_http_ledger = Ledger()


@FUZZ
@given(line=raw_lines, era=st.sampled_from(["legacy", "modern"]))
def test_every_http_request_with_an_id_gets_exactly_one_reply(http_gateway: HttpGateway, line: str, era: str):
    try:
        sent: Any = json.loads(line)
    except ValueError:
        sent = None
    headers = {"content-type": "application/json"}
    if era == "legacy":
        headers |= {"mcp-session-id": http_gateway.session, "mcp-protocol-version": "2025-06-18"}
    else:
        headers["mcp-protocol-version"] = MODERN
    response = http_gateway.http.post(
        f"{http_gateway.url}/mcp", content=line.encode("utf-8", "replace"), headers=headers
    )
    assert response.status_code < 500, f"{response.status_code} for {line!r:.300}: {response.text[:300]}"
    replies = http_replies(response)
    assert all(is_jsonrpc(reply) for reply in replies), f"not JSON-RPC: {response.text[:300]}"
    must, _ = owed(sent)
    if must and not replies:
        assert 400 <= response.status_code < 500, f"no reply and status {response.status_code} to {line!r:.300}"
        replies = [{"jsonrpc": "2.0", "id": None, "error": {"code": 0, "message": response.text[:100]}}]
    _http_ledger.check(sent, replies)
    assert http_gateway.http.get(f"{http_gateway.url}/healthz").status_code == 200
