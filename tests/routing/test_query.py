"""What routing reads of a request: values named by their kind, shorthand in the documentation's words
(routing/query.py, routing/jargon.py)."""

from __future__ import annotations

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import BM25Retriever
from nexus_gateway.routing.jargon import expansions
from nexus_gateway.routing.query import routing_text, values_by_kind


@pytest.mark.parametrize(
    ("request_text", "routed"),
    [
        ("read ~/notes/todo.md", "read file md"),
        ("what files are in /home/sam/Downloads", "what files are in folder"),
        ("fetch https://example.com/pricing and give me the text", "fetch url and give me the text"),
        ("find the contact with email jane@corp.com", "find the contact with email email address"),
        ("read A1:F30 from /home/sam/budget.xlsx", "read A1:F30 from file xlsx"),
        ("show me this picture cat.png", "show me this picture file png"),
        (r"open C:\Users\sam\a.docx", "open file docx"),
        ("show me /srv/app/.env", "show me file"),
        ("show me /etc/hosts", "show me file"),  # a file without an extension, by convention
        ("what's in /srv/app/Makefile", "what's in file"),
        ("what's in /srv/app/", "what's in folder"),
        ("what's the status of PROJ-1423?", "what's the status of issue ?"),
        ("file a bug in MOB: 'Login button unresponsive on Android 14'", "file a bug in MOB:"),
        ("kick off `npm run build` in a terminal", "kick off command in a terminal"),
        ('search for "rust async runtimes"', 'search for "rust async runtimes"'),  # mostly its quote: kept
        ("log 2h on ENG-88, flaky tests", "log 2h on issue , flaky tests"),
        ("save this as ~/drafts/intro.txt: Hi all, I joined the data team", "save this as file txt"),
        ("create a jira ticket in project WEB: checkout page times out", "create a jira ticket in project WEB"),
        ("on slack, reply in thread 1733312345.000200: on it", "on slack, reply in thread 1733312345.000200"),
        ("email ann, subject Lunch, saying: see you at noon", "email ann, subject Lunch, saying"),
        ("run `npm test` in ~/web", "run command in folder"),  # a command run: its kind, not its words
        ("in config.yaml swap `port: 8080` for `port: 9090`", "in file yaml swap for"),
        ("what address is at 48.8584, 2.2945", "what address is at latitude longitude location"),
        ("what's at -33.8568,151.2153?", "what's at latitude longitude location ?"),
        # A search whose place is named before its topic: the topic is the query given.
        ("search the web for the best budget mechanical keyboards", "search the web for"),
        ("search duckduckgo for kubernetes 1.33 release notes", "search duckduckgo for"),
        ("please search confluence about the onboarding checklist", "please search confluence about"),
        ("with tavily, look up recent news on the EU AI act", "with tavily, look up recent news on"),
    ],
)
def test_values_are_named_by_their_kind(request_text: str, routed: str) -> None:
    assert values_by_kind(request_text) == routed


@pytest.mark.parametrize(
    "request_text",
    [
        "what time is it in Paris?",
        "list all the pages on docs.example.com",
        "what is 17.5% of 2340",
        "upgrade to v1.2.3",
        "fork vercel/next.js to my account",
        "convert 3/4 cups to grams",
        "save it as UTF-8 and hash it with SHA-256",  # standards written like an issue key
        "gitlab project 4521: open an MR from feat/cache into main",  # a name before the colon: the request follows
        "k8s: list pods in the payments namespace",
        "search for: react hooks",  # the payload is most of it: read all
        "react with :tada: to the message in C01ABCD",
        "search for flights to Rome on Friday",  # nothing named before the topic: the topic says what is sought
        "can you search for studies on the effects of vaccines",
        "find information about the Immigration Act",  # "find X about Y" names the thing sought last
        "what are the top search queries on Google today",  # "search" as a noun
    ],
)
def test_requests_without_paths_urls_or_addresses_are_read_as_written(request_text: str) -> None:
    assert values_by_kind(request_text) == request_text


@pytest.mark.parametrize(
    ("request_text", "added"),
    [
        ("open a PR from feature-login into main", "pull request create"),
        ("file a bug on octo/app: login fails", "create issue"),
        ("remember that my sister's birthday is May 3", "memory knowledge graph create"),
        ("what's been said in #general", "channel"),
        ("is there a bug about the login page?", "issue"),
        ("what is 17.5% of 2340", "calculate math expression"),
        ("restart the api pod on k8s", "kubernetes"),
        ("can you show me what's in file md", "read contents"),  # a path, as values_by_kind names it
        ("what's in folder", "list directory contents"),
        ("what does this article say url", "read contents"),
        ("show the last 5 commits in the shop repository", "log history"),
        ("any open PRs on octo/app?", "pull request list"),
        ("catch me up on channel C08ABCD12", "recent history"),
        ("find emails from alice about the contract", "search messages"),
        ("what time is it in Tokyo rn", "current"),
        ("open an issue about the login page", "create issue"),
        ("list the open issues on octo/app", "list"),  # "open issues": a state, not an issue opened
        ("close issue 34 in octo/app", "update state"),
        ("reopen the PR", "pull request update state"),
        ("in mongodb, how many orders are still pending?", "count"),
    ],
)
def test_shorthand_reads_also_in_the_documentations_words(request_text: str, added: str) -> None:
    assert expansions(request_text) == added
    assert routing_text(request_text) == f"{request_text} {added}"


