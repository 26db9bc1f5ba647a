"""Exposed names: the one name a host sees for an upstream's tool, prompt or resource.

A server's names carry its prefix: `<server>__` by default, or the entry's `prefix` (`""` keeps the
upstream's names, so a gateway in front of one server looks exactly like it):

    time + get_current_time           -> time__get_current_time      (default prefix)
    prefix "gh_" + create_issue       -> gh_create_issue
    prefix ""    + create_issue       -> create_issue

Tool names always match `^[a-zA-Z0-9_-]{1,64}$`. With the default prefix the mapping from
(server, tool) to name is injective, and a pure function of the pair:

- the natural name `server__tool` is used when it is valid and reads back unambiguously: the server
  holds no `__` and does not end in `_`, so the first `__` of the name is the boundary (`a` +
  `_deploy` is `a___deploy`; `a_` + `deploy` would read back as `a` + `_deploy`, so it is not natural);
- any other pair gets a hashed name: its readable text with every run of `_` cut to one (so it holds
  no `__` and can never equal a natural name) and `_` + the first 12 hex digits of the SHA-256 of the
  exact pair, always the last 12 characters (so two hashed names are equal only if the digests are).

A custom prefix gives up that guarantee across servers (two servers with `prefix: ""` may both list
`search`): the catalog detects such collisions and withholds the later server's tool.
"""

from __future__ import annotations

import hashlib
import json
import re

SEPARATOR = "__"
MAX_NAME = 64
DIGEST_CHARS = 12
VALID_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
VALID_PREFIX = re.compile(r"[a-zA-Z0-9_-]{0,63}")
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_UNDERSCORES = re.compile(r"_{2,}")


def prefix_of(server: str, prefix: str | None) -> str:
    """The text a server's names start with: its configured `prefix`, else `<server>__`."""
    return f"{server}{SEPARATOR}" if prefix is None else prefix


def tool_name(server: str, tool: str, prefix: str | None = None) -> str:
    """The exposed name of `server`'s tool `tool`: valid, deterministic, unambiguous (see the module)."""
    if prefix is None:
        natural = f"{server}{SEPARATOR}{tool}"
        unambiguous = bool(tool) and SEPARATOR not in server and not server.endswith("_")
        if unambiguous and VALID_NAME.fullmatch(natural):
            return natural
    else:
        natural = prefix + tool
        if VALID_NAME.fullmatch(natural):
            return natural
    return _hashed(server, tool, natural)


def item_name(server: str, name: str, prefix: str | None = None) -> str:
    """The exposed name of a prompt or resource: the prefix and the upstream's name, as it is
    (MCP puts no pattern on these names, and `prefix: ""` must leave them untouched)."""
    return prefix_of(server, prefix) + name


def _hashed(server: str, tool: str, readable: str) -> str:
    digest = hashlib.sha256(json.dumps([server, tool]).encode()).hexdigest()[:DIGEST_CHARS]
    text = _UNDERSCORES.sub("_", _INVALID_CHAR.sub("_", readable)).strip("_")
    head = text[: MAX_NAME - DIGEST_CHARS - 1].rstrip("_")
    return f"{head}_{digest}" if head else digest
