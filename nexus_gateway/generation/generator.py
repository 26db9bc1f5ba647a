"""`ArgumentGenerator`: a request and a chosen tool in, arguments that validate out, with the trace.

Three ways to show the tool to the model, in the same slot of the prompt (engine/prompt.py):

    signature   its compressed one-line signature, prefilled (the default: fewest tokens)
    splice      its full schema as a compiled KV block, spliced as the depth policy says
    prefill     its full schema text, prefilled (the baseline)

In splice mode a tool whose full schema would be prefilled is shown in the `cold` form when one is given
(`run` gives `signature`: a 900-token schema takes 10-20 s to decode on 2 cores, its signature about one):
its block is not compiled yet (it is compiled afterwards, off the request's path: `compile_pending`), or
the session is deeper than the splice policy trusts a splice at. Without a `cold` form the block is
compiled first.

Decoding is greedy under a grammar built from the tool's JSON Schema (grammar.py), without the optional
parameters the request can give no value of (stated.py's `unstatable`: they would be left out after
decoding anyway; an enum whose choice the request names in other words, paraphrase.py, is given that choice
after decoding), and an optional free-text value is closed as soon as it stops copying the request
(`Decoding.copied_only`). The text parses and, for the schemas the grammar expresses, validates;
it is checked with jsonschema all the same. What fails is mended without guessing (repair.py: a value in
its type's other spelling, a required default, an invalid optional value left out), and re-decoded once
with the validation error before that; what still fails keeps its problems and is never called. Required
identifiers the request does not give (facts.py) are reported `missing`, for the host to supply.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

import anyio

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.validation import schema_problems
from nexus_gateway.config import ToolForm
from nexus_gateway.engine import CLOSING_TOKENS, DRAFT_TOKENS, Decoded, Decoding, Engine, Session
from nexus_gateway.errors import ConfigError, GrammarRejected
from nexus_gateway.generation.domains import zones_as_stated
from nexus_gateway.generation.facts import missing_facts
from nexus_gateway.generation.formats import as_said, in_asked_form, quantity_echoes
from nexus_gateway.generation.grammar import GrammarPlan, grammar_for, looser, parse_object
from nexus_gateway.generation.grounding import (
    as_written,
    invented_optional,
    narrowed_schema,
    stated_values,
    ungrounded,
    without_nested_inventions,
)
from nexus_gateway.generation.paraphrase import ParaphrasedChoices
from nexus_gateway.generation.plain import plain
from nexus_gateway.generation.repair import coerced, retry_note, with_defaults, without_invalid
from nexus_gateway.generation.stated import (
    case_switches,
    composed_paths,
    day_lists,
    directed,
    free_text_optionals,
    full_names,
    named_choices,
    named_parameters,
    one_place,
    split_slugs,
    stated_choices,
    switched_on,
    topic_only,
    unstatable,
    unstated_choices,
    whole_enumerations,
    whole_lists,
)

logger = logging.getLogger(__name__)

FORMS: tuple[ToolForm, ...] = get_args(ToolForm)
_PLAN_CACHE_LIMIT = 2048
COPY_BIAS = 2.0
"""Logits given to tokens that copy the request into a string value (`engine/copying.py`)."""

BUDGET_BASE, BUDGET_PER_CHAR = 48, 0.75


def token_budget(query: str, ceiling: int) -> int:
    """Tokens the arguments of `query` may take: `BUDGET_BASE` for keys and JSON, and about three tokens for
    each token of the request (a character is about a quarter of one), at most `ceiling`. What arguments
    say comes from the request, so they are not much longer than it; past that the model is writing optional
    parameters the request never states (`"timestamps": false, "previous": false, ...` took 160 tokens, 8 s
    on 2 cores, for "show the logs of pod api-7d9f"). The required parameters come first in every grammar,
    and a budget that runs out closes the object (decoding.py's closing mode)."""
    return min(ceiling, BUDGET_BASE + int(len(query) * BUDGET_PER_CHAR))


_NOTHING_TO_DECODE = Decoded("{}", True, None, 0, 0.0, 0.0)


@dataclass(frozen=True)
class Generated:
    tool: str
    arguments: dict[str, Any] | None
    """The decoded arguments; None when the output was not a complete JSON object."""
    text: str
    mode: ToolForm
    grammar: str
    """`schema`, or `<loose|skeleton|generic>: <why>` when the schema's own grammar could not be used."""
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
    passes: int = 0
    """Passes over the model to decode the `n_tokens` (fewer where drafted tokens were taken: engine/lookahead.py)."""
    closed_early: bool = False
    """The token budget ran out and the grammar closed the object (decoding.py: closing mode)."""
    missing: tuple[str, ...] = field(default=())
    """Required parameters whose values are facts the request does not give (facts.py: an id, a ticker):
    the model's values are kept in `arguments` (they validate) but should not be called with; ask for them."""
    repaired: tuple[str, ...] = field(default=())
    """What was done to make the arguments validate: `coerced`, `retried`, `defaults`, `left out: <names>`."""
    retries: int = 0
    unstated: tuple[str, ...] = field(default=())
    """Optional parameters left out of the grammar: the request gives no value of them (`stated.unstatable`)."""
    cut: tuple[str, ...] = field(default=())
    """Optional free-text values closed where they stopped copying the request (`Decoded.cut`)."""

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
            "missing": list(self.missing),
            "repaired": list(self.repaired),
            "mode": self.mode,
            "grammar": self.grammar,
            "placement": self.placement,
            "closed_early": self.closed_early,
            "unstated": list(self.unstated),
            "cut": list(self.cut),
            "ttft_ms": self.ttft_ms,
            "total_ms": self.total_ms,
            "tokens": self.n_tokens,
            "passes": self.passes,
        }


