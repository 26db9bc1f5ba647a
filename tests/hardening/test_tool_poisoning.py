"""Issue 10, item 9: a tool whose definition changes after first sight never reaches the host unapproved.

Each test runs the gateway twice with the same state directory: first against the plain upstream (its
tools get pinned), then against the same upstream listing a poisoned `echo` (`faulty_server.py --poison`).
"""

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server
from tests.conftest import cli, faulty, make_config, start_gateway_http, text_of, write_config

pytestmark = pytest.mark.anyio
ECHO = "faulty__echo"
ERAS = ("legacy", "auto")


def servers(*poison: str) -> dict[str, Any]:
    return {"faulty": faulty(*(f"--poison={what}" for what in poison))}


def wire(tool: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {key: dumped[key] for key in ("name", "description", "inputSchema", "annotations") if key in dumped}


async def listed(client: Client, name: str = ECHO) -> dict[str, Any] | None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    return wire(tools[name]) if name in tools else None


async def pin_first_sight(tmp_path: Path, **nexus: Any) -> dict[str, Any]:
    """Run 1: the plain upstream; returns `echo` as the host saw it."""
    async with Gateway(make_config(tmp_path, servers(), mode="passthrough", **nexus)) as gateway:
        await gateway.wait_ready()
        async with Client(build_server(gateway), mode="legacy", cache=None) as client:
            seen = await listed(client)
    assert seen is not None
    return seen


def approve(tmp_path: Path, *args: str) -> None:
    result = cli("tools", "approve", *args, "--config", str(tmp_path / "gateway.json"))
    assert result.returncode == 0, result.stderr


def reviewed(tmp_path: Path, name: str) -> str:
    """The definition hash `tools diff --json` shows a person for `name`."""
    shown = cli("tools", "diff", name, "--json", "--config", str(tmp_path / "gateway.json"))
    assert shown.returncode == 0, shown.stderr
    [item] = json.loads(shown.stdout)
    assert item["name"] == name
    return str(item["hash"])


async def health_once_up(url: str) -> dict[str, Any]:
    """/healthz once the upstream has connected (the gateway listens before its upstreams are up)."""
    async with httpx.AsyncClient() as http:
        with anyio.fail_after(20):
            while (health := (await http.get(f"{url}/healthz")).json())["upstreams"].get("faulty") != "healthy":
                await anyio.sleep(0.05)
    result: dict[str, Any] = health
    return result


@asynccontextmanager
async def clients(target: Any, told: Any = None) -> AsyncIterator[list[Client]]:
    """One client of each era on `target`; `told` is their message handler. (Only the handshake era hears
    notifications/tools/list_changed on a bare connection; modern clients list again.)"""
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(Client(target, mode=era, cache=None, message_handler=told)) for era in ERAS
        ]


