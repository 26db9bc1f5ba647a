"""The proxies `bench proxy` measures: nexus-gateway itself and its peers, each as a command to launch.

Every proxy fronts the same upstream (the echo server, over stdio) and is reached over `stdio` (the bench
launches it and talks to its stdin/stdout) or `http` (streamable HTTP at `http://127.0.0.1:PORT/mcp`).

Known peers, found when installed (on PATH or in a `--peer-path` directory):

- `mcp-proxy`: the PyPI package (`mcp-proxy --port PORT -- COMMAND`), http;
- `fastmcp`: FastMCP's `create_proxy` (a Python that can import `fastmcp`), stdio and http;
- `supergateway`: the npm package (`supergateway --stdio COMMAND --outputTransport streamableHttp --stateful`), http;
- `floor`: `byte_relay.py`, a stdio relay that only copies lines (always there): what any Python proxy pays here.

Any other proxy is named by a spec `NAME=TRANSPORT:COMMAND`, e.g. `relay=http:my-relay --port {port} -- {upstream}`:
`{upstream}` stands for the upstream's command (one argument per word, or the whole command as one string inside a
longer word) and `{port}` for the port the bench picked.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Transport = Literal["stdio", "http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "http")
KNOWN_PEERS = ("mcp-proxy", "fastmcp", "supergateway", "floor")
BYTE_RELAY = Path(__file__).resolve().parent / "byte_relay.py"

_FASTMCP_PROXY = """\
import sys
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
proxy = create_proxy(StdioTransport(command=sys.argv[3], args=sys.argv[4:]), name="fastmcp-proxy")
if sys.argv[1] == "stdio":
    proxy.run(show_banner=False, log_level="warning")
else:
    proxy.run("http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False, log_level="warning")
"""
"""A FastMCP proxy: `python -c SCRIPT stdio|http PORT UPSTREAM...`."""


@dataclass(frozen=True)
class Proxy:
    """One proxy over one transport: `argv(upstream, port)` launches it in front of `upstream`."""

    name: str
    transport: Transport
    argv: Callable[[Sequence[str], int], list[str]]
    path: str = ""
    """Directories put first on the proxy's PATH (where its interpreter, e.g. node, was found)."""


@dataclass(frozen=True)
class Missing:
    name: str
    why: str


def search_path(extra: Sequence[str]) -> str:
    return os.pathsep.join([*extra, os.environ.get("PATH", "")])


def nexus(transport: Transport) -> Proxy:
    """nexus-gateway in passthrough mode; the config file is written by the bench (`{config}`)."""

    def argv(upstream: Sequence[str], port: int) -> list[str]:
        base = [sys.executable, "-m", "nexus_gateway", "serve", "--config", "{config}", "--log-level", "warning"]
        return base if transport == "stdio" else [*base, "--transport", "http", "--port", str(port)]

    return Proxy("nexus-gateway", transport, argv)


def resolve(spec: str, transports: Sequence[Transport], extra_path: Sequence[str]) -> list[Proxy | Missing]:
    """The proxies a `--peer` value names, over those of `transports` it speaks; what is missing says why."""
    if "=" in spec:
        return [_custom(spec)]
    path = search_path(extra_path)
    if spec == "mcp-proxy":
        found = shutil.which("mcp-proxy", path=path)
        if found is None:
            return [Missing(spec, "not installed (pip install mcp-proxy, or name its directory with --peer-path)")]
        return _over(spec, transports, {"http": _mcp_proxy(found)}, Path(found).parent)
    if spec == "supergateway":
        found = shutil.which("supergateway", path=path)
        if found is None:
            return [Missing(spec, "not installed (npm install supergateway; name node_modules/.bin with --peer-path)")]
        return _over(spec, transports, {"http": _supergateway(found)}, Path(found).parent)
    if spec == "fastmcp":
        python = _fastmcp_python(path)
        if python is None:
            return [Missing(spec, "not installed (pip install fastmcp)")]
        return _over(spec, transports, {t: _fastmcp(python, t) for t in TRANSPORTS}, Path(python).parent)
    if spec == "floor":
        return _over(spec, transports, {"stdio": _byte_relay}, Path(sys.executable).parent)
    return [Missing(spec, f"unknown peer; use one of {', '.join(KNOWN_PEERS)} or NAME=stdio|http:COMMAND")]


def _over(
    name: str,
    transports: Sequence[Transport],
    argvs: dict[Transport, Callable[[Sequence[str], int], list[str]]],
    directory: Path,
) -> list[Proxy | Missing]:
    chosen: list[Proxy | Missing] = [
        Proxy(name, transport, argvs[transport], str(directory)) for transport in transports if transport in argvs
    ]
    return chosen or [Missing(name, f"speaks only {', '.join(argvs)} (asked for {', '.join(transports)})")]


def _mcp_proxy(executable: str) -> Callable[[Sequence[str], int], list[str]]:
    def argv(upstream: Sequence[str], port: int) -> list[str]:
        return [executable, "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING", "--", *upstream]

    return argv


def _supergateway(executable: str) -> Callable[[Sequence[str], int], list[str]]:
    def argv(upstream: Sequence[str], port: int) -> list[str]:
        command = shlex.join(upstream)
        options = ["--outputTransport", "streamableHttp", "--stateful", "--port", str(port), "--logLevel", "none"]
        return [executable, "--stdio", command, *options]

    return argv


def _byte_relay(upstream: Sequence[str], port: int) -> list[str]:
    return [sys.executable, str(BYTE_RELAY), *upstream]


def _fastmcp(python: str, transport: Transport) -> Callable[[Sequence[str], int], list[str]]:
    def argv(upstream: Sequence[str], port: int) -> list[str]:
        return [python, "-c", _FASTMCP_PROXY, transport, str(port), *upstream]

    return argv


def _fastmcp_python(path: str) -> str | None:
    """This Python when it can import fastmcp, else the interpreter of a `fastmcp` script on the path."""
    if importlib.util.find_spec("fastmcp") is not None:
        return sys.executable
    script = shutil.which("fastmcp", path=path)
    if script is None:
        return None
    first = Path(script).read_bytes()[:200].split(b"\n", 1)[0]
    return first[2:].decode().strip() if first.startswith(b"#!") else None


def _custom(spec: str) -> Proxy | Missing:
    name, _, rest = spec.partition("=")
    transport, _, command = rest.partition(":")
    if transport not in TRANSPORTS or not command.strip() or not name:
        return Missing(spec, "a custom peer is NAME=stdio:COMMAND or NAME=http:COMMAND (with {port})")
    words = shlex.split(command)
    if transport == "http" and not any("{port}" in word for word in words):
        return Missing(name, "an http peer's command must take the port: put {port} in it")

    def argv(upstream: Sequence[str], port: int) -> list[str]:
        out: list[str] = []
        for word in words:
            if word == "{upstream}":
                out.extend(upstream)
            else:
                out.append(word.replace("{upstream}", shlex.join(upstream)).replace("{port}", str(port)))
        return out

    return Proxy(name, "stdio" if transport == "stdio" else "http", argv)
