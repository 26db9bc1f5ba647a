"""An upstream that answers with results of any size, for the large-result benchmark and tests.

Plain JSON-RPC over stdio, without the SDK, so the server's own cost is one write: `blob(megabytes)`
answers with `blob_text(megabytes)` as its text, written in 1 MiB pieces (`pause_ms` between pieces
stretches the write, so a test can act while it streams); `echo(text)` answers at once.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

_TOOLS = [
    {
        "name": "blob",
        "description": "A text result of about `megabytes` MB.",
        "inputSchema": {
            "type": "object",
            "properties": {"megabytes": {"type": "number"}, "pause_ms": {"type": "integer"}},
            "required": ["megabytes"],
        },
    },
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
]
_PIECE = 1 << 20


def blob_text(megabytes: float) -> str:
    """`megabytes` * 1,000,000 characters; each million starts with its number, so a lost piece shows."""
    size = int(megabytes * 1_000_000)
    pages = [f"{page:09d};" + _FILL for page in range(size // 1_000_000 + 1)]
    return "".join(pages)[:size]


_FILL = "abcdefghij" * 99_999


def _answer(method: str, params: dict[str, Any]) -> tuple[dict[str, Any] | None, int]:
    if method == "initialize":
        version = params.get("protocolVersion", "2025-06-18")
        info = {"name": "bulk", "version": "1"}
        return {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}, 0
    if method == "ping":
        return {}, 0
    if method == "tools/list":
        return {"tools": _TOOLS}, 0
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        if params.get("name") == "blob":
            text = blob_text(float(arguments["megabytes"]))
            return {"content": [{"type": "text", "text": text}]}, int(arguments.get("pause_ms", 0))
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}, 0
    return None, 0


def main() -> None:
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        if "id" not in message or "method" not in message:
            continue
        result, pause_ms = _answer(message["method"], message.get("params") or {})
        if result is None:
            reply: dict[str, Any] = {"code": -32601, "message": f"no method {message['method']}"}
            line = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": reply})
        else:
            line = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        data = line.encode() + b"\n"
        for start in range(0, len(data), _PIECE):
            out.write(data[start : start + _PIECE])
            out.flush()
            if pause_ms:
                time.sleep(pause_ms / 1000)


if __name__ == "__main__":
    main()
