"""`RemoteEngine`: the `Engine` on an inference server that speaks the OpenAI completions API.

    argument filling   POST {base_url}/completions  prompt = preamble | history | tool text | request,
                       greedy (temperature 0, no penalties) under the tool's GBNF grammar (`grammar_field`)
    re-ranking         per candidate, log P(request | tool's line): `forced` generates the request under a
                       grammar that allows only its text and sums the `logprobs` of those tokens; `echo`
                       sends the whole text with `echo` + `logprobs` and sums the request's part
    usage examples     a short text under a grammar, as argument filling

The prompt is the local engine's own text (engine/prompt.py) sent as a raw completion prompt, so a server
running the same GGUF sees what the local engine decodes. What stays local: KV blocks (a `splice` is the
tool's full schema prefilled, what the local engine does past its depth policy's D), the copy bias (logits
moved token by token: 0 here) and closing mode (the budget is `max_tokens` plus the closing allowance). A
session's earlier turns are kept as text and resent with each request; its depth is estimated at
`CHARS_PER_TOKEN` characters a token.

Errors are translated once, here: an unreachable server, a timeout, an HTTP error or an answer that is
not a completion become `EngineError`s that say which server and what to do.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import (
    CLOSING_TOKENS,
    ColdSchema,
    Completion,
    Decoded,
    Decoding,
    Likelihoods,
    Session,
    Turn,
)
from nexus_gateway.engine.prompt import CHATML, GEMMA, PLAIN, PromptLayout, tool_line, tool_text
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.engine.splicer import Placement
from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""How a session's depth is estimated from its text (the server holds the tokenizer)."""
_LAYOUTS = {"chatml": CHATML, "gemma": GEMMA, "plain": PLAIN}
_GREEDY: dict[str, Any] = {
    "temperature": 0.0,
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
}
"""Greedy decoding, nothing else: the servers' defaults add a repeat penalty (llama_cpp.server: 1.1)."""


def remote_layout(settings: EngineSettings) -> PromptLayout:
    """The configured layout, else the model name's family: Gemma when it says so, else ChatML (Qwen)."""
    if settings.layout is not None:
        return _LAYOUTS[settings.layout]
    return GEMMA if "gemma" in (settings.model or "").lower() else CHATML


