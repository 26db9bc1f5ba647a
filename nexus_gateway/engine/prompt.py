"""The text the engine decodes, in one place: session preamble, tool text, request.

    <bos> preamble                    every session starts with it; blocks are compiled right after it
    [earlier turns of the session]    `depth` tokens (0 for a fresh session)
    tool text                         spliced block, or prefilled: the full schema or its signature
    request                           ends with `{"`: the next token is the first argument's

For Qwen (ChatML) the preamble opens the system turn, so the earlier turns and the tool text are part
of it, and the request closes it and holds the user turn and the start of the assistant's; for Gemma
the whole prompt is one user turn. The family comes from the GGUF's `general.architecture`.

The preamble is the anchor of every block: a block decoded after it at position `anchor` is exact when
spliced at depth 0, and must be shifted by `depth` positions otherwise. The wording follows the model's
chat template family so any GGUF can be used; changing it changes every block key (blocks recompile).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.signatures import signature
from nexus_gateway.engine import Turn

_FIELD = re.compile(r"\{(instruction|context|query)\}")
_INSTRUCTION = "You fill in the arguments of a tool call. Reply with one JSON object."
_RULES = (
    "Copy each value exactly as the request writes it: the whole phrase, in the request's own words and language. "
    "Never translate, shorten or reword a value. Put each value under the parameter it names. "
    "Leave out the optional parameters (marked ?) that the request gives no value for."
)
_EXAMPLES = (
    (
        "getPumpStatus(pump_type: str, site?: str, unit?: str, verbose?: bool) - Status of a pump",
        'Is the centrifugal water pump at "North Hall" running?',
        {"pump_type": "centrifugal water pump", "site": "North Hall"},
    ),
    (
        "render_phrase(text: str, target_language: str, tone?: str) - Translate a phrase",
        'How do I say "See you tomorrow, Anna" in Italian?',
        {"text": "See you tomorrow, Anna", "target_language": "Italian"},
    ),
    (
        "tail_file(path: str, lines?: int, follow?: bool) - Last lines of a file",
        "Show the last 5 lines of /var/log/app.log",
        {"path": "/var/log/app.log", "lines": 5},
    ),
)
"""Made-up tools (no evaluation set's wording): a whole phrase copied with its head noun, a quoted text kept
untranslated, a language named as written, an absolute path kept whole, a stated optional parameter given and
the unstated ones left out."""
_GUIDE = f"{_INSTRUCTION}\n{_RULES}\n\n" + "".join(
    f"Example tool: {tool}\nRequest: {request}\nArguments: {json.dumps(arguments)}\n\n"
    for tool, request, arguments in _EXAMPLES
)


@dataclass(frozen=True)
class PromptLayout:
    name: str
    preamble: str
    request: str
    """Request template; `{query}` is replaced by the request text."""
    turn: str = "{user}\n{model}\n"
    """How one earlier exchange is written into the session: `{user}` the request, `{model}` the arguments."""
    task: str = "{instruction}\n\n{context}\nRequest: {query}\nAnswer: "
    """A prompt of its own (a choice among tools): `{instruction}` and `{context}`, then the request."""

    def request_text(self, query: str) -> str:
        return self.request.replace("{query}", query.strip())

    def task_text(self, instruction: str, context: str, query: str) -> str:
        """A whole prompt for one task outside the sessions (no preamble): the reply comes next."""
        fields = {"instruction": instruction, "context": context, "query": query.strip()}
        return _FIELD.sub(lambda match: fields[match.group(1)], self.task)  # one pass: values stay as written

    def turn_text(self, turn: Turn) -> str:
        """An earlier exchange as the session keeps it (then `Result: ...` when the tool was called)."""
        text = self.turn.replace("{user}", turn.request).replace("{model}", turn.arguments)
        return text if turn.result is None else f"{text}Result: {turn.result}\n"


GEMMA = PromptLayout(
    name="gemma",
    preamble=f"<start_of_turn>user\n{_INSTRUCTION}\n",
    request='Request: {query}<end_of_turn>\n<start_of_turn>model\n{"',
    turn="Earlier request: {user}\nArguments: {model}\n",
    task="<start_of_turn>user\n{instruction}\n\n{context}\nRequest: {query}<end_of_turn>\n<start_of_turn>model\n",
)
CHATML = PromptLayout(
    name="chatml",
    preamble=f"<|im_start|>system\n{_GUIDE}",
    request='<|im_end|>\n<|im_start|>user\n{query}<|im_end|>\n<|im_start|>assistant\n{"',
    turn="Earlier request: {user}\nArguments: {model}\n",
    task="<|im_start|>system\n{instruction}\n\n{context}<|im_end|>\n<|im_start|>user\n{query}<|im_end|>\n"
    "<|im_start|>assistant\n",
)
"""Qwen2.5's chat turns, as its template writes a call with tools: the instruction (with the copying rules
and three worked examples; measured in the README), the session's earlier
turns and the tool all sit in the system turn, the request is the user turn, and the assistant turn is
primed with the object the grammar continues."""
PLAIN = PromptLayout(
    name="plain",
    preamble=f"{_INSTRUCTION}\n",
    request='Request: {query}\nArguments: {"',
    turn="Earlier request: {user}\nArguments: {model}\n",
)

_FAMILIES = {
    "gemma": GEMMA,
    "gemma2": GEMMA,
    "gemma3": GEMMA,
    "qwen2": CHATML,
    "qwen2moe": CHATML,
    "qwen3": CHATML,
    "qwen3moe": CHATML,
}
"""Layouts by GGUF `general.architecture`."""


def layout_for(architecture: str, chat_template: str | None = None) -> PromptLayout:
    """The layout of a model family, from the GGUF's `general.architecture`; for a family not listed, the
    chat template's turn markers (Gemma, ChatML) decide, else plain text."""
    if architecture in _FAMILIES:
        return _FAMILIES[architecture]
    template = chat_template or ""
    if "<start_of_turn>" in template:
        return GEMMA
    if "<|im_start|>" in template:
        return CHATML
    return PLAIN


def tool_text(record: ToolRecord) -> str:
    """The full tool as the model reads it: name, description and the JSON Schema of its parameters."""
    body = {"name": record.name, "description": record.description, "parameters": record.input_schema}
    return "Tool: " + json.dumps(body, ensure_ascii=False) + "\n"


TOOL_LINE_WORDS = 48
"""How much of a tool's description its line keeps (`tool_line`)."""


def tool_line(record: ToolRecord, max_words: int = TOOL_LINE_WORDS) -> str:
    """The tool in one line, in the tool text's slot: the signature's form (name, parameters with their
    types, `?` for optional ones), with every sentence of the description up to `max_words` words where the
    listed signature keeps the first sentence's first 12. The re-ranker reads it to judge what a tool is for
    (the later sentences often say it: "..., stocks, cryptocurrencies, and more"), and the signature-form
    fill reads the same line, so one compiled block serves both. Read by the fill in place of the listed
    signature, it made more arguments exact on the sets written blind to the code and left the development
    sets' figures as they were (docs/benchmarks.md, session 28)."""
    line = signature(record.name, record.description, record.input_schema, max_words=max_words, first_sentence=False)
    return "Tool: " + line + "\n"
