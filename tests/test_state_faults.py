"""Broken state never stops serving: an unwritable state directory only warns, and a corrupt state file
(index, calibration, pins) is moved aside to `<name>.corrupt-<time>` and rebuilt."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import Client, StdioServerParameters

from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.slb import SemanticLookasideBuffer
from nexus_gateway.upstreams.pool import UpstreamState
from tests.catalog.test_pins import FAULTS, can_damage, damage
from tests.conftest import faulty, make_config, running_gateway, text_of, write_config

pytestmark = pytest.mark.anyio

INDEX = "index-hashing.npz"


def _unwritable(tmp_path: Path, where: str) -> Path:
    if where == "under a regular file":
        (tmp_path / "a-file").write_text("not a directory")
        return tmp_path / "a-file" / "state"
    return Path("/proc/nexus-gateway-test/state")  # procfs: nothing can be created there


def _config(tmp_path: Path, **nexus: Any) -> Any:
    """Routed, the hashing embedder, and a start_timeout a loaded machine can meet."""
    return make_config(tmp_path, {"one": faulty()}, mode="routed", embedder="hashing", start_timeout=60, **nexus)


async def _serves_and_searches(gateway: Any, client: Client) -> None:
    one = gateway.pool.get("one")
    assert one.state is UpstreamState.HEALTHY and one.restarts == 0 and one.last_error is None
    called = await client.call_tool("call_tool", {"name": "one__echo", "arguments": {"text": "served"}})
    assert not called.is_error and text_of(called) == "served"
    found = await client.call_tool("search_tools", {"query": "sleep for some seconds", "k": 2})
    assert found.structured_content["tools"][0]["name"] == "one__sleep"


@pytest.mark.parametrize(("where", "era"), [("under a regular file", "legacy"), ("in /proc", "auto")])
async def test_an_unwritable_state_directory_is_a_warning_and_the_upstream_stays_healthy(
    tmp_path: Path, where: str, era: str, caplog: pytest.LogCaptureFixture
):
    state = _unwritable(tmp_path, where)
    config = _config(tmp_path, state_dir=str(state))
    async with running_gateway(config, era=era) as (gateway, client):
        await _serves_and_searches(gateway, client)
        with anyio.fail_after(10):
            while not gateway.indexer.current:
                await anyio.sleep(0.02)
    assert f"could not write state file {state / 'pins.json'}" in caplog.text
    assert f"could not write state file {state / INDEX}" in caplog.text
    assert "command not found" not in caplog.text


async def test_a_stdio_gateway_with_its_state_in_proc_lists_and_calls(tmp_path: Path):
    state = "/proc/nexus-gateway-test/state"
    config = write_config(tmp_path, {"one": faulty()}, mode="passthrough", state_dir=state, start_timeout=60)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nexus_gateway", "serve", "--config", str(config)]
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy", cache=None) as client:
            assert "one__echo" in {tool.name for tool in (await client.list_tools()).tools}
            assert text_of(await client.call_tool("one__echo", {"text": "over stdio"})) == "over stdio"


# -- corrupt state files -------------------------------------------------------------------------


def _index_arrays(tmp_path: Path) -> dict[str, np.ndarray]:
    """The arrays of a sound index of three tools by the hashing embedder."""
    slb = SemanticLookasideBuffer(make_embedder("hashing"))
    slb.sync(["a__x", "b__y", "c__z"], ["make a thing", "delete a thing", "list things"])
    slb.save(tmp_path / "sound.npz")
    with np.load(tmp_path / "sound.npz") as data:
        return {key: data[key] for key in data.files}


def _corrupt_index(tmp_path: Path, how: str) -> bytes:
    arrays = _index_arrays(tmp_path)
    if how == "truncated":
        return (tmp_path / "sound.npz").read_bytes()[:300]
    if how == "mismatched arrays":
        arrays["names"] = arrays["names"][:2]
        arrays["known_scales"] = arrays["known_scales"][:1]
    elif how == "wrong dtype":
        arrays["codes"] = arrays["codes"].astype(np.float64)
    elif how == "format not a scalar":
        arrays["format"] = np.asarray([2, 2])
    np.savez(tmp_path / "bad.npz", **arrays)  # type: ignore[arg-type]
    return (tmp_path / "bad.npz").read_bytes()


def _assert_moved_aside(state: Path, name: str, content: bytes) -> None:
    aside = list(state.glob(f"{name}.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == content


@pytest.mark.parametrize("how", ["truncated", "mismatched arrays", "wrong dtype", "format not a scalar"])
async def test_a_corrupt_index_is_moved_aside_and_rebuilt(tmp_path: Path, how: str):
    state = tmp_path / "state"
    state.mkdir()
    content = _corrupt_index(tmp_path, how)
    (state / INDEX).write_bytes(content)
    config = _config(tmp_path)
    async with running_gateway(config) as (gateway, client):
        await _serves_and_searches(gateway, client)
    _assert_moved_aside(state, INDEX, content)
    rebuilt = SemanticLookasideBuffer(make_embedder("hashing"))
    assert rebuilt.load(state / INDEX) and sorted(set(rebuilt.names)) == [
        f"one__{t}" for t in ("echo", "grow", "pid", "sleep")
    ]


_SOUND_CALIBRATION = {
    "tau": 0.2,
    "target_precision": 0.98,
    "precision": 0.99,
    "coverage": 0.3,
    "n_cases": 10,
    "embedder": "hashing",
    "size": 50,
    "fusion": "linear",
}


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[0.2]",
        json.dumps(_SOUND_CALIBRATION | {"tau": "0.2"}).encode(),
        json.dumps(_SOUND_CALIBRATION | {"tau": -0.5}).encode(),
    ],
    ids=["garbage", "not an object", "tau as a string", "negative tau"],
)
async def test_a_corrupt_calibration_is_moved_aside_and_the_gate_falls_back(tmp_path: Path, content: bytes):
    state = tmp_path / "state"
    state.mkdir()
    (state / "calibration.json").write_bytes(content)
    config = _config(tmp_path)
    async with running_gateway(config) as (gateway, client):
        await _serves_and_searches(gateway, client)
        # The shipped calibration is for another embedder: nothing is routed automatically, nothing breaks.
        assert math.isinf(gateway.retriever.tau)
    _assert_moved_aside(state, "calibration.json", content)


# -- the pin store under faults: trust fails closed ---------------------------------------------------

ECHO = "faulty__echo"


def _poisoned(*poison: str) -> dict[str, Any]:
    return {"faulty": faulty(*(f"--poison={what}" for what in poison))}


async def _echo_seen(tmp_path: Path, *poison: str) -> dict[str, Any]:
    async with running_gateway(make_config(tmp_path, _poisoned(*poison), mode="passthrough")) as (gateway, client):
        await gateway.wait_ready()
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return tools[ECHO].model_dump(by_alias=True, mode="json", exclude_none=True)


@pytest.fixture(scope="module")
def approved_state(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A state folder whose `echo` was pinned, then changed (a false read-only hint) and approved by a person;
    and `echo` as hosts saw it after the approval."""
    base = tmp_path_factory.mktemp("approved")

    async def prepare() -> dict[str, Any]:
        await _echo_seen(base)
        await _echo_seen(base, "annotations")
        from nexus_gateway.catalog.pins import PinStore

        [changed] = PinStore(base / "state" / "pins.json").quarantined()
        PinStore(base / "state" / "pins.json").approve(reviewed={changed.name: changed.hash})
        return await _echo_seen(base, "annotations")

    seen = anyio.run(prepare)
    assert seen["annotations"]["readOnlyHint"] is True
    return base / "state", seen


