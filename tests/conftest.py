"""Shared helpers: real upstream processes, config files, and a gateway driven in memory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings as hypothesis_settings
from mcp import Client, StdioServerParameters

from nexus_gateway.config import GatewayConfig, load_config
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server

if TYPE_CHECKING:
    from nexus_gateway.engine.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
FAULTY = str(ROOT / "tests" / "servers" / "faulty_server.py")
LIBRARY = str(ROOT / "tests" / "servers" / "library_server.py")
EXAMPLES = ROOT / "examples"

# Property tests check what holds, not how fast: on a shared 2-core machine an example can take more than
# Hypothesis's default 200 ms deadline without anything being wrong.
hypothesis_settings.register_profile("shared-machine", deadline=None)
hypothesis_settings.load_profile("shared-machine")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_usage_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test's gateway loads the local model to write usage examples (tests/test_indexing.py gives a fake
    writer to the ones that test them)."""
    monkeypatch.setenv("NEXUS_USAGE_EXAMPLES", "false")


@pytest.fixture(scope="session")
def gen_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """One real engine with two sessions, shared by tests/engine/test_decoding.py and tests/generation/ (the model
    is loaded only by a test that asks for it)."""
    from nexus_gateway.engine.runtime import Runtime
    from tests.engine.conftest import settings

    engine = Runtime.load(settings(sessions=2), compiled_root=tmp_path_factory.mktemp("compiled_schemas"))
    yield engine
    engine.close()


def stdio_entry(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [script, *args], **extra}


def faulty(*args: str, **extra: Any) -> dict[str, Any]:
    return stdio_entry(FAULTY, *args, **extra)


def library(*args: str, **extra: Any) -> dict[str, Any]:
    """An upstream with tools, resources, templates and prompts (tests/servers/library_server.py)."""
    return stdio_entry(LIBRARY, *args, **extra)


def gateway_params(config: Path, *extra: str) -> StdioServerParameters:
    """How a host launches the gateway over stdio: `nexus-gateway serve --config CONFIG`."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "nexus_gateway", "serve", "--config", str(config), *extra]
    )


def write_config(tmp_path: Path, servers: dict[str, Any], **nexus: Any) -> Path:
    nexus.setdefault("state_dir", str(tmp_path / "state"))
    nexus.setdefault("restart_backoff_initial", 0.1)
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"mcpServers": servers, "nexus": nexus}))
    return path


def make_config(tmp_path: Path, servers: dict[str, Any], **nexus: Any) -> GatewayConfig:
    return load_config(write_config(tmp_path, servers, **nexus))


@asynccontextmanager
async def running_gateway(config: GatewayConfig, *, era: str = "legacy") -> AsyncIterator[tuple[Gateway, Client]]:
    """The gateway with its real upstreams, and an MCP client talking to its front in memory (`era`: the
    client's mode, `legacy` for the handshake era or `auto` for the modern one)."""
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        async with Client(build_server(gateway), mode=era, cache=None) as client:  # type: ignore[arg-type]
            yield gateway, client


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout}s")


def start_gateway_http(config: Path, *extra: str) -> tuple[Any, str]:
    """A real `nexus-gateway serve --transport http` process on a free port; returns (process, base URL)."""
    from nexus_gateway.bench._serve import start_http

    return start_http(config, *extra)


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`nexus-gateway ARGS...` as a user runs it (a new process), its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "nexus_gateway", *args], capture_output=True, text=True, timeout=timeout
    )


def write_labelled_set(folder: Path, tools: list[dict[str, Any]], cases: list[dict[str, Any]]) -> tuple[Path, Path]:
    """An evaluation set in `folder`: `tools.json` and `cases.jsonl` (DESIGN.md's format)."""
    tools_path, cases_path = folder / "tools.json", folder / "cases.jsonl"
    tools_path.write_text(json.dumps(tools))
    cases_path.write_text("\n".join(json.dumps(case) for case in cases))
    return tools_path, cases_path
