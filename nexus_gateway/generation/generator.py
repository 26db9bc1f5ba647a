"""`ArgumentGenerator`: a request and a chosen tool in, arguments that validate out, with the trace.

Three ways to show the tool to the model, in the same slot of the prompt (engine/prompt.py):

    signature   its compressed one-line signature, prefilled (the default: fewest tokens)
    splice      its full schema as a compiled KV block, spliced as the depth policy says
    prefill     its full schema text, prefilled (the baseline)

Decoding is greedy under a grammar built from the tool's JSON Schema (grammar.py), so the text parses
and, for the schemas the grammar expresses, validates; it is checked with jsonschema all the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.validation import schema_problems
from nexus_gateway.config import ToolForm
from nexus_gateway.engine import Decoded, Decoding, Engine, Session
from nexus_gateway.engine.decoding import CLOSING_TOKENS
from nexus_gateway.errors import ConfigError
from nexus_gateway.generation.grammar import GrammarPlan, grammar_for, parse_object
from nexus_gateway.generation.grounding import as_written, invented_optional, narrowed_schema, ungrounded

FORMS: tuple[ToolForm, ...] = get_args(ToolForm)
_PLAN_CACHE_LIMIT = 2048
COPY_BIAS = 2.0
"""Logits given to tokens that copy the request into a string value (`engine/copying.py`)."""
_NOTHING_TO_DECODE = Decoded("{}", True, None, 0, 0.0, 0.0)


@dataclass(frozen=True)
class Generated:
    tool: str
    arguments: dict[str, Any] | None
    """The decoded arguments; None when the output was not a complete JSON object."""
    text: str
    mode: ToolForm
    grammar: str
    """`schema`, or `generic: <why>` when the schema could not be turned into a grammar."""
    placement: str | None
    """How the tool text entered the context: prefill, splice or recompute (None for a tool without parameters)."""
    problems: tuple[str, ...] = field(default=())
    """jsonschema's complaints about `arguments`."""
    dropped: tuple[str, ...] = field(default=())
    """Optional arguments the model filled with values the request does not contain (removed)."""
    ungrounded: tuple[str, ...] = field(default=())
    """Arguments kept whose values the request does not contain as written (required ones: invented)."""
    ttft_ms: float = 0.0
    total_ms: float = 0.0
    n_tokens: int = 0
    closed_early: bool = False
    """The token budget ran out and the grammar closed the object (decoding.py: closing mode)."""

    @property
    def json_valid(self) -> bool:
        return self.arguments is not None

    @property
    def schema_valid(self) -> bool:
        return self.arguments is not None and not self.problems

    def trace(self) -> dict[str, Any]:
        return {
            "arguments": self.arguments,
            "dropped": list(self.dropped),
            "ungrounded": list(self.ungrounded),
            "mode": self.mode,
            "grammar": self.grammar,
            "placement": self.placement,
            "closed_early": self.closed_early,
            "ttft_ms": self.ttft_ms,
            "total_ms": self.total_ms,
            "tokens": self.n_tokens,
        }


def check_mode(mode: str) -> ToolForm:
    for form in FORMS:
        if mode == form:
            return form
    raise ConfigError(f"argument mode must be one of {', '.join(FORMS)}, not {mode!r}")


class ArgumentGenerator:
    def __init__(
        self, engine: Engine, *, mode: ToolForm = "signature", max_tokens: int = 160, copy_bias: float = COPY_BIAS
    ) -> None:
        self.engine = engine
        self.mode = check_mode(mode)
        self.max_tokens = max_tokens
        self.copy_bias = copy_bias
        self._plans: dict[str, GrammarPlan] = {}
        self._compiled: set[str] = set()

    def plan(self, record: ToolRecord) -> GrammarPlan:
        key = record.content_hash or record.name
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE_LIMIT:
                self._plans.clear()
            plan = self._plans[key] = grammar_for(record.input_schema)
        return plan

    async def prepare(self, records: list[ToolRecord]) -> None:
        """Compile the blocks `splice` mode needs (incremental: known blocks are skipped)."""
        todo = [record for record in records if (record.content_hash or record.name) not in self._compiled]
        if todo:
            await self.engine.prepare_blocks(todo)
            self._compiled.update(record.content_hash or record.name for record in todo)

    async def generate(
        self,
        session: Session,
        record: ToolRecord,
        query: str,
        *,
        mode: ToolForm | None = None,
        narrowed: Mapping[str, Sequence[Any]] | None = None,
    ) -> Generated:
        """Arguments for `record` from `query`, decoded in `session` (which is left as it was). `narrowed`:
        parameters decoded among these values only (grounding.narrowing: the request's own values of their
        kind), the rest as the schema says."""
        chosen = mode or self.mode
        plan = grammar_for(narrowed_schema(record.input_schema, narrowed)) if narrowed else self.plan(record)
        if chosen == "splice":
            await self.prepare([record])
        decoded = _NOTHING_TO_DECODE
        if not plan.empty:
            how = Decoding(
                grammar=plan.gbnf,
                opens_key=plan.opens_key,
                form=chosen,
                max_tokens=self.max_tokens,
                copy_bias=self.copy_bias,
            )
            decoded = await self.engine.decode_arguments(session, record, query, how)
        arguments = parse_object(decoded.text)
        if arguments:
            arguments = as_written(query, record.input_schema, arguments)
        dropped = tuple(invented_optional(query, record.input_schema, arguments)) if arguments else ()
        if arguments and dropped:
            arguments = {name: value for name, value in arguments.items() if name not in dropped}
        invented = tuple(ungrounded(query, record.input_schema, arguments)) if arguments else ()
        problems = (
            tuple(schema_problems(record.input_schema, arguments, key=record.content_hash or None))
            if arguments is not None
            else (f"the arguments did not close within {self.max_tokens} + {CLOSING_TOKENS} tokens",)
        )
        if problems and decoded.closed_early:  # a value the grammar cannot check (a format) was cut short
            problems = (f"the token budget ({self.max_tokens}) ran out and the arguments were closed early", *problems)
        return Generated(
            tool=record.name,
            arguments=arguments,
            text=decoded.text,
            mode=chosen,
            grammar="schema" if plan.kind == "schema" else f"generic: {plan.reason}",
            placement=decoded.placement.mode if decoded.placement else None,
            problems=problems,
            dropped=dropped,
            ungrounded=invented,
            ttft_ms=round(decoded.ttft_s * 1000, 2),
            total_ms=round(decoded.total_s * 1000, 2),
            n_tokens=decoded.n_tokens,
            closed_early=decoded.closed_early,
        )
