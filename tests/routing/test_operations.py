"""`conflict`: a tool whose name does another kind of thing than the request's leading verb asks, or a request
whose verb names another candidate; and nothing concluded where a request states no operation."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_gateway.routing.operations import (
    MISFIT_WEIGHT,
    batch_misfit,
    conflict,
    misfit_penalty,
    name_words,
    request_verb,
)


@pytest.mark.parametrize(
    ("request_text", "verb"),
    [
        ("create a jira ticket in project WEB", "create"),
        ("can you please list the pods in prod", "list"),
        ("with puppeteer, show me the page title", "show"),
        ("on github, delete the branch old-ui", "delete"),
        ("what time is it in Paris?", None),  # a question states no operation
        ("in /home/sam/app/config.yaml change debug to false", None),  # it opens with its object
        ("type hello into the email field", None),  # a verb not read here
        ("open a PR from feature-login into main", None),  # "open" creates a PR and reads a file: not read
        ("get rid of the redis helm release", "remove"),
        ("drop a comment on issue 15: fixed in v2.3", "post"),
        ("drop the users table", "drop"),
    ],
)
def test_the_leading_verb_of_a_request_is_read_after_politeness_and_a_leading_clause(
    request_text: str, verb: str | None
):
    assert request_verb(request_text) == verb


def test_tool_names_are_read_in_every_casing_and_inflection():
    assert name_words("jira_get_project_fields") == {"jira", "get", "project", "field"}
    assert name_words("getCurrentTime") == name_words("get-current-times") == {"get", "current", "tim"}


@pytest.mark.parametrize(
    ("request_text", "tool", "others", "why"),
    [
        (
            "create a jira ticket in project WEB",
            "jira_get_project_fields",
            [],
            "the request asks to create, and jira_get_project_fields reads",
        ),
        (
            "leave a comment 'ship it' on page 1a2b",
            "API-retrieve-a-comment",
            ["API-create-a-comment"],
            "the request asks to leave, and API-retrieve-a-comment reads",
        ),
        (
            "install the bitnami/redis helm chart",
            "uninstall_helm_chart",
            ["install_helm_chart"],
            "the request asks to install, and uninstall_helm_chart deletes",
        ),
        (
            "reply 'on it' in the thread 1712345678.000200",
            "slack_post_message",
            ["slack_reply_to_thread"],
            "the request asks to reply, which slack_reply_to_thread is named for",
        ),
        ("please delete /tmp/old.log", "read_file", [], "the request asks to delete, and read_file reads"),
        ("stop the arxiv alert for 'rust'", "watch_topic", [], "the request asks to stop, and watch_topic creates"),
        (
            "pause monitor m1, don't delete it",
            "monitor_delete",
            [],
            "the request asks to pause, and monitor_delete deletes",
        ),
        (
            "what's staged in ~/api?",
            "git_diff_unstaged",
            [],
            "git_diff_unstaged is for unstaged, the opposite of what the request says",
        ),
        (
            "show the unstaged changes",
            "git_diff_staged",
            [],
            "git_diff_staged is for staged, the opposite of what the request says",
        ),
        (
            "in mongodb, how many orders in the shop db are still pending?",
            "insert-many",
            ["count"],
            "the request asks a question, and insert-many creates",
        ),
        ("is PROJ-7 done yet?", "jira_delete_issue", [], "the request asks a question, and jira_delete_issue deletes"),
        (
            "commit the staged stuff in ~/shop with message 'fix rounding'",
            "git_diff_staged",
            ["git_commit", "git_diff_unstaged"],
            "the request asks to commit, and git_diff_staged reads",
        ),
        (
            "what have I changed in ~/shop that isn't staged yet?",
            "git_diff_staged",
            ["git_diff_unstaged"],
            "git_diff_staged is for staged, the opposite of what the request says",
        ),
        (
            "find the Q3 budget spreadsheet in my drive",
            "create_spreadsheet",
            [],
            "the request asks to find, and create_spreadsheet creates",
        ),
        (  # the request's object in the name excuses no other kind of operation
            "send 'standup in 5' to the google chat space spaces/AAAA123",
            "list_spaces",
            ["send_message"],
            "the request asks to send, which send_message is named for",
        ),
        (
            "nuke the email_1 index on the users collection",
            "rename-collection",
            ["drop-index"],
            "the request asks to nuke, and rename-collection changes",
        ),
    ],
)
def test_a_tool_named_for_another_kind_of_operation_or_a_rival_named_for_the_verb_is_a_conflict(
    request_text: str, tool: str, others: list[str], why: str
):
    assert conflict(request_text, tool, others) == why


@pytest.mark.parametrize(
    ("request_text", "tool", "others"),
    [
        ("create a jira ticket in project WEB", "jira_create_issue", []),
        ("make a new folder /tmp/posts", "create_directory", []),  # make and create: the same kind
        ("make an automation for the porch light", "ha_config_set_automation", []),  # set creates or changes
        ("forget everything about Bob", "delete_entities", []),
        ("send a GET request to https://example.com/health", "fetch", []),  # send is of no kind
        ("run SELECT 1 on postgres", "query", []),  # nor is run
        ("what time is it in Paris?", "get_current_time", ["convert_time"]),
        ("find github repos about rust", "search_repositories", ["find_dead_code"]),  # a read verb names no rival
        ("stage src/cart.py", "git_add", []),
        ("close the browser", "browser_close", []),  # a verb not read here concludes nothing
        ("what's staged in ~/api?", "git_diff_staged", ["git_diff_unstaged"]),
        ("undo the last commit", "git_reset", []),  # "undo" is no negation of a word the name says
        ("unstage everything in ~/api", "git_reset", []),
        ("what's the status of PROJ-123", "jira_get_transitions", []),  # a question, and a tool that reads
        ("how many pods are running?", "kubectl_get_or_create", []),  # it reads too
        ("where is the drive from Lyon to Geneva", "maps_distance_matrix", []),  # its name states no operation
        ("how do I create a bucket?", "create_bucket", []),  # asks how a thing is done: no question read
        ("how do I delete a branch?", "list_branches", []),
        ("wipe the cache folder /tmp/cache", "delete_directory", []),  # slang for deleting
        ("what have I changed in ~/shop that isn't staged yet?", "git_diff_unstaged", ["git_diff_staged"]),
        ("get rid of the redis helm release", "uninstall_helm_chart", []),
        ("drop a comment on issue 15: fixed in v2.3", "add_issue_comment", []),
        ("are there any copy-pasted functions in this repo?", "detect_clones", []),  # a noun, not a verb
        ("draft a reply to Karen", "draft_gmail_message", ["reply_to_comment"]),
        ("find my notion page about Q3 planning", "API-post-search", []),  # an HTTP method before the verb
        ("What a terrible photo! Can you make it better?", "MediaModifyTool", []),  # an exclamation, no question
        ("show the comments on PR 9", "get_pull_request_comments", []),
        ("close issue 34 in octo/app", "update_issue", ["browser_close"]),  # it changes what the request names
        ("remember that my sister Ana is allergic to peanuts", "create_entities", []),
        ("what do you remember about Project Falcon?", "search_nodes", []),  # a question, not a verb
    ],
)
def test_a_tool_that_does_what_the_verb_asks_or_a_request_without_an_operation_is_no_conflict(
    request_text: str, tool: str, others: list[str]
):
    assert conflict(request_text, tool, others) is None


def test_retrieval_takes_the_misfit_weight_from_the_tools_among_the_best_that_do_something_else():
    names = ["git_diff_staged", "git_commit", "git_diff_unstaged", "git_status"]
    scores = np.array([0.70, 0.69, 0.60, 0.10])
    penalty = misfit_penalty("commit the staged stuff in ~/shop", names, scores)
    assert penalty.tolist() == [MISFIT_WEIGHT, 0.0, MISFIT_WEIGHT, MISFIT_WEIGHT]
    assert int(np.argmax(scores - penalty)) == 1
    assert not misfit_penalty("what time is it in Paris?", ["get_current_time", "convert_time"], scores[:2]).any()


def test_a_tool_for_many_at_once_misfits_a_request_that_names_one_thing():
    assert batch_misfit("read ~/notes/todo.md", "read_multiple_files")
    assert batch_misfit("file a bug in MOB: login fails", "jira_batch_create_issues")
    assert not batch_misfit("read a.txt and b.txt", "read_multiple_files")
    assert not batch_misfit("create 3 issues for the login bugs", "jira_batch_create_issues")
    assert not batch_misfit("read all the logs", "read_multiple_files")
    assert not batch_misfit("read ~/notes/todo.md", "read_text_file")
    names = ["read_multiple_files", "read_text_file"]
    assert misfit_penalty("read ~/notes/todo.md", names, np.array([0.66, 0.65])).tolist() == [MISFIT_WEIGHT, 0.0]


def test_remembering_is_storing():
    assert conflict("remember that my sister's birthday is May 3", "read_graph") == (
        "the request asks to remember, and read_graph reads"
    )