def check_mode(mode: str) -> ToolForm:
    for form in FORMS:
        if mode == form:
            return form
    raise ConfigError(f"argument mode must be one of {', '.join(FORMS)}, not {mode!r}")


class ArgumentGenerator:
    def __init__(
        self,
        engine: Engine,
        *,
        mode: ToolForm = "signature",
        max_tokens: int = 160,
        copy_bias: float = COPY_BIAS,
        cold: ToolForm | None = None,
        draft_tokens: int = DRAFT_TOKENS,
        choices: ParaphrasedChoices | None = None,
    ) -> None:
        """`choices`: reads the enum choices a request names in other words (paraphrase.py); None reads none."""
        self.engine = engine
        self.mode = check_mode(mode)
        self.cold = check_mode(cold) if cold is not None else None
        """Splice mode: how a tool whose full schema would be prefilled is shown (None: compile its block first)."""
        self.max_tokens = max_tokens
        self.copy_bias = copy_bias
        self.choices = choices
        self.draft_tokens = draft_tokens
        """Tokens drafted ahead of each decoding step (engine/lookahead.py): fewer passes, the same arguments."""
        self._plans: dict[str, GrammarPlan] = {}
        self._views: dict[str, dict[str, Any]] = {}
        self._compiled: set[str] = set()
        self.pending: dict[str, ToolRecord] = {}
        """Tools shown in the `cold` form whose blocks are still to compile (`compile_pending`)."""

    def plan(self, record: ToolRecord, without: Sequence[str] = ()) -> GrammarPlan:
        """The grammar plan of `record`'s schema, `without` some optional parameters (cached either way)."""
        key = record.content_hash or record.name
        if without:
            key = f"{key}\0{','.join(sorted(without))}"
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE_LIMIT:
                self._plans.clear()
            plan = self._plans[key] = grammar_for(_without(record.input_schema, without))
        return plan

    def view(self, record: ToolRecord) -> dict[str, Any]:
        """`record`'s input schema as the argument rules read it (plain.py: `$ref`s followed, optional
        wrappers taken off); decoding and validation keep the schema itself. Cached per tool definition."""
        key = record.content_hash or record.name
        view = self._views.get(key)
        if view is None:
            if len(self._views) >= _PLAN_CACHE_LIMIT:
                self._views.clear()
            view = self._views[key] = plain(record.input_schema)
        return view

    def _decoding(self, plan: GrammarPlan, form: ToolForm, query: str, free: Sequence[str] = ()) -> Decoding:
        budget = token_budget(query, self.max_tokens)
        return Decoding(
            grammar=plan.gbnf,
            opens_key=plan.opens_key,
            form=form,
            max_tokens=budget,
            copy_bias=self.copy_bias,
            copied_only=tuple(free),
            draft_tokens=self.draft_tokens,
        )

    async def _decode(
        self, session: Session, record: ToolRecord, query: str, plan: GrammarPlan, how: Decoding, *, keep: bool
    ) -> tuple[GrammarPlan, Decoding, Decoded]:
        """Decode under `plan`'s grammar, or, when llama.cpp will not parse it, under the next looser one
        (`grammar.looser`), remembered for the tool when `keep`. The grammar that was used comes back too."""
        for attempt in (plan, *looser(record.input_schema, plan)):
            how = how if attempt is plan else self._decoding(attempt, how.form, query, how.copied_only)
            try:
                decoded = await self.engine.decode_arguments(session, record, query, how)
            except GrammarRejected:
                logger.warning("%s: llama.cpp rejected its %s grammar; trying a looser one", record.name, attempt.kind)
                continue
            if keep and attempt is not plan:
                self._plans[record.content_hash or record.name] = attempt
            return attempt, how, decoded
        raise GrammarRejected(f"llama.cpp rejected every grammar for {record.name}, the generic JSON object's too")

    async def prepare(self, records: list[ToolRecord]) -> None:
        """Compile the blocks `splice` mode needs (incremental: known blocks are skipped)."""
        todo = [record for record in records if (record.content_hash or record.name) not in self._compiled]
        if todo:
            await self.engine.prepare_blocks(todo)
            self._compiled.update(record.content_hash or record.name for record in todo)

    async def compile_pending(self, between: Callable[[], Awaitable[bool]] | None = None) -> int:
        """Compile the blocks of the tools shown cold so far, one tool per engine job (a request waits for
        at most one), awaiting `between()` before each (False: stop); how many were compiled."""
        done = 0
        while self.pending:
            if between is not None and not await between():
                break
            if not self.pending:
                break
            key, record = next(iter(self.pending.items()))
            await self.prepare([record])
            self.pending.pop(key, None)
            done += 1
        return done

    async def _form(self, session: Session, record: ToolRecord, chosen: ToolForm) -> ToolForm:
        """The form `record` is shown in: `chosen`, or the cold form when its full schema would be prefilled
        (no block compiled yet: compiled later; a session too deep to splice into)."""
        if chosen != "splice":
            return chosen
        if self.cold is None:
            await self.prepare([record])
            return chosen
        why = await self.engine.cold_schema(session, record)
        if why is None:
            return chosen
        if why == "uncompiled":
            self.pending[record.content_hash or record.name] = record
        return self.cold

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
        chosen = await self._form(session, record, mode or self.mode)
        view = self.view(record)
        said: dict[str, Any] = {**switched_on(query, view), **case_switches(query, view), **day_lists(query, view)}
        if self.choices:
            said |= await anyio.to_thread.run_sync(self.choices.said, query, view)
        unfillable = unstatable(query, view)  # a choice `said` names is given after decoding
        if narrowed:
            plan = grammar_for(_without(narrowed_schema(view, narrowed), unfillable))
        else:
            plan = self.plan(record, unfillable)
        decoded = _NOTHING_TO_DECODE
        how = self._decoding(plan, chosen, query, free_text_optionals(view))
        if not plan.empty:
            keep = not narrowed and not unfillable  # a looser grammar found for the whole schema is the tool's
            plan, how, decoded = await self._decode(session, record, query, plan, how, keep=keep)
        schema, key = record.input_schema, record.content_hash or None
        arguments, dropped = _grounded(query, view, parse_object(decoded.text), said)
        left = [name for name in named_parameters(query, view) if name not in unfillable and name not in said]
        if arguments is not None and not plan.empty and not narrowed and any(n not in arguments for n in left):
            # the request names them with their values ("subject Sick day") and the model closed before them:
            # decoded once more with them required, kept when the request says more of the result
            wanted = grammar_for(_without(_requiring(schema, left), unfillable))
            again_how = self._decoding(wanted, chosen, query, how.copied_only)
            wanted, again_how, again = await self._decode(session, record, query, wanted, again_how, keep=False)
            second, second_dropped = _grounded(query, view, parse_object(again.text), said)
            if second is not None and stated_values(query, second, view) > stated_values(query, arguments, view):
                arguments, dropped, plan, how = second, second_dropped, wanted, again_how
                decoded = _combined(decoded, again, keep_second=True)
            else:
                decoded = _combined(decoded, again, keep_second=False)
        problems = self._problems(schema, arguments, key, how.max_tokens)
        repaired: list[str] = []
        retries = 0
        if problems and arguments is not None:
            arguments, repaired = _mended(schema, arguments, [])
            problems = self._problems(schema, arguments, key, how.max_tokens)
        if problems and not plan.empty:  # once more, told what was wrong
            retries = 1
            again = await self.engine.decode_arguments(session, record, query + retry_note(problems, decoded.text), how)
            second, second_dropped = _grounded(query, view, parse_object(again.text), said)
            if second is not None:
                second, steps = _mended(schema, second, ["retried"])
                second_problems = self._problems(schema, second, key, how.max_tokens)
                if len(second_problems) <= len(problems):
                    decoded = _combined(decoded, again, keep_second=True)
                    arguments, dropped, problems, repaired = second, second_dropped, second_problems, steps
        if problems and arguments is not None:  # last: leave out what fails and is not required
            arguments, left_out = without_invalid(schema, arguments)
            if left_out:
                repaired.append("left out: " + ", ".join(left_out))
                problems = self._problems(schema, arguments, key, how.max_tokens)
        invented = tuple(ungrounded(query, view, arguments)) if arguments else ()
        if problems and decoded.closed_early:  # a value the grammar cannot check (a format) was cut short
            problems = (f"the token budget ({how.max_tokens}) ran out and the arguments were closed early", *problems)
        return Generated(
            tool=record.name,
            arguments=arguments,
            text=decoded.text,
            mode=chosen,
            grammar="schema" if plan.kind == "schema" else f"{plan.kind}: {plan.reason}",
            placement=decoded.placement.mode if decoded.placement else None,
            problems=problems,
            dropped=dropped,
            ungrounded=invented,
            ttft_ms=round(decoded.ttft_s * 1000, 2),
            total_ms=round(decoded.total_s * 1000, 2),
            n_tokens=decoded.n_tokens,
            passes=decoded.passes,
            closed_early=decoded.closed_early,
            missing=tuple(missing_facts(view, arguments, invented)) if arguments else (),
            repaired=tuple(repaired),
            retries=retries,
            unstated=tuple(sorted(set(unfillable) - set(said))),
            cut=decoded.cut,
        )

    @staticmethod
    def _problems(
        schema: dict[str, Any], arguments: dict[str, Any] | None, key: str | None, budget: int
    ) -> tuple[str, ...]:
        if arguments is None:
            return (f"the arguments did not close within {budget} + {CLOSING_TOKENS} tokens",)
        return tuple(schema_problems(schema, arguments, key=key))


