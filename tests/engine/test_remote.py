"""`RemoteEngine` on the wire, with httpx's MockTransport as the server: what it sends, what it reads, and the
errors it gives for a server that is down or answers garbage (the real server: test_remote_server.py)."""

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from nexus_gateway.engine import Decoding
from nexus_gateway.engine.remote import RemoteEngine, gbnf_literal
from nexus_gateway.engine.settings import EngineSettings, engine_settings
from nexus_gateway.errors import ConfigError, EngineError
from nexus_gateway.evals.dataset import tool_records
from nexus_gateway.meta.tools import MetaTools
from tests.conftest import EXAMPLES, free_port, make_config, running_gateway, stdio_entry, text_of

pytestmark = pytest.mark.anyio
WEATHER = {
    "name": "get_weather",
    "description": "Current weather of a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HOW = Decoding(grammar='root ::= "{}"', opens_key=True, form="signature", max_tokens=40)


def _settings(**extra: Any) -> EngineSettings:
    return EngineSettings(backend="openai", base_url="http://inference.test/v1", model="qwen", **extra)


def _server(reply: Any, seen: list[dict[str, Any]], status: int = 200) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(
            {"url": str(request.url), "auth": request.headers.get("authorization"), **json.loads(request.content)}
        )
        body = reply(seen[-1]) if callable(reply) else reply
        return httpx.Response(status, json=body) if not isinstance(body, str) else httpx.Response(status, text=body)

    return httpx.MockTransport(handle)


def test_openai_backend_without_a_base_url_is_a_config_error_naming_the_key(tmp_path: Path):
    config = make_config(tmp_path, {}, engine={"backend": "openai"})
    with pytest.raises(ConfigError, match=r"nexus\.engine.*base_url"):
        engine_settings(config)


async def test_arguments_are_asked_greedily_under_the_grammar_at_the_configured_field():
    seen: list[dict[str, Any]] = []
    reply = {"choices": [{"text": ' {"city": "Paris"}'}], "usage": {"prompt_tokens": 300, "completion_tokens": 6}}
    settings = _settings(api_key="secret", grammar_field="structured_outputs.grammar")
    async with RemoteEngine(settings, transport=_server(reply, seen)) as engine:
        session = await engine.open_session()
        decoded = await engine.decode_arguments(session, tool_records([WEATHER])["get_weather"], "Paris?", HOW)
    sent = seen[0]
    assert decoded.text == '{"city": "Paris"}' and decoded.complete and decoded.n_tokens == 6
    assert decoded.placement is not None and decoded.placement.mode == "prefill"
    assert sent["url"] == "http://inference.test/v1/completions" and sent["auth"] == "Bearer secret"
    assert sent["structured_outputs"] == {"grammar": HOW.grammar} and "grammar" not in sent
    assert sent["temperature"] == 0 and sent["repeat_penalty"] == 1.0 and sent["model"] == "qwen"
    assert sent["prompt"].endswith("<|im_start|>assistant\n") and "Tool: get_weather(city: str)" in sent["prompt"]


async def test_a_session_keeps_its_turns_as_text_and_starts_over_past_its_depth():
    seen: list[dict[str, Any]] = []
    reply = {"choices": [{"text": "{}"}]}
    from nexus_gateway.engine import Turn

    async with RemoteEngine(_settings(), transport=_server(reply, seen)) as engine:
        session = await engine.open_session()
        await engine.append_turn(session, Turn("first request", "{}"), max_depth=1000)
        await engine.decode_arguments(session, tool_records([WEATHER])["get_weather"], "Paris?", HOW)
        assert "first request" in seen[-1]["prompt"] and await engine.depth(session) > 0
        await engine.append_turn(session, Turn("second " * 200, "{}"), max_depth=20)
        await engine.decode_arguments(session, tool_records([WEATHER])["get_weather"], "Paris?", HOW)
    assert "first request" not in seen[-1]["prompt"] and await engine.depth(session) <= 20


async def test_a_forked_session_starts_with_its_sessions_turns_and_goes_its_own_way():
    from nexus_gateway.engine import Turn

    async with RemoteEngine(_settings(), transport=_server({"choices": [{"text": "{}"}]}, [])) as engine:
        session = await engine.open_session()
        await engine.append_turn(session, Turn("first request", "{}"), max_depth=1000)
        fork = await engine.fork_session(session)
        assert fork != session and await engine.depth(fork) == await engine.depth(session) > 0
        await engine.append_turn(fork, Turn("only in the fork", "{}"), max_depth=1000)
        await engine.close_session(fork)
        assert "only in the fork" not in "".join(engine._turns(session))


async def test_forced_scoring_sums_the_log_probabilities_of_the_request_after_each_tool_and_none():
    seen: list[dict[str, Any]] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        lp = [-1.0, -1.0] if "get_weather" in body["prompt"] else [-3.0, -3.0]
        return {"choices": [{"text": "Paris weather", "logprobs": {"token_logprobs": lp}}]}

    async with RemoteEngine(_settings(), transport=_server(reply, seen)) as engine:
        scored = await engine.request_likelihoods(list(tool_records([WEATHER]).values()), "Paris weather")
    assert scored.per_tool == (-2.0,) and scored.without == -6.0 and len(seen) == 2
    assert seen[0]["grammar"] == gbnf_literal("Paris weather") and seen[0]["logprobs"] == 1


async def test_echo_scoring_reads_only_the_requests_tokens_by_their_text_offsets():
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        start = len(body["prompt"]) - len("Paris weather")
        offsets = [0, 5, start, start + 5, len(body["prompt"])]  # two of the prompt, two of the request, one generated
        return {
            "choices": [
                {
                    "text": body["prompt"] + "!",
                    "logprobs": {"text_offset": offsets, "token_logprobs": [None, -9.0, -1.5, -0.5, -7.0]},
                }
            ]
        }

    async with RemoteEngine(_settings(scoring="echo"), transport=_server(reply, [])) as engine:
        scored = await engine.request_likelihoods(list(tool_records([WEATHER]).values()), "Paris weather")
    assert scored.per_tool == (-2.0,) and scored.without == -2.0


@pytest.mark.parametrize(
    ("reply", "status", "message"),
    [
        ("<html>busy</html>", 200, "not an OpenAI completion"),
        ({"choices": []}, 200, "not an OpenAI completion"),
        ({"error": "model not loaded"}, 503, "answered HTTP 503"),
    ],
)
async def test_a_server_answering_garbage_is_an_engine_error_that_names_it(reply: Any, status: int, message: str):
    async with RemoteEngine(_settings(), transport=_server(reply, [], status)) as engine:
        session = await engine.open_session()
        with pytest.raises(EngineError, match=message) as caught:
            await engine.decode_arguments(session, tool_records([WEATHER])["get_weather"], "Paris?", HOW)
    assert "http://inference.test/v1" in str(caught.value)


async def test_scoring_without_log_probabilities_says_what_the_server_needs():
    reply = {"choices": [{"text": "Paris weather", "logprobs": None}]}
    async with RemoteEngine(_settings(), transport=_server(reply, [])) as engine:
        with pytest.raises(EngineError, match="logits_all"):
            await engine.request_likelihoods(list(tool_records([WEATHER]).values()), "Paris weather")


async def test_run_against_an_unreachable_server_is_an_error_result_and_the_gateway_keeps_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """run_mode splice (the default) on a remote backend prefills the schema, and the log says so."""
    caplog.set_level(logging.INFO, logger="nexus_gateway.meta.run")
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    notes = stdio_entry(str(EXAMPLES / "servers" / "notes_server.py"))
    config = make_config(
        tmp_path, {"notes": notes}, mode="routed", embedder="hashing", engine={"backend": "openai", "base_url": url}
    )
    async with running_gateway(config) as (gateway, client):
        with anyio.fail_after(60):
            failed = await client.call_tool("run", {"request": "create a note called groceries saying buy milk"})
            found = await client.call_tool("search_tools", {"query": "create a note"})
        loaded = MetaTools.of(gateway).engine_loaded  # the remote engine is up; only its server is not
    assert "KV-block splicing needs the local engine" in caplog.text
    assert loaded and failed.is_error and "cannot reach the inference server at " + url in text_of(failed), text_of(
        failed
    )
    assert not found.is_error and "notes__create_note" in text_of(found)