@pytest.mark.parametrize(
    ("request_text", "added"),
    [
        ("who last touched each line of src/auth/session.py?", "blame history"),
        ("roll back the payments deployment in prod", "rollback undo rollout"),
        ("make a 6-slide powerpoint on our Q2 results", "generate topic presentation"),
        ("make me a watercolor picture of a red fox", "image generate"),
        ("what do you remember about Project Falcon?", "memory knowledge graph search"),
        ("forget everything you know about Project Falcon", "memory delete"),
        ("add a picture to the report", "image"),  # no picture of a subject: nothing to generate
        ("open the deck about Q3", "presentation"),
        ("log 2h on PROJ-88, note: fixed flaky login test", "worklog time spent"),
        ("move PROJ-123 to In Progress in jira", "transition status"),
        ("give me bibtex for 1706.03762", "citation export"),
        ("sqlite: what columns does the customers table have?", "describe table schema"),
        ("gimme the lat/long for 1600 Amphitheatre Pkwy", "coordinates geocode"),
        ("if it's 3pm in New York, what time is that in Berlin?", "convert time"),
        ("run npm test in the web folder", "directory command terminal process"),
        ("desktop commander: run df -h", "command terminal process"),
        ("run git status in the shop repo", "repository"),
        ("take a backup of home assistant before I upgrade", "create"),
        ("what did I change but not stage yet", ""),  # not staged: nothing added to the staging area
        ("show me file", "read contents"),  # "show me /etc/hosts", its path read by its kind
        ("find every file json under folder", "search files directory"),
        ("back up the db tonight", "create database"),  # git has tools of its own
        ("move the draft to the archive", ""),  # a place, not a workflow status
        ("show the git log of the api", ""),  # a log, no hours spent
        ("what time is it in Berlin?", ""),  # no time given to convert
    ],
)
def test_work_shorthand_reads_in_the_words_tools_use(request_text: str, added: str) -> None:
    assert expansions(request_text) == added


@pytest.mark.parametrize(
    "request_text",
    [
        "read ~/notes/todo.md",  # a file's name is no to-do: values are read by their kind first
        "list all the pages on docs.example.com",  # a host name's words are no shorthand
        "the appr proposal is due on 2026-12-03",  # a date is no subtraction
        "email pr@acme.io the draft",  # `pr` in lower case is no pull request
        "what time is it in Paris?",
        "I'd like two tickets for the concert",  # tickets to an event are no issues
        "step-by-step instructions for a multi-stage rocket model",
        "new google doc called Notes",
        "create a google doc called Meeting notes",  # notes of a meeting are a document, not an event
    ],
)
def test_requests_without_shorthand_are_read_without_additions(request_text: str) -> None:
    assert routing_text(request_text) == values_by_kind(request_text)


def _tool(name: str, description: str) -> ToolRecord:
    return ToolRecord.from_tool("s", {"name": name, "description": description, "inputSchema": {"type": "object"}})


def test_shorthand_finds_the_tool_its_documentation_describes() -> None:
    """ "file a bug" shares no word with "Create a new issue"; its documentation's words do."""
    retriever = BM25Retriever()
    retriever.index(
        [
            _tool("create_issue", "Create a new issue in a GitHub repository."),
            _tool("browser_click", "Perform a click on a web page: a button, a link."),
            _tool("list_bugs", "List the bug bounty programs of an organization."),
        ]
    )
    assert retriever.search("file a bug: login button does nothing on Safari", 3)[0].name == "s__create_issue"


def test_a_paths_words_do_not_pull_tools_that_share_them() -> None:
    """The path's letters ("projects", "app", "env", "example") name two other tools; its kind names the right one."""
    retriever = BM25Retriever()
    retriever.index(
        [
            _tool("get_script_project", "Get the details of an Apps Script project: its files and example code."),
            _tool("get_env", "Print the environment variables (env) of the app, for example to debug configuration."),
            _tool("read_text_file", "Read the complete contents of a file as text."),
        ]
    )
    hits = retriever.search("show me what's in /home/sam/projects/app/.env.example", 3)
    assert hits[0].name == "s__read_text_file"