def gbnf_literal(text: str) -> str:
    """A GBNF grammar that admits exactly `text`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'root ::= "{escaped}"\n'


def _nested(body: dict[str, Any], dotted: str, value: object) -> None:
    """`body` with `value` at the dotted key (`structured_outputs.grammar`)."""
    *parents, last = dotted.split(".")
    for key in parents:
        body = body.setdefault(key, {})
    body[last] = value


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class RemoteEngine:
    """`async with RemoteEngine(settings) as engine: ...`; `transport` replaces the network in tests."""

    def __init__(self, settings: EngineSettings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if settings.base_url is None:
            raise EngineError("the openai engine backend needs nexus.engine.base_url")
        self.settings = settings
        self.base_url = settings.base_url.rstrip("/")
        self.layout = remote_layout(settings)
        self.model = f"openai:{settings.model or 'default'}@{self.base_url}"
        """What wrote a completion (`Completion.model`): the served model's name and the server."""
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._history: dict[int, list[str]] = {}
        self._next = 0

    async def __aenter__(self) -> RemoteEngine:
        headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}
        self._client = httpx.AsyncClient(timeout=self.settings.timeout, headers=headers, transport=self._transport)
        logger.info("engine: %s on the inference server %s (no model loads here)", self.settings.model, self.base_url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    # -- the wire --

    async def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /completions; the first choice, checked to be a completion."""
        if self._client is None:
            raise EngineError("the remote engine is not open")
        url = f"{self.base_url}/completions"
        payload = {**_GREEDY, **body, **({"model": self.settings.model} if self.settings.model else {})}
        try:
            response = await self._client.post(url, json=payload)
        except httpx.TimeoutException as exc:
            raise EngineError(
                f"the inference server at {self.base_url} did not answer within {self.settings.timeout:g} s "
                "(raise nexus.engine.timeout, or check the server)"
            ) from exc
        except httpx.HTTPError as exc:
            raise EngineError(
                f"cannot reach the inference server at {self.base_url} ({type(exc).__name__}: {exc}); "
                "start it, or correct nexus.engine.base_url"
            ) from exc
        if response.status_code >= 400:
            raise EngineError(
                f"the inference server at {self.base_url} answered HTTP {response.status_code}: {response.text[:300]!r}"
            )
        try:
            answer = response.json()
            choice = answer["choices"][0]
            if not isinstance(choice, dict) or not isinstance(choice.get("text"), str):
                raise TypeError("choices[0].text is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise EngineError(
                f"the inference server at {self.base_url} answered something that is not an OpenAI completion "
                f"({exc}): {response.text[:200]!r}"
            ) from exc
        usage = answer.get("usage")
        choice["_usage"] = usage if isinstance(usage, dict) else {}
        return choice

    def _constrained(self, prompt: str, grammar: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": prompt, "max_tokens": max_tokens, **extra}
        _nested(body, self.settings.grammar_field, grammar)
        return body

    # -- sessions: text kept here, resent with each request --

    async def open_session(self) -> Session:
        self._next += 1
        self._history[self._next] = []
        return Session(self._next)

    async def close_session(self, session: Session) -> None:
        self._history.pop(session.id, None)

    async def fork_session(self, session: Session) -> Session:
        fork = await self.open_session()
        self._history[fork.id] = list(self._turns(session))
        return fork

    def _turns(self, session: Session) -> list[str]:
        turns = self._history.get(session.id)
        if turns is None:
            raise EngineError(f"engine session {session.id} is not open")
        return turns

    async def depth(self, session: Session) -> int:
        return sum(len(text) for text in self._turns(session)) // CHARS_PER_TOKEN

    async def append_turn(self, session: Session, turn: Turn, *, max_depth: int) -> None:
        turns = self._turns(session)
        text = self.layout.turn_text(turn)
        if (sum(map(len, turns)) + len(text)) // CHARS_PER_TOKEN > max_depth:
            turns.clear()
            text = text[-max_depth * CHARS_PER_TOKEN :]
        turns.append(text)

    # -- the Engine's work --

    async def decode_arguments(self, session: Session, record: ToolRecord, query: str, how: Decoding) -> Decoded:
        """The arguments under the grammar; a `splice` prefills the full schema (blocks stay local)."""
        started = time.perf_counter()
        tool = tool_line(record) if how.form == "signature" else tool_text(record)
        request = self.layout.request_text(query)
        request = request[:-2] if request.endswith('{"') else request  # the grammar writes the whole object
        prompt = self.layout.preamble + "".join(self._turns(session)) + tool + request
        choice = await self._complete(self._constrained(prompt, how.grammar, how.max_tokens + CLOSING_TOKENS))
        text = choice["text"].strip()
        usage = choice["_usage"]
        elapsed = time.perf_counter() - started
        reason = "signature" if how.form == "signature" else "remote backend (blocks are local)"
        placement = Placement("prefill", int(usage.get("prompt_tokens") or 0), 0, reason)
        n_tokens = int(usage.get("completion_tokens") or 0)
        return Decoded(
            text,
            _is_object(text),
            placement,
            n_tokens,
            elapsed,
            elapsed,
            closed_early=n_tokens > how.max_tokens,
        )

    async def prepare_blocks(self, records: Sequence[ToolRecord]) -> None:
        """Nothing: KV blocks belong to an in-process engine."""

    async def cold_schema(self, session: Session, record: ToolRecord) -> ColdSchema | None:
        return None  # the server prefills the schema (and caches prompts its own way)

    async def prepare_scoring(self, records: Sequence[ToolRecord]) -> int:
        return 0

    async def request_likelihoods(self, records: Sequence[ToolRecord], query: str) -> Likelihoods:
        started = time.perf_counter()
        target = query.strip()
        opening, _, _ = self.layout.request.partition("{query}")
        if not target:
            raise EngineError("query likelihood needs a request")
        scores: list[float] = []
        tokens = counted = 0
        for record in [*records, None]:
            prefix = self.layout.preamble + (tool_line(record) if record is not None else "") + opening
            score, n, decoded = await self._likelihood(prefix, target)
            scores.append(score)
            tokens, counted = tokens + decoded, n
        return Likelihoods(tuple(scores[:-1]), scores[-1], counted, tokens, time.perf_counter() - started)

    async def _likelihood(self, prefix: str, target: str) -> tuple[float, int, int]:
        """log P(target | prefix) summed over the target's tokens; its tokens; the tokens decoded."""
        if self.settings.scoring == "echo":
            choice = await self._complete({"prompt": prefix + target, "max_tokens": 1, "echo": True, "logprobs": 0})
            logprobs = self._logprobs(choice)
            offsets = logprobs.get("text_offset")
            values = logprobs.get("token_logprobs")
            if not isinstance(offsets, list) or not isinstance(values, list) or len(offsets) != len(values):
                raise self._no_logprobs("echo")
            end = len(prefix) + len(target)  # the one generated token after it is not the request's
            picked: object = [
                value for offset, value in zip(offsets, values, strict=True) if len(prefix) <= offset < end
            ]
            decoded = int(choice["_usage"].get("prompt_tokens") or 0)
        else:
            body = self._constrained(prefix, gbnf_literal(target), len(target.encode()) + 4, logprobs=1)
            choice = await self._complete(body)
            if choice["text"] != target:
                raise EngineError(
                    f"the inference server at {self.base_url} did not follow the grammar (asked for the request "
                    f"{target!r}, got {choice['text'][:80]!r}); set nexus.engine.grammar_field to where it takes a "
                    "GBNF grammar"
                )
            picked = self._logprobs(choice).get("token_logprobs")
            decoded = len(picked) if isinstance(picked, list) else 0
        if not isinstance(picked, list) or not picked or not all(isinstance(v, int | float) for v in picked):
            raise self._no_logprobs(self.settings.scoring)
        return float(sum(picked)), len(picked), decoded

    def _logprobs(self, choice: dict[str, Any]) -> dict[str, Any]:
        logprobs = choice.get("logprobs")
        if not isinstance(logprobs, dict):
            raise self._no_logprobs(self.settings.scoring)
        return logprobs

    def _no_logprobs(self, how: str) -> EngineError:
        return EngineError(
            f"the inference server at {self.base_url} returned no usable log-probabilities ({how} scoring), which "
            "re-ranking needs: llama_cpp.server needs --logits_all true; or set nexus.engine.scoring to the other "
            "of forced / echo"
        )

    async def complete(
        self, instruction: str, context: str, query: str, *, grammar: str, max_tokens: int
    ) -> Completion:
        started = time.perf_counter()
        prompt = self.layout.task_text(instruction, context, query)
        choice = await self._complete(self._constrained(prompt, grammar, max_tokens))
        usage = choice["_usage"]
        return Completion(
            text=choice["text"],
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            decoded_tokens=int(usage.get("completion_tokens") or 0),
            total_s=time.perf_counter() - started,
            model=self.model,
        )