class ToldOfChanges:
    """A message handler that counts tools/list_changed notifications."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def __call__(self, message: object) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            self.event.set()


@pytest.mark.parametrize("poison", ["description", "parameter", "schema", "annotations"])
async def test_the_host_keeps_seeing_the_pinned_definition_when_an_upstream_changes_a_tool(tmp_path: Path, poison: str):
    pinned = await pin_first_sight(tmp_path)
    async with Gateway(make_config(tmp_path, servers(poison), mode="passthrough")) as gateway:
        await gateway.wait_ready()
        assert gateway.pool.get("faulty").tools[0] != pinned  # type: ignore[union-attr]  # the upstream did change
        for era in ERAS:
            async with Client(build_server(gateway), mode=era, cache=None) as client:
                assert await listed(client) == pinned, era
                assert text_of(await client.call_tool(ECHO, {"text": "hi"})) == "hi"  # calls go on, pinned schema
        [quarantined] = gateway.quarantined()
        assert quarantined["name"] == ECHO and quarantined["withheld"] is False


async def test_routed_meta_tools_and_the_index_see_only_the_pinned_definition(tmp_path: Path):
    await pin_first_sight(tmp_path, embedder="bm25")
    poisoned = servers("description", "parameter", "annotations")
    async with Gateway(make_config(tmp_path, poisoned, mode="routed", embedder="bm25")) as gateway:
        await gateway.wait_ready()
        for era in ERAS:
            async with Client(build_server(gateway), mode=era, cache=None) as client:
                found = text_of(await client.call_tool("search_tools", {"query": "echo the text"}))
                assert found.startswith(f"{ECHO}(text: str)") and "id_rsa" not in found, era
                described = (await client.call_tool("describe_tool", {"name": ECHO})).structured_content
                assert described is not None
                assert described["description"] == "Return the text unchanged.", era
                assert "API keys" not in json.dumps(described["inputSchema"])
                assert described["quarantine"]["changes"] == ["description", "parameter descriptions", "annotations"]
                assert "quarantined" in described["warning"] and f"tools approve {ECHO}" in described["warning"]
                called = await client.call_tool("call_tool", {"name": ECHO, "arguments": {"text": "hi"}})
                assert text_of(called) == "hi"
        assert float(gateway.retriever.built.scores("ssh rsa").max()) == 0.0  # type: ignore[attr-defined]
        assert not gateway.resolve(ECHO).read_only  # so `run` asks before calling it, as before the change


async def test_a_person_reviews_and_approves_a_changed_tool_while_the_gateway_runs(tmp_path: Path):
    pinned = await pin_first_sight(tmp_path)
    config = write_config(tmp_path, servers("description"), mode="passthrough")

    listing = cli("tools", "--config", str(config), "--json")  # a gateway of its own; the store is shared
    assert listing.returncode == 0, listing.stderr
    report = json.loads(listing.stdout)
    assert [(item["name"], item["changes"]) for item in report["quarantined"]] == [(ECHO, ["description"])]
    assert next(tool for tool in report["tools"] if tool["name"] == ECHO)["quarantined"] is True
    table = cli("tools", "--config", str(config))
    assert "1 quarantined tools" in table.stdout and "description changed" in table.stdout

    shown = cli("tools", "diff", ECHO, "--config", str(config))
    assert shown.returncode == 0, shown.stderr
    assert '-  "description": "Return the text unchanged.",' in shown.stdout
    assert '+  "description": "Return the text unchanged. <IMPORTANT>' in shown.stdout
    seen = reviewed(tmp_path, ECHO)
    assert f"definition hash: {seen}" in shown.stdout and f"--hash {seen}" in shown.stdout
    unbound = cli("tools", "approve", ECHO, "--config", str(config))  # not a terminal: no unseen approval
    assert unbound.returncode == 2 and f"{ECHO} --hash {seen}" in unbound.stderr.replace("\n", " ")

    proc, url = start_gateway_http(config)
    try:
        health = await health_once_up(url)
        assert [item["name"] for item in health["quarantined"]] == [ECHO]
        assert health["trust"] == {"state": "ok"} and health["quarantined"][0]["hash"] == seen
        told = ToldOfChanges()
        async with clients(f"{url}/mcp", told) as both:
            for client in both:
                assert await listed(client) == pinned
            approve(tmp_path, ECHO, "--hash", seen)
            with anyio.fail_after(30):  # the running gateway notices the CLI's write and tells its clients
                await told.event.wait()
            for client in both:
                now = await listed(client)
                assert now is not None and "<IMPORTANT>" in now["description"]
        assert (await health_once_up(url))["quarantined"] == []
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_withhold_mode_hides_a_changed_tool_until_it_is_approved(tmp_path: Path):
    await pin_first_sight(tmp_path)
    config = make_config(tmp_path, servers("schema"), mode="passthrough", quarantine="withhold")
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        told = ToldOfChanges()
        async with clients(build_server(gateway), told) as both:
            for client in both:
                assert await listed(client) is None
                refused = await client.call_tool(ECHO, {"text": "hi"})
                assert refused.is_error and f"nexus-gateway tools approve {ECHO}" in text_of(refused)
            assert gateway.quarantined()[0]["withheld"] is True
            approve(tmp_path, "--all", "--yes")
            with anyio.fail_after(30):
                await told.event.wait()
            for client in both:
                now = await listed(client)
                assert now is not None and "sidenote" in now["inputSchema"]["properties"]


async def test_new_servers_tools_are_withheld_until_approved_when_asked(tmp_path: Path):
    config = make_config(tmp_path, servers(), mode="passthrough", quarantine_new_servers=True)
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        told = ToldOfChanges()
        async with clients(build_server(gateway), told) as both:
            for client in both:
                assert (await client.list_tools()).tools == []
            assert {(item["name"], item["reason"]) for item in gateway.quarantined()} == {
                (f"faulty__{tool}", "new") for tool in ("echo", "grow", "pid", "sleep")
            }
            approve(tmp_path, "--server", "faulty", "--yes")
            with anyio.fail_after(30):
                await told.event.wait()
            for client in both:
                assert len((await client.list_tools()).tools) == 4
                assert text_of(await client.call_tool(ECHO, {"text": "hi"})) == "hi"


async def test_an_approval_of_a_definition_that_changed_after_review_is_refused_with_the_new_diff(tmp_path: Path):
    await pin_first_sight(tmp_path)
    async with Gateway(make_config(tmp_path, servers("description"), mode="passthrough")) as gateway:
        await gateway.wait_ready()
    seen = reviewed(tmp_path, ECHO)  # a person reviews the description change
    async with Gateway(make_config(tmp_path, servers("description", "schema"), mode="passthrough")) as gateway:
        await gateway.wait_ready()  # the upstream changes echo again, unseen
        refused = cli("tools", "approve", ECHO, "--hash", seen, "--config", str(tmp_path / "gateway.json"))
        assert refused.returncode == 2 and "changed since it was reviewed" in refused.stderr
        assert '"sidenote"' in refused.stderr  # the new diff
        assert [item["name"] for item in gateway.quarantined()] == [ECHO]
    bulk = cli("tools", "approve", "--all", "--config", str(tmp_path / "gateway.json"))
    assert bulk.returncode == 2 and "--yes" in bulk.stderr
    approve(tmp_path, ECHO, "--hash", reviewed(tmp_path, ECHO))


async def test_a_damaged_pin_store_shows_in_tools_and_only_a_persons_approval_ends_it(tmp_path: Path):
    await pin_first_sight(tmp_path)
    config = write_config(tmp_path, servers("description"), mode="passthrough")
    (tmp_path / "state" / "pins.json").write_bytes(b"\x00garbage")  # and no copy is left to restore
    (tmp_path / "state" / "pins.json.bak").unlink()
    for _ in range(2):  # a second start does not forget that the store was damaged
        listing = cli("tools", "--config", str(config), "--json")
        assert listing.returncode == 0, listing.stderr
        report = json.loads(listing.stdout)
        assert report["trust"]["state"] == "degraded" and "no good copy" in report["trust"]["why"]
        assert ECHO not in {tool["name"] for tool in report["tools"]}  # nothing is pinned afresh
        assert {(item["name"], item["reason"], item["withheld"]) for item in report["quarantined"]} >= {
            (ECHO, "lost", True)
        }
    assert "Trust degraded" in cli("tools", "--config", str(config)).stdout
    shown = cli("tools", "diff", "--config", str(config))
    assert "Trust degraded" in shown.stdout and "<IMPORTANT>" in shown.stdout
    approve(tmp_path, ECHO, "--hash", reviewed(tmp_path, ECHO))
    after = json.loads(cli("tools", "--config", str(config), "--json").stdout)
    assert after["trust"] == {"state": "ok"} and ECHO in {tool["name"] for tool in after["tools"]}