def _requiring(schema: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """`schema` with the parameters `names` required too, for decoding only."""
    required = list(schema.get("required") or [])
    return {**schema, "required": required + [name for name in names if name not in required]}


def _combined(first: Decoded, second: Decoded, *, keep_second: bool) -> Decoded:
    """The decoding kept (its text, placement, cut), with the tokens, passes and time of both: the trace
    counts all the work, and the first token came in the first one."""
    kept = second if keep_second else first
    return Decoded(
        kept.text,
        kept.complete,
        kept.placement,
        first.n_tokens + second.n_tokens,
        first.ttft_s,
        first.total_s + second.total_s,
        closed_early=kept.closed_early,
        passes=first.passes + second.passes,
        cut=kept.cut,
    )


def _without(schema: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """`schema` without the (optional) parameters `names`, for decoding only."""
    properties = schema.get("properties")
    if not names or not isinstance(properties, Mapping):
        return schema
    return {**schema, "properties": {name: spec for name, spec in properties.items() if name not in names}}


def _grounded(
    query: str, schema: dict[str, Any], arguments: dict[str, Any] | None, said: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The decoded arguments written as the request writes them, with its dates and durations as it says them,
    without the optional values and choices it never gave (grounding.py, stated.py), in the forms their
    descriptions ask for (formats.py), query values cut to their topic, lists the request gives copied whole,
    file names joined to the folder the request names, the choices it names in other words or as a set (`said`:
    paraphrase.py, `stated.day_lists`) given; and the names of the arguments left out."""
    if arguments is None:
        return arguments, ()
    arguments = as_said(query, schema, as_written(query, schema, arguments))
    arguments = {**zones_as_stated(query, schema, stated_choices(query, schema, arguments)), **(said or {})}
    arguments |= named_choices(query, schema, arguments) | whole_lists(query, schema, arguments)
    arguments |= whole_enumerations(query, schema, arguments)
    arguments = full_names(query, schema, directed(query, schema, one_place(query, schema, arguments)))
    arguments = without_nested_inventions(query, schema, arguments)
    dropped = tuple(invented_optional(query, schema, arguments))
    unstated = (name for name in unstated_choices(query, schema, arguments) if name not in (said or {}))
    dropped += tuple(name for name in unstated if name not in dropped)
    kept = in_asked_form(query, schema, {name: value for name, value in arguments.items() if name not in dropped})
    echoed = tuple(quantity_echoes(query, schema, kept))
    kept = {name: value for name, value in kept.items() if name not in echoed}
    return composed_paths(query, schema, split_slugs(query, schema, topic_only(schema, kept))), dropped + echoed


def _mended(schema: dict[str, Any], arguments: dict[str, Any], steps: list[str]) -> tuple[dict[str, Any], list[str]]:
    """`arguments` with values in their declared types' spellings and required defaults filled (repair.py)."""
    fixed = coerced(schema, arguments)
    if fixed != arguments:
        steps = [*steps, "coerced"]
    filled = with_defaults(schema, fixed)
    if filled != fixed:
        steps = [*steps, "defaults"]
    return filled, steps
