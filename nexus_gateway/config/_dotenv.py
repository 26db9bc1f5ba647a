"""A `.env` file read the way VS Code reads a server's `envFile` (its `parseEnvFile`).

One `KEY=value` (or `KEY: value`) a line; blank lines and `#` comments skipped; a leading `export `
dropped; a `#` outside quotes starts a comment; a value wrapped in `"`, `'` or backquotes loses the
quotes, and inside `"` the escapes `\\n` and `\\r` become a newline and a carriage return. Nothing is
interpolated (`$OTHER` stays as it is).
"""

from __future__ import annotations

from collections.abc import Callable

_QUOTES = "\"'`"


def parse_env_file(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        separator = _outside_quotes(line, lambda char: char in "=:")
        if separator == -1:
            continue
        key, value = line[:separator].strip(), line[separator + 1 :].strip()
        comment = _outside_quotes(value, lambda char: char == "#")
        if comment != -1:
            value = value[:comment].strip()
        if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace("\\r", "\r")
        if key:
            values[key] = value
    return values


def _outside_quotes(text: str, wanted: Callable[[str], bool]) -> int:
    quote = ""
    for index, char in enumerate(text):
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = ""
        elif char in _QUOTES:
            quote = char
        elif wanted(char):
            return index
    return -1
