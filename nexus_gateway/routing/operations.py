"""What a request asks to do, and whether a tool's name says the same.

    request_verb("create a jira ticket in project WEB")   -> "create"
    request_verb("what time is it in Paris?")             -> None (a question names no operation)
    conflict("create a jira ticket ...", "jira_get_project_fields")
        -> "the request asks to create, and jira_get_project_fields reads"

An imperative request begins with the operation it wants ("create", "reply", "install", "show"), after
politeness ("please", "can you") and a leading "with puppeteer," or "on github,". A tool's name says what it
does with a verb as often as not (`create_issue`, `get_project_fields`, `uninstall_helm_chart`). When both
say one, and they are of different kinds (a read against a write, an install against an uninstall), the tool
does something else than what was asked, however well its description and parameters match the request's
words: retrieval and the re-ranker both read those, and on the everyday sets that is how a wrong tool of the
right shape won (`jira_get_project_fields` for "create a jira ticket", `uninstall_helm_chart` for "install the
redis chart"). The same goes for a request whose verb names another candidate exactly ("reply 'on it' in the
thread": `reply_to_thread`, not `post_message`). `run` proposes instead of calling then (meta/run.py), and
retrieval takes `MISFIT_WEIGHT` from such a tool's score (`misfit_penalty`), so a near tie of a read and a write
goes to the one the request asks for; so does a tool for many at once where the request names one thing.

Pairs of names where one is the other's negation (`git_diff_staged` and `git_diff_unstaged`, `watch` and
`unwatch`) are told apart by the letters "un" alone, which neither retriever weighs: a tool whose name says the
negation of a word the request says, or the word the request negates, is a conflict too (`opposite`); a word the
request negates ("not staged", "isn't staged yet") counts as its "un" form.

Only the leading verb is read: a word like "post", "file", "list" or "set" is as often a noun ("the blog post",
"my todo list"), and a request that opens with its object states no operation, so nothing is concluded from it;
"open" is not read either (opening a pull request creates one, opening a file reads it); "get rid of" reads as
"remove" and "drop a comment" as "post". A tool's name says its operation by its first verb
(`get_pull_request_comments` reads: the "comment" after it is a noun). A question ("what's on my calendar",
"in mongodb, how many orders are pending?") asks to read (`asks_question`): a tool whose name only creates,
changes or deletes (`insert-many`) does something else; a tool whose name states no operation, or a read, is
no conflict. "how do I ..." and "how to ..." ask how a thing is done, which
may be the thing itself, so they are not read as questions. "run" and "execute" say nothing of the kind of
operation (a query is run, so is a script), and verbs outside the lists below are not read at all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

import numpy as np

from nexus_gateway.routing.fusion import top_k
from nexus_gateway.routing.retriever import words_of

READ, CREATE, UPDATE, DELETE = "read", "create", "update", "delete"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KINDS: dict[str, frozenset[str]] = {
    READ: _words(
        "get list show read search find fetch query describe view lookup look check count inspect retrieve download"
        " grab dump diff"
    ),
    CREATE: _words(
        "create add make insert post write submit publish upload install save put set reply leave watch subscribe"
        " follow fork copy duplicate generate draft compose schedule invite commit approve reject remember memorize"
        " memorise store record jot"
    ),
    UPDATE: _words(
        "update edit change modify rename move replace patch set save put write add remove clear cancel assign"
        " transition pause resume enable disable archive unarchive restore lock unlock close reopen merge revert"
        " scale sort stage unstage mark upgrade commit approve reject"
    ),
    DELETE: _words(
        "delete remove drop uninstall destroy purge erase forget clear cancel stop unwatch unsubscribe unfollow"
        " nuke wipe trash zap scrap ditch kill"
    ),
}
_NAMING = _words("send run execute trigger start launch")
"""Verbs of no kind: "send a GET request" reads, "run SELECT ..." queries; they only name tools (`send_message`)."""
_WHAT: dict[str, str] = {READ: "reads", CREATE: "creates", UPDATE: "changes", DELETE: "deletes"}
_FILLER = _words(
    "please pls plz kindly can could would will you u go ahead and hey hi ok okay now just i we want wanna need to"
    " let lets let's us quickly also then"
)
_LEADING_CLAUSE = re.compile(r"^(?:with|using|via|on|in|through|from)\b[^,]{1,60},\s*", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z']*")


def _base(word: str) -> str:
    """A word as tool names and requests are compared: a light stem (create, creates, created, creating ->
    creat; replies -> reply). BM25's tokenizer is not used: it drops "get" and "set" as stopwords."""
    word = word.lower()
    for suffix in ("ing", "ies", "es", "s", "ed"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_KIND_OF: dict[str, frozenset[str]] = {_base(verb): frozenset() for verb in _NAMING}
for _kind, _verbs in _KINDS.items():
    for _verb in _verbs:
        _KIND_OF[_base(_verb)] = _KIND_OF.get(_base(_verb), frozenset()) | {_kind}


_IDIOMS = (
    (re.compile(r"\bget rid of\b", re.IGNORECASE), "remove"),
    (re.compile(r"\bdrop (?=an? )", re.IGNORECASE), "post "),
)
"""Phrases whose verb is another: "get rid of the release" removes, "drop a comment" posts one ("drop the
table" still drops)."""


@functools.lru_cache(maxsize=4096)
def request_verb(request: str) -> str | None:
    """The verb an imperative request opens with, as written (lower case), or None when it opens with none
    of the verbs read here."""
    text = _LEADING_CLAUSE.sub("", request.strip())
    for idiom, verb in _IDIOMS:
        text = idiom.sub(verb, text)
    for word in _WORD.findall(text.lower()):
        if word in _FILLER:
            continue
        return word if _base(word) in _KIND_OF else None
    return None


_QUESTION = re.compile(
    r"^(?:what(?!\s+an?\b)|what's|whats|which|who|who's|whose|where|where's|when|how\s+(?:many|much|long|far|old|big)|"
    r"is|are|was|were|did|does|has|have|am|any|why)\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=4096)
def asks_question(request: str) -> bool:
    """Whether `request` opens (after a leading clause: "in jira, ...") with a question that asks to be told
    something: "what's the status of PROJ-7", "how many orders are pending", "is the build green"."""
    return bool(_QUESTION.match(_LEADING_CLAUSE.sub("", request.strip())))


@functools.lru_cache(maxsize=4096)
def name_words(tool: str) -> frozenset[str]:
    """The words of a tool's name in base form (`get_project_fields` -> get, project, field)."""
    return frozenset(_base(word) for word in _WORD.findall(words_of(tool).lower()))


def is_verb(word: str) -> bool:
    """Whether `word` (in any inflection: "created", "sends") is one of the verbs read here, of a kind or not."""
    return _base(word) in _KIND_OF


_NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bno longer)\s+(?:yet\s+)?([a-z]+)")


@functools.lru_cache(maxsize=4096)
def _said(request: str) -> frozenset[str]:
    """The base forms of the request's words, a word it negates ("not staged", "isn't staged") as its "un" form."""
    text = request.lower().replace("\u2019", "'")
    negated = {_base(word) for word in _NEGATED.findall(text)}
    return frozenset(f"un{base}" if base in negated else base for base in map(_base, _WORD.findall(text)))


@functools.lru_cache(maxsize=4096)
def name_kinds(tool: str) -> frozenset[str]:
    """The kinds of operation a tool's name says: its first verb's (`get_pull_request_comments` reads, the
    "comment" after it is a noun; `start_process` names no kind), or the verb after a leading "post"
    (`API-post-search` searches: POST is how many APIs take a search). Empty when it says none."""
    words = [_base(word) for word in _WORD.findall(words_of(tool).lower())]
    for i, base in enumerate(words):
        if base in _KIND_OF:
            following = words[i + 1] if i + 1 < len(words) else ""
            return _KIND_OF[following] if base == "post" and _KIND_OF.get(following) else _KIND_OF[base]
    return frozenset()


def opposite(request: str, tool: str) -> str | None:
    """The word of `tool`'s name that is the negation of one the request says ("staged" in the request,
    `git_diff_unstaged`; "unwatched" in the request, `list_watched`), or None. Such names come in pairs, one
    the other's opposite, and retrieval reads both alike: the letters "un" are all that tell them apart."""
    said = _said(request)
    for word in _WORD.findall(words_of(tool).lower()):
        base = _base(word)
        if base.startswith("un") and base not in said and base[2:] in said:
            return word
        if f"un{base}" in said and base not in said:
            return word
    return None


def conflict(request: str, tool: str, others: Iterable[str] = ()) -> str | None:
    """Why `tool` (a tool's name, as its server calls it) does not do what `request` asks, or None: its name
    says the opposite of a word of the request (`opposite`), names an operation of another kind than the
    request's verb, or the verb names one of `others` (the other candidates' names) exactly and neither the verb
    nor the object of the request is in `tool`'s name."""
    why = _verb_conflict(request, tool, others)
    if why is None and (word := opposite(request, tool)) is not None:
        why = f"{tool} is for {word}, the opposite of what the request says"
    return why


_LINKS = _words("to for of in on by with from into at and or a an the all new my")


def _objects(words: frozenset[str]) -> frozenset[str]:
    """The words of a tool's name (`name_words`) that are neither verbs nor links: `update_issue` -> issu."""
    return frozenset(word for word in words if word not in _KIND_OF and word not in _LINKS)


def _verb_conflict(request: str, tool: str, others: Iterable[str]) -> str | None:
    verb = request_verb(request)
    if verb is None:
        done = name_kinds(tool)
        if asks_question(request) and done and READ not in done:
            what = " or ".join(_WHAT[kind] for kind in sorted(done))
            return f"the request asks a question, and {tool} {what}"
        return None
    base, words = _base(verb), name_words(tool)
    if base in words:
        return None
    asked, done = _KIND_OF[base], name_kinds(tool)
    if asked and done and not asked & done:
        what = " or ".join(_WHAT[kind] for kind in sorted(done))
        return f"the request asks to {verb}, and {tool} {what}"
    # a tool whose name says an operation of the request's kind on the request's object ("close issue 34":
    # `update_issue`) is not displaced by one named for the verb alone (`browser_close`)
    on_its_object = bool(asked & done) and bool(_objects(words) & _said(request))
    if asked != {READ} and not on_its_object:
        named = sorted(other for other in others if base in name_words(other))
        if named:
            return f"the request asks to {verb}, which {', '.join(named)} is named for"
    return None


MISFIT_WEIGHT = 0.08
"""Taken from the fused score of a tool whose name does something else than the request asks (`conflict`).
Chosen 2026-12-07 on the everyday dev, check, fresh and held-out sets over the whole real catalog (grid 0, 0.03,
0.05, 0.08, 0.12): top-1 +1.4 to +3.0 points on each, none lower, recall@5 0 to +1.5; at 0.12 a set's recall
fell. About the gap between neighbours in a top list: it re-orders near ties of a read and a write, it does not
bury a tool."""
MISFIT_POOL = 20
"""How many of the best tools are checked (the others are too far down for the penalty to matter)."""
MISFIT_OTHERS = 5
"""The best tools whose names a request's verb may name instead (`conflict`'s `others`), as `run` reads them."""


_MANY_NAME = frozenset({"multiple", "batch", "bulk", "many"})
_MANY_SAID = re.compile(
    r"\b(?:multiple|batch|bulk|several|many|all|each|every|these|those|both|list of)\b|\band\b|,"
    r"|\b(?:[2-9]|\d{2,}|two|three|four|five|six|seven|eight|nine|ten|dozen)\s+\w+s\b",
    re.IGNORECASE,
)
"""What a request says when it asks for many things at once: a count, a list, "all", "and"."""


def batch_misfit(request: str, tool: str) -> bool:
    """Whether `tool`'s name says it works on many at once (`read_multiple_files`, `jira_batch_create_issues`)
    while the request names one thing: no plural count, list or "all" in it."""
    words = {word.lower() for word in _WORD.findall(words_of(tool).lower())}
    return bool(words & _MANY_NAME) and not _MANY_SAID.search(request)


def misfit_penalty(request: str, names: Sequence[str], scores: np.ndarray) -> np.ndarray:
    """`MISFIT_WEIGHT` for each of the best `MISFIT_POOL` tools (`names`: their own names, beside `scores`) that
    `conflict` says do something else than `request` asks, or that works on many at once where the request names
    one thing (`batch_misfit`), 0 for the others: "create a jira ticket" against `jira_get_project_fields`,
    "commit the staged stuff" against `git_diff_staged` beside `git_commit`, "read ~/notes/todo.md" against
    `read_multiple_files`."""
    penalty = np.zeros(len(scores))
    if MISFIT_WEIGHT <= 0 or not len(scores):
        return penalty
    pool = [int(i) for i in top_k(scores, MISFIT_POOL)]
    leaders = [names[i] for i in pool[:MISFIT_OTHERS]]
    for i in pool:
        rivals = [name for name in leaders if name != names[i]]
        if conflict(request, names[i], rivals) is not None or batch_misfit(request, names[i]):
            penalty[i] = MISFIT_WEIGHT
    return penalty
