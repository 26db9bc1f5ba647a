"""Usage examples: a few short requests a user would make of each tool, written by the local model.

    tool (name, description, parameters) -> Engine.complete under EXAMPLES_GRAMMAR -> ["...", "...", "..."]

Tools are then found by how they are used, not only by how they are described (Tool2Vec, Moon et al.
2024): the index holds each tool's examples beside its description, as extra vectors and lexical text, and a
tool scores by its description and its best example (routing/usage.py). The reply is decoded greedily under
a grammar that only admits a JSON list of `MIN_EXAMPLES` to `MAX_EXAMPLES` short strings, so it always parses;
a reply cut by the token budget keeps its complete strings. Examples are written once per tool definition (its
content hash) and kept in `ExampleCache` (example_cache.py). Everything here talks to the `Engine` protocol.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

import anyio

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.signatures import signature
from nexus_gateway.config import GatewayConfig
from nexus_gateway.engine import Engine

logger = logging.getLogger(__name__)

MIN_EXAMPLES, MAX_EXAMPLES = 3, 4
MAX_CHARS = 72
"""Longest example request (characters): a request a user types, not a paragraph."""
MAX_TOKENS = 96
"""Decoding budget of one tool's examples (4 requests of ~15 tokens, with the list's punctuation)."""
DESCRIPTION_WORDS = 40
"""How much of a tool's description the writer reads (its signature's form, every sentence up to this)."""
BATCH = 4
"""Tools written at once: their tokens share each decode (the engine batches concurrent stepped jobs)."""

EXAMPLES_GRAMMAR = (
    'root ::= "[" item ("," " " item){' + f"{MIN_EXAMPLES - 1},{MAX_EXAMPLES - 1}" + '} "]"\n'
    'item ::= "\\"" [A-Za-z0-9] char{' + f"4,{MAX_CHARS - 1}" + '} "\\""\n'
    'char ::= [^"\\\\\\x00-\\x1f]\n'
)
"""A JSON list of 3 or 4 strings, each 5 to 72 characters starting with a letter or digit, no escapes."""

INSTRUCTION = (
    "For each tool, write 3 or 4 short requests a user would type to get it used: everyday words, concrete "
    "values (names, places, dates, numbers, paths, ids), never the tool's own name or description.\n\n"
    "Tool: start_sprinklers(zone: str, minutes?: int) - Water a garden zone\n"
    '["water the rose bed for 10 minutes", "turn on the sprinklers in the back lawn", '
    '"give zone 3 a quick 5 minute soak"]\n\n'
    "Tool: feed_fish(tank_id: str, grams?: float) - Dispense food into an aquarium\n"
    '["feed the fish in tank A2", "drop 1.5 g of flakes into the reef tank", "did I feed tank 7? do it now"]\n\n'
    "Tool: rename_album(album_id: str, title: str) - Give a photo album a new title\n"
    '["call album 8812 Summer in Crete 2024", "rename my album wedding-pics to Anna & Tom", '
    '"change the title of album 55 to Road trip"]'
)
"""Made-up tools (no evaluation set's domain or wording: checked against every set under shared/data/dev and
evals/data), so what the model copies from them can favour no tool of a real catalog."""


def tool_query(record: ToolRecord) -> str:
    """The tool as the writer reads it (the user turn): its one-line signature with the description's first
    words."""
    name = record.upstream_name
    if record.server and name.startswith(f"{record.server}__"):  # evaluation sets spell names `server__tool`
        name = name[len(record.server) + 2 :]
    line = signature(
        name,
        record.description,
        record.input_schema,
        max_words=DESCRIPTION_WORDS,
        first_sentence=False,
    )
    return f"Tool: {line}"


_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def parse_examples(text: str) -> list[str]:
    """The requests in a reply: the whole list when it parses, else every complete string in it (a reply cut
    by the budget); blank and repeated ones dropped, order kept."""
    try:
        items = json.loads(text)
    except ValueError:
        items = [match.group(1) for match in _STRING.finditer(text)]
    if not isinstance(items, list):
        return []
    seen: dict[str, str] = {}
    for item in items:
        if isinstance(item, str) and (clean := " ".join(item.split())):
            seen.setdefault(clean.casefold(), clean)
    return list(seen.values())[:MAX_EXAMPLES]


@dataclass(frozen=True)
class Written:
    """One tool's examples as the model wrote them."""

    content_hash: str
    examples: tuple[str, ...]
    model: str
    decoded_tokens: int
    seconds: float


class ExampleWriter(Protocol):
    """What indexing needs of a writer: every tool's examples, each told to `done` as it is ready."""

    async def write(self, records: Sequence[ToolRecord], done: Callable[[Written], None]) -> None: ...


class ModelExampleWriter:
    """Writes examples with an `Engine`, `batch` tools at a time (their decoding steps are batched together)."""

    def __init__(self, engine: Engine, *, batch: int = BATCH, max_tokens: int = MAX_TOKENS) -> None:
        self.engine = engine
        self.batch = batch
        self.max_tokens = max_tokens

    async def write_one(self, record: ToolRecord) -> Written:
        done = await self.engine.complete(
            INSTRUCTION, "", tool_query(record), grammar=EXAMPLES_GRAMMAR, max_tokens=self.max_tokens
        )
        examples = tuple(parse_examples(done.text))
        return Written(record.content_hash, examples, done.model, done.decoded_tokens, done.total_s)

    async def write(self, records: Sequence[ToolRecord], done: Callable[[Written], None]) -> None:
        """Write every tool's examples, `batch` at once; `done(written)` is told each as it is ready."""
        limiter = anyio.CapacityLimiter(self.batch)

        async def one(record: ToolRecord) -> None:
            async with limiter:
                done(await self.write_one(record))

        async with anyio.create_task_group() as tasks:
            for record in records:
                tasks.start_soon(one, record)


@asynccontextmanager
async def local_writer(config: GatewayConfig, *, batch: int = BATCH) -> AsyncIterator[ModelExampleWriter]:
    """A writer on a local engine of its own for one round of writing: the configured model, one CPU thread at
    the lowest priority (`NICE`: requests, `run` included, take the cores first), `batch` tools at a time; on
    the `openai` backend, the inference server."""
    from nexus_gateway.engine.settings import engine_settings

    settings = engine_settings(config).model_copy(update={"sessions": batch + 1, "threads": 1, "decode_threads": 1})
    if settings.backend != "local":  # the inference server writes them: no model loads here
        from nexus_gateway.engine.backends import open_engine

        async with open_engine(settings) as remote:
            yield ModelExampleWriter(remote, batch=batch)
        return
    from nexus_gateway.engine.worker import LocalEngine

    async with LocalEngine(settings) as engine:
        await engine.run(_lower_priority)
        yield ModelExampleWriter(engine, batch=batch)


NICE = 19


def _lower_priority(_: object) -> None:
    """Run on the engine thread: lower its scheduling priority (Linux: per thread), where the OS allows."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except (OSError, AttributeError):
        logger.debug("could not lower the example writer's priority")
