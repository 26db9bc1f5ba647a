"""What routing reads of a request: its words, with the values it carries named by their kind, and the
documentation's words for its shorthand (jargon.py: "open a PR" also reads "pull request create").

    "read ~/notes/todo.md"                        -> "read file md"
    "what files are in /home/sam/Downloads"       -> "what files are in folder"
    "fetch https://example.com/pricing"           -> "fetch url"
    "find the contact with email jane@corp.com"   -> "find the contact with email email address"

A request's values say which tool takes them only by their kind: a path says "a file tool", never which
one by its letters. Read as words they mislead both retrievers: the path `/home/sam/projects/app/.env.example`
is, to BM25 and to an embedder alike, the words "home projects app env example", which pull a tool about
script projects and one about environment variables; `~/notes/todo.md` pulls a documentation tool because
"notes" and "md" are in its description. So paths, URLs and e-mail addresses are replaced by the name of
their kind (a file's extension is kept: `.xlsx` and `.png` do say which tool), before either retriever
reads the request. Quoted text ('Login button unresponsive on Android 14', `npm run build`) is left out: it is
what a tool is given (a title, a message, a command), and its words pull tools about them (a browser's buttons)
more than the tool the request asks for; so is what follows a colon after an instruction ("save this as
intro.txt: Hi all, I joined the data team" reads "save this as file txt": the team's words pulled a tool that
creates teams; on the everyday sets at 843 tools, 5 requests moved up and 1 down a place). An issue key
(`PROJ-1423`, `ENG-88`) is read as "issue": its project's letters are no word of any tool, and "what's the
status of PROJ-1423?" is about an issue. A search's topic after its named place ("search the web for <topic>")
is left out like a payload, a command in backticks that is run reads as "command", and a latitude and longitude
as "latitude longitude location". The argument filler and the re-ranker still read the request as written.
"""

from __future__ import annotations

import re

from nexus_gateway.routing.jargon import expansions
from nexus_gateway.routing.operations import request_verb

_URL = re.compile(r"\b(?:https?|ftp|wss?|file)://[^\s'\"<>]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PATH = re.compile(
    r"""(?<![\w/.~-])                  # not inside a word or another path
        (?:~|\.{1,2}|[A-Za-z]:)?       # ~/x, ./x, ../x, C:\\x
        (?:[/\\][\w.@+-]+)+[/\\]?      # /a/b/c, \\a\\b
        (?![\w/\\])""",
    re.VERBOSE,
)
_ISSUE_KEY = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9]{1,9})-\d+(?![\w/.-])")
_NOT_ISSUE = frozenset(
    {"UTF", "SHA", "MD", "AES", "RSA", "ISO", "RFC", "IEEE", "GPT", "COVID", "SARS", "HTTP", "TLS", "SSL", "IPV", "CVE"}
    | {"CWE", "PEP", "ECMA", "ES", "ANSI", "DDR", "USB", "PCI", "WCAG"}
)
"""Prefixes of standards, algorithms and models written like an issue key (UTF-8, SHA-256, ISO-8601, GPT-4)."""
_QUOTED = re.compile(
    r"(?<![\w])'[^']{2,}'(?![\w])|\"[^\"]{2,}\"|`[^`]{2,}`|\u201c[^\u201d]{2,}\u201d|\u2018[^\u2019]{2,}\u2019"
)
"""A quoted span: a title, a message, a command, a search string. Its words are the value, not the operation."""
_COMMAND = re.compile(r"\b(run|execute|kick\s+off|start)\s+`[^`]{2,}`", re.IGNORECASE)
"""A command in backticks, run: "run `npm test`"."""
_COORDINATES = re.compile(r"(?<![\w.])[-+]?\d{1,3}\.\d+\s*[,;/ ]\s*[-+]?\d{1,3}\.\d+(?![\w.])")
"""A latitude and a longitude: `48.8584, 2.2945`."""
_PAYLOAD = re.compile(r"^(?P<head>[^:]*?\S):\s+(?P<body>\S+\s+\S.*)$", re.DOTALL)
"""An instruction, a colon, then what it gives: "save this as notes.txt: Hi all, ...", "create a jira ticket in WEB:
checkout page times out"."""
_PAYLOAD_CUE = re.compile(r"\b(?:saying|says|reading|reads|text|message|body|content|note)$", re.IGNORECASE)
_TOPIC = re.compile(
    r"^(?P<head>(?:[^,;]*[,;]\s*)?(?:(?:please|can|could|would|will)\s+(?:you\s+)?)?(?:search|look\s+up)\s+(?!(?:for|about|on)\b)(?P<object>\S.*?)"
    r"\s+(?:for|about|on))\s+(?P<topic>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
"""A search with its place named before its topic: "search the web for <topic>", "search confluence for <topic>",
"look up tavily for <topic>" ("find ... for" is not read: "find the office address for a company" names the
thing sought last)."""
_FILE_NAME = re.compile(r"(?<![\w/.-])[\w-][\w.-]*\.([A-Za-z][A-Za-z0-9]{0,5})(?![\w/-])")
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,5})$")
_NOT_FILE = frozenset({"com", "org", "net", "io", "dev", "ai", "app", "co", "uk", "de", "fr", "eu", "gov", "edu"})
"""Endings that make a dotted word a host name or a version, not a file name."""