async def _serves_only_what_was_approved(gateway: Any, client: Client, approved: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools[ECHO].model_dump(by_alias=True, mode="json", exclude_none=True) == approved  # the approval kept
    assert "<IMPORTANT>" not in json.dumps([tool.model_dump(mode="json") for tool in tools.values()])
    assert [item["name"] for item in gateway.quarantined()] == [ECHO]
    trust = gateway.trust()
    assert trust["state"] == "degraded" and "restored the last good copy" in trust["why"]


@pytest.mark.parametrize("how", FAULTS)
async def test_a_damaged_pin_store_at_start_serves_no_unapproved_definition_and_keeps_every_approval(
    tmp_path: Path, approved_state: tuple[Path, dict[str, Any]], how: str
):
    shutil.copytree(approved_state[0], tmp_path / "state")
    damage(tmp_path / "state" / "pins.json", how)
    config = make_config(tmp_path, _poisoned("description", "annotations"), mode="passthrough")
    async with running_gateway(config) as (gateway, client):
        await gateway.wait_ready()
        await _serves_only_what_was_approved(gateway, client, approved_state[1])


@pytest.mark.parametrize("how", FAULTS)
async def test_a_pin_store_damaged_while_serving_serves_no_unapproved_definition_and_keeps_every_approval(
    tmp_path: Path, approved_state: tuple[Path, dict[str, Any]], how: str
):
    can_damage(how)
    shutil.copytree(approved_state[0], tmp_path / "state")
    config = make_config(tmp_path, _poisoned("description", "annotations"), mode="passthrough")
    async with running_gateway(config) as (gateway, client):
        await gateway.wait_ready()
        assert gateway.trust() == {"state": "ok"}
        damage(tmp_path / "state" / "pins.json", how)
        with anyio.fail_after(10):  # the gateway looks every PIN_POLL_SECONDS
            while gateway.trust()["state"] == "ok":
                await anyio.sleep(0.05)
        await _serves_only_what_was_approved(gateway, client, approved_state[1])
