"""A small MCP client for the gateway: list its tools, search, and call one.

python examples/client.py                                  # launches the gateway over stdio
python examples/client.py --url http://127.0.0.1:8765/mcp  # or talks to a running one over HTTP
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent


def text(result: object) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


def _still_indexing(result: object) -> bool:
    structured = getattr(result, "structured_content", None) or {}
    indexed, total = structured.get("indexed"), structured.get("total")
    return isinstance(indexed, int) and isinstance(total, int) and indexed < total


async def main(url: str | None, config: Path, query: str) -> None:
    server: str | StdioServerParameters = url or StdioServerParameters(
        command=sys.executable, args=["-m", "nexus_gateway", "serve", "--config", str(config), "--mode", "routed"]
    )
    async with Client(server, mode="legacy", cache=None) as client:
        tools = (await client.list_tools()).tools
        print(f"the gateway serves {len(tools)} tools: {', '.join(tool.name for tool in tools)}\n")
        found = await client.call_tool("search_tools", {"query": query, "k": 3})
        with anyio.move_on_after(60):  # a cold gateway indexes in the background and says so: search again
            while _still_indexing(found):
                await anyio.sleep(1)
                found = await client.call_tool("search_tools", {"query": query, "k": 3})
        print(f"search_tools({query!r}):\n{text(found)}\n")
        best = found.structured_content["tools"][0]["name"] if found.structured_content else None
        if best == "weather__get_current_weather":
            result = await client.call_tool("call_tool", {"name": best, "arguments": {"city": "Lisbon"}})
            print(f"call_tool({best}):\n{text(result)[:600]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="Streamable HTTP URL of a running gateway.")
    parser.add_argument("--config", type=Path, default=HERE / "gateway.json")
    parser.add_argument("--query", default="current weather conditions in Lisbon")
    args = parser.parse_args()
    anyio.run(main, args.url, args.config, args.query)
