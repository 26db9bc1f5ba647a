"""A stub upstream that lists the tools of a `tools.json` and answers every call with its name and arguments.

    python -m nexus_gateway.bench.catalog_server TOOLS_JSON [--server NAME]

With `--server NAME` it lists the tools whose `server` is NAME, under their upstream names (the tool's
name without the `NAME__` the catalog gives it), so a gateway with one such entry per server, each under
its own name, exposes exactly the catalog's names (`npm-filesystem__read_text_file`). Without it, every
tool is listed under its name as given (use `prefix: ""`). No tool does anything: a call answers
`{"tool": ..., "arguments": ...}` as its text, so `run` can be measured end to end on a real catalog
without the real servers or their side effects. Every tool is annotated read-only, so `run` calls what it
is sure of rather than proposing it: the strictest test of never calling a wrong tool.

Plain JSON-RPC over stdio, without the SDK, so 44 of them start in a blink.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

READ_ONLY = {"readOnlyHint": True}


def listed_tools(tools: list[dict[str, Any]], server: str | None) -> list[dict[str, Any]]:
    """The MCP Tool objects this stub lists: one server's under their upstream names, or all as named."""
    listed = []
    for tool in tools:
        name = str(tool["name"])
        if server is not None:
            if tool.get("server") != server:
                continue
            name = name.removeprefix(f"{server}__")
        entry = {
            "name": name,
            "description": tool.get("description") or "",
            "inputSchema": tool.get("inputSchema") or {"type": "object"},
            "annotations": READ_ONLY,
        }
        listed.append(entry)
    return listed


def answer(method: str, params: dict[str, Any], tools: list[dict[str, Any]], label: str) -> dict[str, Any] | None:
    """The result of one request, or None when the method is not served."""
    if method == "initialize":
        version = params.get("protocolVersion", "2025-06-18")
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": label, "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": tools}
    if method == "tools/call":
        echoed = {"tool": params.get("name"), "arguments": params.get("arguments") or {}}
        return {"content": [{"type": "text", "text": json.dumps(echoed)}], "structuredContent": echoed}
    return None


def serve(tools: list[dict[str, Any]], label: str) -> None:
    out = sys.stdout
    for raw in sys.stdin:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # notifications need no answer
        result = answer(message["method"], message.get("params") or {}, tools, label)
        if result is None:
            reply: dict[str, Any] = {"code": -32601, "message": f"Method not found: {message['method']}"}
            line = {"jsonrpc": "2.0", "id": message["id"], "error": reply}
        else:
            line = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        out.write(json.dumps(line) + "\n")
        out.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tools", type=Path, help="tools.json: MCP Tool objects, each with an optional 'server'")
    parser.add_argument("--server", help="list only this server's tools, under their upstream names")
    args = parser.parse_args(argv)
    tools = json.loads(args.tools.read_text(encoding="utf-8"))
    serve(listed_tools(tools, args.server), args.server or "catalog")


if __name__ == "__main__":
    main()
