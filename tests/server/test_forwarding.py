"""What a faithful proxy carries besides the call itself: progress, logs, sampling, elicitation, roots,
completions, subscriptions and cancellation, through real gateway processes (stdio, /mcp and /sse) to a real
upstream (tests/servers/features_server.py), with the official client in both protocol eras."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged
from mcp.shared.exceptions import MCPError

from nexus_gateway.config import load_config
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server
from tests.conftest import ROOT, running_gateway, start_gateway_http, stdio_entry, text_of, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

FEATURES = str(ROOT / "tests" / "servers" / "features_server.py")
LIBRARY = str(ROOT / "tests" / "servers" / "library_server.py")
ERAS = ["legacy", "auto"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def fronts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Where a host reaches the gateway: a stdio launch (passthrough), /mcp of two HTTP gateways and /sse of the
    passthrough one."""
    tmp = tmp_path_factory.mktemp("forwarding")
    targets: dict[str, Any] = {}
    processes = []
    for mode in ("passthrough", "routed"):
        folder = tmp / mode
        folder.mkdir()
        config = write_config(folder, {"features": stdio_entry(FEATURES)}, mode=mode)
        if mode == "passthrough":
            targets["stdio"] = config
        proc, url = start_gateway_http(config)
        processes.append(proc)
        targets[f"http-{mode}"] = f"{url}/mcp"
        if mode == "passthrough":
            targets["sse"] = f"{url}/sse"
    yield targets
    for proc in processes:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def target_of(fronts: dict[str, Any], front: str) -> Any:
    if front == "stdio":
        args = ["-m", "nexus_gateway", "serve", "--config", str(fronts["stdio"])]
        return StdioServerParameters(command=sys.executable, args=args)
    if front == "sse":
        return sse_client(fronts["sse"])
    return fronts[front]


async def call(client: Client, front: str, tool: str, arguments: dict[str, Any], **options: Any) -> Any:
    """Call a features tool as the host would: directly (passthrough) or through `call_tool` (routed)."""
    if front.endswith("routed"):
        arguments = {"name": f"features__{tool}", "arguments": arguments}
        return await client.call_tool("call_tool", arguments, **options)
    return await client.call_tool(f"features__{tool}", arguments, **options)


