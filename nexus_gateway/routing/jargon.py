"""The words a tool's description uses for what a request says in shorthand or idiom.

    expansions("open a PR on octo/app")           -> "pull request create"
    expansions("file a bug: login fails")         -> "create issue"
    expansions("remember that Ana likes tea")     -> "memory"

People write to an agent as they talk: "open a PR", "file a bug", "k8s", "DM Sam", "stage the file", "remember
that ...". Tool descriptions are written as documentation: "Create a new pull request", "Create a new issue",
"Kubernetes", "direct message", "Add file contents to the staging area", "knowledge graph memory". A small
embedder (and BM25 all the more) does not see that these are the same thing, so the request's shorthand is
looked up here and the documentation's words are added to what routing reads (`query.routing_text`); the
request's own words stay. The tables hold general shorthand of software, office and chat work, not words of
any one catalog or server; a request without any changes nothing.
"""

from __future__ import annotations

import re

CAPITALS: tuple[tuple[str, str], ...] = (
    (r"\bPRs?\b", "pull request"),
    (r"\bMRs?\b", "merge request"),
    (r"\bDMs?\b", "direct message"),
    (r"\bLGTM\b", "review approve"),
    (r"\bSELECT\b.+\bFROM\b", "sql query"),
)
"""Shorthand read only as written, in capitals (`pr`, `mr` and `dm` are pieces of other words)."""

_A = r"(?:an?\s+|the\s+)?(?:new\s+)?"
"""An article and "new" between a verb and its object: "file a new bug"."""

