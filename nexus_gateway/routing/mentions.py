"""Which servers a request names: "... on github", "scrape it with firecrawl", "run it on postgres".

    named_servers("who on github goes by torvalds", ["npm-github", "npm-firecrawl"]) -> {"npm-github"}

A server is named when the request uses a word of its name (`server_words`: `npm-github` -> github,
`chrome-devtools` -> chrome, devtool; packaging words such as npm, mcp and server say nothing), read as
routing reads it (query.py: a file called like a server names it no more than its kind). A server's name is
weak evidence as a field of every tool (it cost top-1 on the development sets: `bm25.LEXICAL_WEIGHTS`), but a
request that names a server is strong evidence for that server's tools: retrieval adds `MENTION_BONUS` to
their scores (`mention_bonus`), and `run` does not call a tool of another server than the ones named without
asking (meta/run.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from itertools import pairwise

import numpy as np

from nexus_gateway.routing.bm25 import tokenize
from nexus_gateway.routing.query import routing_text
from nexus_gateway.routing.retriever import words_of

GENERIC_SERVER_WORDS = frozenset(
    {"mcp", "server", "servers", "npm", "npx", "py", "python", "node", "api", "tool", "tools"}
)
"""Words of server names that say nothing of which server (`npm-github`, `mcp-server-git`, `github-mcp`)."""


@functools.lru_cache(maxsize=4096)
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


_SLUG = re.compile(r"(?<![\w./@~-])[\w.-]+/[\w.-]+(?![\w/@-])")
"""An `owner/name` slug: its words name a repository or a chart, not a server (`kubernetes/kubernetes` on GitHub)."""


def named_servers(request: str, servers: Iterable[str]) -> frozenset[str]:
    """The servers among `servers` that `request` names by a word of their names (its paths, URLs and e-mail
    addresses read by their kind first, so a file called like a server does not name it, and its `owner/name`
    slugs left out; a file's extension names its format's application, `FORMAT_APPS`)."""
    tokens = tokenize(_SLUG.sub(" ", routing_text(request)))
    words = set(tokens)
    words |= {app for kind, word in pairwise(tokens) if kind == "file" for app in FORMAT_APPS.get(word, ())}
    return frozenset(server for server in servers if server_words(server) & words)


def operation_words(tool: str) -> frozenset[str]:
    """A tool name's words, stemmed (`fork_repository`, `forkRepository` and `fork-repositories` alike)."""
    return frozenset(tokenize(words_of(tool)))


MENTION_BONUS = 0.1
"""Added to the fused score (a cosine plus 0.2 x normalized BM25) of every tool of a server the request names.
Chosen 2026-12-04 on the everyday dev, held-out and check sets over the 843-tool catalog (0.05, 0.1, 0.15 and 0.2
tried: most of the gain is there at 0.1, above it a case or two either way); MetaTool and Seal-Tools name no
servers and are unchanged."""


def mention_bonus(request: str, servers: Sequence[str] | np.ndarray, bonus: float = MENTION_BONUS) -> np.ndarray:
    """`bonus` for each tool (by its server, `servers[i]`) of a server `request` names, 0 for the others."""
    named = named_servers(request, set(servers))
    return np.array([bonus if server in named else 0.0 for server in servers], dtype=np.float64)
