"""Issue 28, item 6: a restart re-embeds nothing and hosts see every definition exactly as on the first start.

Definitions are compared and hashed in a canonical form (sorted keys) and served in the upstream's own key
order: the first start and every later one (which reads its pins back) serve the same bytes, so the index
text, hence its hash, is the same and nothing is embedded again.
"""

import json
import logging
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer

from tests.fakes import fake_gateway, faulty_server

pytestmark = pytest.mark.anyio


def booking_server() -> MCPServer:
    """A tool whose parameters are not in sorted order (as most servers list them)."""
    server = MCPServer("booking")

    @server.tool(description="Book a room for a day.")
    def book(zeta_room: str, alpha_day: int, middle_note: str = "") -> str:
        return f"{zeta_room} {alpha_day} {middle_note}"

    return server


def _upstreams() -> dict[str, MCPServer]:
    return {"booking": booking_server(), "faulty": faulty_server()}


async def _listing(client: Client) -> str:
    tools = (await client.list_tools()).tools
    return json.dumps([tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools])


def _embedded(caplog: pytest.LogCaptureFixture) -> int:
    found = [re.search(r"embedded (\d+) new or changed tools", record.getMessage()) for record in caplog.records]
    return sum(int(match.group(1)) for match in found if match)


async def test_a_restart_lists_every_tool_in_the_upstreams_key_order(tmp_path: Path):
    listings = []
    for _ in range(3):  # the first start pins, the next ones read the pins back
        async with fake_gateway(tmp_path, _upstreams(), mode="passthrough") as (_, client):
            listings.append(await _listing(client))
    assert listings[0] == listings[1] == listings[2]
    book = next(tool for tool in json.loads(listings[2]) if tool["name"] == "booking__book")
    assert list(book["inputSchema"]["properties"]) == ["zeta_room", "alpha_day", "middle_note"]


async def test_a_restart_in_routed_mode_embeds_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="nexus_gateway")
    embedded, described = [], []
    for _ in range(2):
        caplog.clear()
        async with fake_gateway(tmp_path, _upstreams(), mode="routed", embedder="hashing") as (gateway, client):
            with anyio.fail_after(30):
                while not gateway.indexer.current:
                    await anyio.sleep(0.02)
            result: Any = await client.call_tool("describe_tool", {"name": "booking__book"})
            described.append(json.dumps(result.structured_content))
        embedded.append(_embedded(caplog))
    assert embedded[0] >= 5  # every tool, on the first start
    assert embedded[1] == 0
    assert described[0] == described[1]
