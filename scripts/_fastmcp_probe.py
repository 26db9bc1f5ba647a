"""fastmcp's client against the gateway: list tools, then call one. Prints one JSON line; exit 0 on success.

_fastmcp_probe.py list|call MODE stdio CONFIG | MODE URL
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

TOOL = "weather__get_current_weather"
ARGS = {"city": "Paris"}


async def probe(op: str, mode: str, target: Any) -> dict[str, Any]:
    from fastmcp import Client

    async with Client(target, mode=mode, timeout=60) as client:
        if op == "list":
            tools = await client.list_tools()
            return {"ok": any(tool.name == TOOL for tool in tools), "tools": [tool.name for tool in tools]}
        result = await client.call_tool(TOOL, ARGS, raise_on_error=False)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        return {"ok": not result.is_error and "Paris" in text, "is_error": result.is_error, "text": text[:300]}


def main() -> int:
    op, mode, where = sys.argv[1], sys.argv[2], sys.argv[3]
    target: Any = where
    if where == "stdio":
        from fastmcp.client.transports import StdioTransport

        env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH", "NEXUS_STATE_DIR") if key in os.environ}
        python = os.environ.get("PYTHON", sys.executable)
        target = StdioTransport(python, ["-m", "nexus_gateway", "serve", "--config", sys.argv[4]], env=env)
    try:
        outcome = asyncio.run(probe(op, mode, target))
    except BaseException as exc:  # report whatever the client raised, as a user would see it
        outcome = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}
    print(json.dumps(outcome))
    return 0 if outcome["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