class Host:
    """A host with every client capability; it records what the gateway brought it."""

    def __init__(self, name: str = "host") -> None:
        self.name = name
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.notifications: list[Any] = []
        self.asked: list[str] = []

    async def sampling(self, ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        assert isinstance(prompt, types.TextContent)
        self.asked.append("sampling")
        reply = types.TextContent(type="text", text=f"{self.name} answers {prompt.text}")
        return types.CreateMessageResult(role="assistant", content=reply, model="test-model")

    async def elicitation(self, ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if isinstance(params, types.ElicitRequestURLParams):
            self.asked.append(f"url {params.url}")
            return types.ElicitResult(action="decline")
        self.asked.append(f"form {params.message}")
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def roots(self, ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def message(self, message: Any) -> None:
        self.notifications.append(message)

    def client(self, target: Any, era: str, **options: Any) -> Client:
        callbacks: dict[str, Any] = {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.roots,
            "logging_callback": self.logging,
            "message_handler": self.message,
        }
        return Client(target, mode=era, cache=None, **(callbacks | options))


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("front", ["stdio", "http-passthrough", "http-routed", "sse"])
async def test_progress_logs_and_requests_for_input_reach_the_host_that_called(
    fronts: dict[str, Any], front: str, era: str
):
    host = Host()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(90):
        async with host.client(target_of(fronts, front), era, log_level="info") as client:
            result = await call(client, front, "progress", {"steps": 3}, progress_callback=on_progress)
            assert text_of(result) == "done"
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

            if era == "legacy":
                await client.set_logging_level("info")
            await call(client, front, "log", {"level": "debug", "text": "too fine"})
            await call(client, front, "log", {"level": "warning", "text": "careful"})
            assert [(log.level, log.logger, log.data) for log in host.logs] == [
                ("warning", "features/features", "careful")
            ]

            assert text_of(await call(client, front, "sample", {"prompt": "2+2?"})) == "host answers 2+2?"
            assert text_of(await call(client, front, "elicit_form", {"message": "Name?"})) == "accept:host"
            assert text_of(await call(client, front, "elicit_url", {"url": "https://example.com/login"})) == "decline"
            assert text_of(await call(client, front, "roots", {})) == "file:///work/project"
            assert host.asked == ["sampling", "form Name?", "url https://example.com/login"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_completions_of_prompts_and_templates_reach_their_upstream(fronts: dict[str, Any], front: str, era: str):
    with anyio.fail_after(90):
        async with Client(target_of(fronts, front), mode=era, cache=None) as client:
            assert client.server_capabilities.completions is not None
            prompt = types.PromptReference(type="ref/prompt", name="features__greet")
            completed = await client.complete(prompt, {"name": "name", "value": "al"})
            assert completed.completion.values == ["alpha (prompt greet)", "alpine (prompt greet)"]
            template = types.ResourceTemplateReference(type="ref/resource", uri="features://items/{name}")
            completed = await client.complete(template, {"name": "name", "value": "b"})
            assert completed.completion.values == ["beta (template features://items/{name})"]


@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_resource_updates_reach_the_subscribed_host_and_stop_after_unsubscribe(
    fronts: dict[str, Any], front: str
):
    subscriber, bystander = Host("subscriber"), Host("bystander")

    def updates(host: Host) -> list[str]:
        return [str(n.params.uri) for n in host.notifications if isinstance(n, types.ResourceUpdatedNotification)]

    with anyio.fail_after(90):
        async with subscriber.client(target_of(fronts, front), "legacy") as client:
            assert client.server_capabilities.resources.subscribe is True
            await client.subscribe_resource("features://status")
            await call(client, front, "touch", {"uri": "features://status"})
            await call(client, front, "touch", {"uri": "features://other", "always": True})  # nobody subscribed
            if front.startswith("http"):
                async with bystander.client(target_of(fronts, front), "legacy") as other:
                    await call(other, front, "touch", {"uri": "features://status"})
            with anyio.fail_after(10):
                while len(updates(subscriber)) < (2 if front.startswith("http") else 1):
                    await anyio.sleep(0.02)
            await client.unsubscribe_resource("features://status")
            assert text_of(await call(client, front, "touch", {"uri": "features://status"})) == "not subscribed"
            await call(client, front, "touch", {"uri": "features://status", "always": True})
            await call(client, front, "cancelled", {})  # a round trip after the touch: its update would be here
    assert set(updates(subscriber)) == {"features://status"}
    assert len(updates(subscriber)) == (2 if front.startswith("http") else 1)
    assert updates(bystander) == []


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_goes_to_the_host_whose_call_asked_among_concurrent_hosts(fronts: dict[str, Any], era: str):
    hosts = [Host("alice"), Host("bob")]
    replies: dict[str, str] = {}

    async def ask(host: Host) -> None:
        async with host.client(fronts["http-passthrough"], era) as client:
            for round in range(3):
                result = await call(client, "http-passthrough", "sample", {"prompt": f"{host.name} {round}"})
                replies[f"{host.name} {round}"] = text_of(result)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for host in hosts:
                tg.start_soon(ask, host)
    assert replies == {
        f"{name} {round}": f"{name} answers {name} {round}" for name in ("alice", "bob") for round in range(3)
    }
    assert [host.asked for host in hosts] == [["sampling"] * 3, ["sampling"] * 3]


@pytest.mark.parametrize("era", ERAS)
async def test_a_host_without_sampling_gets_a_clear_error_not_a_hang(fronts: dict[str, Any], era: str):
    with anyio.fail_after(60):
        async with Client(fronts["http-passthrough"], mode=era, cache=None) as client:
            result = await call(client, "http-passthrough", "sample", {"prompt": "anyone?"})
    assert result.is_error
    assert "does not support sampling" in text_of(result)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_a_host_cancelling_its_call_cancels_the_upstream_call(fronts: dict[str, Any], front: str, era: str):
    with anyio.fail_after(90):
        async with Client(target_of(fronts, front), mode=era, cache=None) as client:
            before = int(text_of(await call(client, front, "cancelled", {})))
            with anyio.move_on_after(1.0):
                await call(client, front, "slow", {"seconds": 60})
            with anyio.fail_after(10):
                while int(text_of(await call(client, front, "cancelled", {}))) == before:
                    await anyio.sleep(0.05)


@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_an_upstream_giving_up_on_its_request_cancels_the_hosts(fronts: dict[str, Any], front: str):
    """The upstream cancels its sampling request after 0.5 s, then answers the call: the host's request is
    cancelled too, every time. (The answer comes on the direct channel, the cancellation through the SDK's
    client: once the gateway was warm, the answer overtook the cancellation and the host's request ended
    with the call, never cancelled; seen from the second call over HTTP.)"""
    for attempt in range(3):
        host = Host()
        started, cancelled = anyio.Event(), anyio.Event()

        async def slow_sampling(
            ctx: Any, params: Any, started: anyio.Event = started, cancelled: anyio.Event = cancelled
        ) -> Any:
            started.set()
            try:
                await anyio.sleep(60)
            finally:
                cancelled.set()

        with anyio.fail_after(90):
            async with host.client(target_of(fronts, front), "legacy", sampling_callback=slow_sampling) as client:
                result = await call(client, front, "sample_then_give_up", {})
                assert text_of(result) == "gave up"
                with anyio.fail_after(30):  # well before the 60 s the sampling would take uncancelled
                    await cancelled.wait()
        assert started.is_set(), f"attempt {attempt}"


async def test_progress_restarts_the_call_timeout_up_to_the_hard_maximum(tmp_path: Path):
    entry = stdio_entry(FEATURES, call_timeout=1, call_timeout_max=3)
    config = write_config(tmp_path, {"features": entry}, mode="passthrough")
    with anyio.fail_after(60):
        async with running_gateway(load_config(config)) as (_, client):
            alive = await client.call_tool("features__progress", {"steps": 5, "delay": 0.4})  # 2 s, progress every 0.4
            silent = await client.call_tool("features__slow", {"seconds": 2})
            endless = await client.call_tool("features__progress", {"steps": 20, "delay": 0.4})  # 8 s
    assert text_of(alive) == "done" and not alive.is_error
    assert silent.is_error and "did not answer the call to 'slow' within 1s" in text_of(silent)
    assert endless.is_error and "past the 3s maximum" in text_of(endless)


@pytest.mark.parametrize("era", ERAS)
async def test_initialize_answers_before_upstreams_start_and_states_what_the_gateway_serves(tmp_path: Path, era: str):
    """Logging, completions and subscriptions are the gateway's own to serve, so initialize need not wait for
    upstreams (hosts give up on a slow handshake); an upstream without them gets honest answers."""
    slow = stdio_entry(LIBRARY, "--start-delay", "3")
    plain = stdio_entry(FEATURES, "--plain")
    config = load_config(write_config(tmp_path, {"slow": slow, "features": plain}, mode="passthrough"))
    with anyio.fail_after(60):
        async with Gateway(config) as gateway, Client(build_server(gateway), mode=era, cache=None) as client:
            assert gateway.pool.get("slow").state.value == "starting"  # type: ignore[union-attr]
            capabilities = client.server_capabilities
            await gateway.wait_ready()
            completion = await client.complete(
                types.PromptReference(type="ref/prompt", name="features__greet"), {"name": "name", "value": "a"}
            )
            if era == "legacy":
                with pytest.raises(MCPError, match="does not support resource subscriptions"):
                    await client.subscribe_resource("features://status")
    assert capabilities.logging is not None and capabilities.completions is not None
    if era == "legacy":
        assert capabilities.resources is not None and capabilities.resources.subscribe is True
    assert completion.completion.values == []


@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_a_listening_modern_host_hears_of_tool_list_changes_and_of_updates_to_its_resources(
    fronts: dict[str, Any], front: str
):
    with anyio.fail_after(90):
        async with Client(target_of(fronts, front), mode="auto", cache=None) as client:
            capabilities = client.server_capabilities
            assert capabilities.tools and capabilities.tools.list_changed
            assert capabilities.resources and capabilities.resources.list_changed and capabilities.resources.subscribe
            assert capabilities.prompts and capabilities.prompts.list_changed
            wanted = ["features://status", "nowhere://at-all"]
            async with client.listen(tools_list_changed=True, resource_subscriptions=wanted) as events:
                # no upstream lists the other, and the only one that takes subscriptions gets it too
                assert events.honored.resource_subscriptions == wanted
                grown = text_of(await call(client, front, "grow", {}))
                assert text_of(await call(client, front, "touch", {"uri": "features://status"})) == "touched"
                heard: set[Any] = set()
                async for event in events:
                    heard.add(event)
                    if heard == {ToolsListChanged(), ResourceUpdated(uri="features://status")}:
                        break
                assert f"features__{grown}" in {tool.name for tool in (await client.list_tools()).tools}
            with anyio.fail_after(10):  # the stream has ended: the gateway lets the upstream subscription go
                while text_of(await call(client, front, "touch", {"uri": "features://status"})) != "not subscribed":
                    await anyio.sleep(0.05)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_requests_for_input_while_reading_a_resource_or_getting_a_prompt_reach_that_host(
    fronts: dict[str, Any], front: str, era: str
):
    host = Host("reader")
    with anyio.fail_after(90):
        async with host.client(target_of(fronts, front), era) as client:
            read = await client.read_resource("features://sampled")
            prompt = await client.get_prompt("features__sampled")
    assert read.contents[0].text == "reader answers read?"  # type: ignore[union-attr]
    assert prompt.messages[0].content.text == "reader answers prompt?"  # type: ignore[union-attr]
    assert host.asked == ["sampling", "sampling"]


@pytest.mark.parametrize("front", ["stdio", "http-passthrough"])
async def test_a_completed_url_elicitation_is_announced_to_the_host_it_went_to(fronts: dict[str, Any], front: str):
    """Handshake era only: 2026-07-28 has no notifications/elicitation/complete."""
    asker, bystander = Host("asker"), Host("bystander")

    def completed(host: Host) -> list[str]:
        kind = types.ElicitCompleteNotification
        return [n.params.elicitation_id for n in host.notifications if isinstance(n, kind)]

    with anyio.fail_after(90):
        async with asker.client(target_of(fronts, front), "legacy") as client:
            if front.startswith("http"):
                async with bystander.client(target_of(fronts, front), "legacy") as other:
                    await other.list_tools()
                    await call(client, front, "elicit_then_complete", {"url": "https://example.com/pay"})
                    with anyio.fail_after(10):
                        while not completed(asker):
                            await anyio.sleep(0.02)
                    await other.list_tools()  # a round trip: a notification sent to it would be here by now
            else:
                await call(client, front, "elicit_then_complete", {"url": "https://example.com/pay"})
                with anyio.fail_after(10):
                    while not completed(asker):
                        await anyio.sleep(0.02)
    assert asker.asked == ["url https://example.com/pay"]
    assert completed(asker) == ["e-2"] and completed(bystander) == []


async def restart_upstream(client: Client) -> None:
    """Kill the features upstream's process and wait until the gateway has reconnected to a new one."""
    pid = text_of(await client.call_tool("features__pid", {}))
    os.kill(int(pid), signal.SIGKILL)
    with anyio.fail_after(60):
        while True:
            result = await client.call_tool("features__pid", {})
            if not result.is_error and text_of(result) != pid:
                return
            await anyio.sleep(0.05)


async def level_of_upstream(client: Client) -> str:
    contents = (await client.read_resource("features://level")).contents[0]
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


async def test_an_upstream_that_restarts_is_told_the_hosts_log_level_and_subscriptions_again(tmp_path: Path):
    config = write_config(tmp_path, {"features": stdio_entry(FEATURES)}, mode="passthrough")
    proc, url = start_gateway_http(config)
    try:
        with anyio.fail_after(150):
            legacy = Host("legacy")
            async with legacy.client(f"{url}/mcp", "legacy") as client:
                await client.set_logging_level("warning")
                await client.subscribe_resource("features://status")
                await restart_upstream(client)
                assert await level_of_upstream(client) == "warning"
                assert text_of(await client.call_tool("features__touch", {"uri": "features://status"})) == "touched"
                with anyio.fail_after(10):
                    while not any(isinstance(n, types.ResourceUpdatedNotification) for n in legacy.notifications):
                        await anyio.sleep(0.02)

            modern = Client(f"{url}/mcp", mode="auto", cache=None, log_level="info")
            async with modern as client, client.listen(resource_subscriptions=["features://status"]) as events:
                await client.call_tool("features__log", {"level": "info", "text": "hello"})
                assert await level_of_upstream(client) == "info"
                await restart_upstream(client)
                assert await level_of_upstream(client) == "info"
                touched = await client.call_tool("features__touch", {"uri": "features://status"})
                assert text_of(touched) == "touched"
                with anyio.fail_after(10):
                    assert await anext(events) == ResourceUpdated(uri="features://status")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


async def test_a_subscription_to_an_unlisted_uri_goes_to_the_only_upstream_that_supports_them(tmp_path: Path):
    """The spec's subscription scenarios subscribe before any list names the resource: with one upstream
    that can take it there is no doubt where it goes; with two, the host is told to list first."""
    told: list[str] = []
    updated = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            told.append(str(message.params.uri))
            updated.set()

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = write_config(tmp_path / "one", {"features": stdio_entry(FEATURES)}, mode="passthrough")
    two = write_config(tmp_path / "two", {"a": stdio_entry(FEATURES), "b": stdio_entry(FEATURES)}, mode="passthrough")
    with anyio.fail_after(60):
        async with Gateway(load_config(one)) as gateway:
            await gateway.wait_ready()
            server = build_server(gateway)
            async with Client(server, mode="legacy", cache=None, message_handler=on_message) as client:  # type: ignore[arg-type]
                await client.subscribe_resource("features://not-listed-yet")
                await client.call_tool("features__touch", {"uri": "features://not-listed-yet"})
                await updated.wait()
                await client.unsubscribe_resource("features://not-listed-yet")
        async with Gateway(load_config(two)) as gateway:
            await gateway.wait_ready()
            async with Client(build_server(gateway), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
                with pytest.raises(MCPError, match=r"several support subscriptions \(a, b\): list resources first"):
                    await client.subscribe_resource("features://not-listed-yet")
    assert told == ["features://not-listed-yet"]