IDIOMS: tuple[tuple[str, str], ...] = (
    # Code hosting and version control.
    (r"\bpull-requests?\b", "pull request"),
    (r"\brepos?\b", "repository"),
    (rf"\b(?:file|report|raise|log|submit)\s+{_A}(?:bug|issue|ticket)s?\b", "create issue"),
    (r"\bopen\s+(?:an?\s+(?:new\s+)?|new\s+)(?:bug|issue|ticket)\b", "create issue"),  # "open issues": a state
    (
        r"\b(?:close|reopen)\s+(?:the\s+|this\s+|that\s+)?(?:bug|issue|ticket|PR|pull request|MR|merge request)\b",
        "update state",
    ),
    (rf"\b(?:open|raise|submit|send)\s+{_A}(?:pull request|PR|merge request|MR)\b", "create"),  # "open PRs": a state
    (r"\bbugs?\b|\b(?:jira|support|helpdesk|help desk)\s+tickets?\b", "issue"),
    (r"\bapprove[sd]?\b", "review approve"),
    (r"\b(?:last|latest|recent)\s+(?:\d+\s+|few\s+)?commits\b|\bcommit history\b", "log history"),
    (r"\b(?:open|closed|merged|pending)\s+(?:PRs|pull requests|issues|tickets|bugs)\b", "list"),
    (r"(?<!-)(?<!not )(?<!n't )\bstage\b(?!-)", "add staging area"),
    (r"\bunstage\b", "reset staging area"),
    (
        r"\bblame\b|\bwho (?:last )?(?:changed|touched|edited|wrote|modified) (?:each|every|this|that|the) lines?\b",
        "blame history",
    ),
    (
        r"\broll(?:ed|ing)?[- ]?back\b|\b(?:back )?to (?:the|its) previous (?:version|release|revision)\b",
        "rollback undo rollout",
    ),
    # Shell and files.
    (r"\b(?:what(?:'s| is)|show me what'?s) in (?:the |this |my )?file\b", "read contents"),
    (r"\b(?:what(?:'s| is)|show me what'?s) in (?:the |this |my )?folder\b", "list directory contents"),
    (
        r"\bwhat does (?:the |this |that |my )?(?:file|url|page|article|post|doc|document)\b.{0,40}\bsay\b",
        "read contents",
    ),
    (r"\b(?:show|print|display|cat)\s+(?:me\s+)?(?:the\s+|this\s+|that\s+)?file\b", "read contents"),
    (r"\bfind\s+(?:every|all(?:\s+the)?)\s+.{1,40}?\b(?:under|in|inside|within)\s+(?:the\s+)?folder\b", "search files"),
    (r"\bk8s\b", "kubernetes"),
    (r"\bdirs?\b|\bfolders?\b", "directory"),
    (r"\bmkdir\b", "create directory"),
    (r"\brm\b", "delete"),
    (r"\bmv\b", "move"),
    (r"\bcp\b", "copy"),
    (r"\bls\b", "list directory"),
    (r"\bgrep\b", "search text content"),
    (r"\bkill\b", "terminate stop"),
    (
        r"\b(?:run|execute|kick\s+off)\s+(?:`|command\b|(?:npm|npx|yarn|pnpm|pip|pytest|python3?|node|make|cargo|go|"
        r"docker|df|du|ps|top|bash|sh|curl|wget|tar|ping|uptime|whoami|ls|cat|tail|head)\b)",
        "command terminal process",
    ),
    (r"\bspin\s+up\b", "create start"),
    (
        r"\b(?:take|make)\s+(?:a\s+|an\s+)?(?:new\s+|fresh\s+|full\s+)?(?:backup|snapshot)\b|\bback\s+up\s+(?!to\b)",
        "create",
    ),
    (r"\btear\s+down\b", "delete"),
    (r"\bconfig\b", "configuration"),
    (r"\benv\s+vars?\b", "environment variable"),
    (r"\bcreds\b", "credentials"),
    (r"\bdeps\b", "dependencies"),
    (r"\bdb\b", "database"),
    # Chat, mail, calendar, contacts, documents.
    (r"\bmsgs?\b", "message"),
    (r"\bcatch me up\b", "recent history"),
    (r"\b(?:e-?mails?|messages?|mail)\s+from\b", "search messages"),
    (r"(?<![\w&])#[a-z][\w-]*", "channel"),  # a chat channel: #general
    (r"\binbox\b", "email messages"),
    (r"\bmeetings?\b(?!\s+(?:notes|minutes|recap|summary|transcript))|\bappointments?\b", "calendar event"),
    (r"\bon my (?:calendar|schedule)\b|\bagenda\b", "calendar events"),
    (r"\bto-?dos?\b", "task"),
    (r"\bpics?\b|\bpictures?\b|\bphotos?\b", "image"),
    (
        r"\b(?:make|draw|paint|create|generate|render)\b(?:\s+\S+){0,4}?\s+"
        r"(?:pic|picture|image|drawing|illustration|painting|artwork|photo)s?\s+of\b",
        "generate",
    ),
    (
        r"\b(?:make|create|generate|build|write|put\s+together)\b(?:\s+\S+){0,4}?\s+"
        r"(?:presentation|power ?point|deck|slideshow|slides)\s+(?:on|about)\b",
        "generate topic",
    ),
    (r"\bdocs\b(?!\.\w)", "documentation"),
    (r"\bspreadsheets?\b", "sheet"),
    (r"\bpower ?points?\b|\bdecks?\b|\bslideshows?\b", "presentation"),
    (r"\blog(?:ged|ging)?\s+\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|m|mins?|minutes?)\b", "worklog time spent"),
    (
        r"\bmove\b.{0,40}\bto\s+(?:done|in progress|to ?do|in review|review|closed|resolved|qa|blocked)\b",
        "transition status",
    ),
    (r"\bbibtex\b|\bcite\b|\bcitations?\b", "citation export"),
    (r"\bwhat columns\b|\bcolumns? of\b|\bschema of\b", "describe table schema"),
    (r"\blat(?:itude)?\s*/\s*(?:long?|lng)(?:itude)?\b|\blatitude and longitude\b", "coordinates geocode"),
    # Memory, search, reasoning, arithmetic, devices.
    (r"\bremember\b|\bmake a note that\b", "memory knowledge graph"),
    (r"\b(?:remember|make a note|note down|keep in mind)\s+that\b", "create"),
    (r"\bforget\s+(?:about|everything|all|that|what)\b", "memory delete"),
    (r"\blook\s+up\b", "search"),
    (r"\b(?:what do you|anything you|what you)\s+(?:know|remember)\s+about\b|\banything about\b", "search"),
    (r"\bwho won\b|\bcurrent events\b", "web search"),
    (
        r"\bthink\b.*\bstep[- ]by[- ]step\b|\bthink (?:it |this )?through\b|\breason through\b",
        "thinking reasoning steps",
    ),
    (r"\d\s*(?:%|percent)\s+of\s+\d|\d\s*[+*^\u00d7\u00f7]\s*\d|\d\s+[-/x]\s+\d", "calculate math expression"),
    (r"\bsquare root\b|\bsqrt\b", "calculate math expression"),
    (
        r"\b(?:turn|switch)\s+(?:on|off)\b|\bthe lights?\b|\blamps?\b|\bthermostat\b|\bgarage door\b",
        "device entity state",
    ),
    (r"\bhow many\b", "count"),
    (r"\bstats\b", "statistics"),
    (r"\brn\b|\bright now\b", "current"),
    (r"\b(?:if|when) it'?s\s+\d{1,2}(?::\d{2})?\s*(?:am|pm)?\b.{0,60}\bwhat time\b", "convert time"),
    (r"\binfo\b", "information"),
)
"""Idioms and shorthand in any case."""

_PATTERNS = tuple((re.compile(pattern), words) for pattern, words in CAPITALS) + tuple(
    (re.compile(pattern, re.IGNORECASE), words) for pattern, words in IDIOMS
)


def expansions(request: str) -> str:
    """The documentation's words for the shorthand `request` uses, once each ("" for none)."""
    added: list[str] = []
    for pattern, words in _PATTERNS:
        if pattern.search(request):
            added.extend(word for word in words.split() if word not in added)
    return " ".join(added)