_PLAIN_FILES = frozenset(
    {"hosts", "passwd", "shadow", "group", "fstab", "crontab", "hostname", "sudoers", "environment", "profile"}
    | {"makefile", "dockerfile", "containerfile", "procfile", "gemfile", "rakefile", "vagrantfile", "jenkinsfile"}
    | {"pipfile", "brewfile", "justfile", "readme", "license", "licence", "changelog", "authors", "notice"}
    | {"copying", "codeowners", "todo", "config", "known_hosts", "authorized_keys", "id_rsa", "id_ed25519"}
)
"""Files named without an extension, by convention (`/etc/hosts`, `Makefile`, `~/.ssh/config`): a path ending in
one is a file, not a folder."""


def _path_kind(path: str) -> str:
    if path.endswith(("/", "\\")):
        return " folder "
    last = re.split(r"[/\\]", path)[-1]
    extension = _EXTENSION.search(last)
    if (extension and not last.startswith(".")) or (extension and last.count(".") > 1):
        return f" file {extension.group(1).lower()} "
    if last.startswith(".") or last.lower() in _PLAIN_FILES:  # a dotfile (.env, .bashrc) or a file by convention
        return " file "
    return " folder "


def _file_name(match: re.Match[str]) -> str:
    extension = match.group(1).lower()
    if extension in _NOT_FILE or match.group(0)[0].isdigit():
        return match.group(0)
    return f" file {extension} "


def routing_text(request: str) -> str:
    """What both retrievers read: `values_by_kind(request)`, then the documentation's words for the shorthand
    it uses (`jargon.expansions`)."""
    text = values_by_kind(request)
    extra = expansions(text)
    return f"{text} {extra}" if extra else text


def _without_payload(request: str) -> str:
    """`request` without what follows a colon where an instruction comes before it (an imperative verb, or
    "saying", "message", ... right before the colon): that is the value given (a file's text, a ticket's
    summary), like a quoted span. A name before the colon ("duckduckgo: ...", "k8s: list pods") is no
    instruction, so what follows it is the request and is kept."""
    match = _PAYLOAD.match(request.strip())
    if match is None:
        return request
    head = match.group("head")
    return head if request_verb(head) is not None or _PAYLOAD_CUE.search(head) else request


def _without_topic(request: str) -> str:
    """`request` without the topic of a search whose place or object is named before it ("search duckduckgo for
    kubernetes 1.33 release notes" reads "search duckduckgo for"): the topic is the query a tool is given, and its
    words pull tools about them (`kubernetes` a Kubernetes server's tools, "mechanical keyboards" a browser's
    key presses). A search that names nothing before its topic ("search for flights to Rome") is kept whole: its
    topic is all that says what is sought."""
    match = _TOPIC.match(request.strip())
    if match is None or len(match.group("object").split()) > 4:
        return request
    return match.group("head")


def values_by_kind(request: str) -> str:
    """`request` with its quoted spans, a payload after a colon and a search's topic left out, and its commands
    run, URLs, coordinates, e-mail addresses, paths and file names replaced by their kind (see above); the request
    itself when it holds none."""
    text = _COMMAND.sub(r"\1 command ", _without_topic(_without_payload(request)))
    text = _QUOTED.sub(" ", text)
    if len(text.split()) < 3:  # the request is mostly its quote ("search for '...'"): read it all
        text = request
    text = _URL.sub(" url ", text)
    text = _COORDINATES.sub(" latitude longitude location ", text)
    text = _EMAIL.sub(" email address ", text)
    text = _PATH.sub(lambda match: _path_kind(match.group(0)), text)
    text = _FILE_NAME.sub(_file_name, text)
    text = _ISSUE_KEY.sub(lambda match: match.group(0) if match.group(1) in _NOT_ISSUE else " issue ", text)
    return " ".join(text.split()) if text != request else request
