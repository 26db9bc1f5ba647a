"""Which servers a request names: "... on github", "scrape it with firecrawl", "run it on postgres".

    named_servers("who on github goes by torvalds", ["npm-github", "npm-firecrawl"]) -> {"npm-github"}

A server is named when the request uses a word of its name (`server_words`: `npm-github` -> github,
`chrome-devtools` -> chrome, devtool; packaging words such as npm, mcp and server say nothing), read as
routing reads it (query.py: a file called like a server names it no more than its kind). Retrieval does not
weigh these (a server's name as a field cost top-1 on the development sets: `bm25.LEXICAL_WEIGHTS`); `run`
does not call a tool of another server than the ones named without asking (meta/run.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from nexus_gateway.routing.bm25 import tokenize
from nexus_gateway.routing.query import routing_text
from nexus_gateway.routing.retriever import words_of

GENERIC_SERVER_WORDS = frozenset(
    {"mcp", "server", "servers", "npm", "npx", "py", "python", "node", "api", "tool", "tools"}
)
"""Words of server names that say nothing of which server (`npm-github`, `mcp-server-git`, `github-mcp`)."""


def server_words(server: str) -> frozenset[str]:
    """The words of a server's name that could name it in a request: `npm-github` -> {github},
    `chrome-devtools` -> {chrome, devtool} (stemmed as BM25 stems), none shorter than 3 letters."""
    return frozenset(w for w in tokenize(words_of(server)) if len(w) >= 3 and w not in GENERIC_SERVER_WORDS)


FORMAT_APPS: dict[str, tuple[str, ...]] = {
    "docx": ("word",),
    "doc": ("word",),
    "xlsx": ("excel",),
    "xls": ("excel",),
    "xlsm": ("excel",),
    "pptx": ("powerpoint", "pptx"),
    "ppt": ("powerpoint", "pptx"),
}
"""A file's extension names the application of its format: "replace X in contract.docx" names a Word server."""


def named_servers(request: str, servers: Iterable[str]) -> frozenset[str]:
    """The servers among `servers` that `request` names by a word of their names (its paths, URLs and e-mail
    addresses read by their kind first, so a file called like a server does not name it; a file's extension
    names its format's application, `FORMAT_APPS`)."""
    tokens = tokenize(routing_text(request))
    words = set(tokens)
    words |= {app for kind, word in pairwise(tokens) if kind == "file" for app in FORMAT_APPS.get(word, ())}
    return frozenset(server for server in servers if server_words(server) & words)


def operation_words(tool: str) -> frozenset[str]:
    """A tool name's words, stemmed (`fork_repository`, `forkRepository` and `fork-repositories` alike)."""
    return frozenset(tokenize(words_of(tool)))
