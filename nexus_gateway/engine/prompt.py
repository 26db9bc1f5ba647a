"""The text the engine decodes, in one place: session preamble, tool text, request.

    <bos> preamble                    every session starts with it; blocks are compiled right after it
    [earlier turns of the session]    `depth` tokens (0 for a fresh session)
    tool text                         spliced block, or prefilled: the full schema or its signature
    request                           ends with `{"`: the next token is the first argument's

The preamble is the anchor of every block: a block decoded after it at position `anchor` is exact when
spliced at depth 0, and must be shifted by `depth` positions otherwise. The wording follows the model's
chat template family so any GGUF can be used; changing it changes every block key (blocks recompile).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Turn

_INSTRUCTION = "You fill in the arguments of a tool call. Reply with one JSON object."


@dataclass(frozen=True)
class PromptLayout:
    name: str
    preamble: str
    request: str
    """Request template; `{query}` is replaced by the request text."""
    turn: str = "{user}\n{model}\n"
    """How one earlier exchange is written into the session: `{user}` the request, `{model}` the arguments."""

    def request_text(self, query: str) -> str:
        return self.request.replace("{query}", query.strip())

    def turn_text(self, turn: Turn) -> str:
        """An earlier exchange as the session keeps it (then `Result: ...` when the tool was called)."""
        text = self.turn.replace("{user}", turn.request).replace("{model}", turn.arguments)
        return text if turn.result is None else f"{text}Result: {turn.result}\n"


GEMMA = PromptLayout(
    name="gemma",
    preamble=f"<start_of_turn>user\n{_INSTRUCTION}\n",
    request='Request: {query}<end_of_turn>\n<start_of_turn>model\n{"',
    turn="Earlier request: {user}\nArguments: {model}\n",
)
CHATML = PromptLayout(
    name="chatml",
    preamble=f"<|im_start|>system\n{_INSTRUCTION}<|im_end|>\n<|im_start|>user\n",
    request='Request: {query}<|im_end|>\n<|im_start|>assistant\n{"',
    turn="Earlier request: {user}\nArguments: {model}\n",
)
PLAIN = PromptLayout(
    name="plain",
    preamble=f"{_INSTRUCTION}\n",
    request='Request: {query}\nArguments: {"',
    turn="Earlier request: {user}\nArguments: {model}\n",
)


def layout_for(chat_template: str | None) -> PromptLayout:
    """The layout matching a GGUF's chat template (Gemma, ChatML), plain text otherwise."""
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


def signature_text(record: ToolRecord) -> str:
    """The compressed one-line signature in the same slot (the cheaper alternative to the full schema)."""
    return "Tool: " + record.signature + "\n"
