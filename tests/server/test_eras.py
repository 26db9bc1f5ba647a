"""Every protocol era the SDK speaks, on every front transport, through a real gateway process.

The handshake era (`mode="legacy"`) and the modern stateless era (`mode="auto"`, which negotiates
2026-07-28) each on stdio, streamable HTTP (/mcp) and SSE (/sse). Lists come in pages of two, so
every list here spans several pages. One client per era and front checks everything, since each
stdio client is a new gateway process.
"""

import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from tests.conftest import gateway_params, library, start_gateway_http, text_of, write_config

pytestmark = pytest.mark.anyio

MANY = 3
PAGE = 2
ERAS_AND_FRONTS = [
    ("legacy", "stdio"),
    ("legacy", "mcp"),
    ("legacy", "sse"),
    ("auto", "stdio"),
    ("auto", "mcp"),
    ("auto", "sse"),  # SSE predates the modern era, but the SDK's server loop takes the era from the first request
]


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("eras")
    return write_config(tmp, {"library": library("--many", str(MANY))}, mode="passthrough", list_page_size=PAGE)


@pytest.fixture(scope="module")
def http_url(config: Path) -> Iterator[str]:
    proc, url = start_gateway_http(config)
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


@pytest.fixture
def connect(config: Path, http_url: str) -> Callable[[str, str], Any]:
    @asynccontextmanager
    async def open_client(era: str, front: str) -> AsyncIterator[Client]:
        target: Any = {
            "stdio": gateway_params(config),
            "mcp": f"{http_url}/mcp",
            "sse": sse_client(f"{http_url}/sse") if front == "sse" else None,
        }[front]
        async with Client(target, mode=era, cache=None) as client:  # type: ignore[arg-type]
            yield client

    return open_client


async def every_page(fetch: Callable[..., Awaitable[Any]], field: str) -> tuple[list[Any], int]:
    """Every item of a paginated list, following `nextCursor`; and how many pages it took."""
    items: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        result = await fetch(cursor=cursor)
        pages += 1
        items.extend(getattr(result, field))
        cursor = result.next_cursor
        if cursor is None:
            return items, pages


@pytest.mark.parametrize(("era", "front"), ERAS_AND_FRONTS)
async def test_every_era_lists_in_pages_calls_reads_and_prompts_on_every_front(era: str, front: str, connect: Any):
    with anyio.fail_after(60):
        async with connect(era, front) as client:
            assert (client.protocol_version >= "2026") is (era == "auto")
            tools, pages = await every_page(client.list_tools, "tools")
            names = [tool.name for tool in tools]
            assert len(names) == len(set(names)) and pages > 1
            assert {"library__echo", "library__shelve"} | {f"library__tool_{n:04d}" for n in range(MANY)} == set(names)

            resources, pages = await every_page(client.list_resources, "resources")
            uris = [str(resource.uri) for resource in resources]
            assert sorted(uris) == sorted({"library://readme"} | {f"library://item/{n:04d}" for n in range(MANY)})
            assert pages > 1
            templates, _ = await every_page(client.list_resource_templates, "resource_templates")
            assert "library://book/{slug}" in {template.uri_template for template in templates}
            assert len(templates) == MANY + 1
            prompts, _ = await every_page(client.list_prompts, "prompts")
            assert {prompt.name for prompt in prompts} == {"library__review"} | {
                f"library__prompt_{n:04d}" for n in range(MANY)
            }

            assert text_of(await client.call_tool("library__echo", {"text": f"{era} over {front}"})) == (
                f"{era} over {front}"
            )
            read = await client.read_resource("library://book/dune")
            assert read.contents[0].text == "The book dune."  # type: ignore[union-attr]
            prompt = await client.get_prompt("library__review", {"topic": "the gateway"})
            assert prompt.messages[0].content.text == "Please review the gateway."  # type: ignore[union-attr]

            await an_invalid_cursor_is_an_invalid_params_error(client)
            capabilities_advertise_the_notifications_the_gateway_sends(client, era)


async def an_invalid_cursor_is_an_invalid_params_error(client: Client) -> None:
    for fetch in (client.list_tools, client.list_resources, client.list_resource_templates, client.list_prompts):
        with pytest.raises(MCPError) as caught:
            await fetch(cursor="not-a-cursor")
        assert caught.value.error.code == -32602 and "cursor" in caught.value.error.message


def capabilities_advertise_the_notifications_the_gateway_sends(client: Client, era: str) -> None:
    capabilities = client.server_capabilities
    assert capabilities.tools and capabilities.resources and capabilities.prompts
    advertised = (
        capabilities.tools.list_changed,
        capabilities.resources.list_changed,
        capabilities.prompts.list_changed,
    )
    # The handshake era gets list_changed notifications on its session; the modern era on a subscriptions/listen
    # stream, which the gateway serves.
    assert advertised == (True, True, True)
