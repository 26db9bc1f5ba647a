"""Example upstream MCP server: an issue tracker with projects, issues, comments and a status workflow."""

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

try:
    from ._common import Email, LogicalClock, configure_logging, make_parser, serve
except ImportError:  # run as a script: python examples/servers/issues_server.py
    from _common import Email, LogicalClock, configure_logging, make_parser, serve  # type: ignore[no-redef]

READ_ONLY = ToolAnnotations(read_only_hint=True)

Status = Literal["open", "in_progress", "in_review", "closed"]
Priority = Literal["low", "medium", "high", "critical"]
IssueType = Literal["bug", "feature", "task", "chore"]
Resolution = Literal["fixed", "wont_fix", "duplicate", "cannot_reproduce"]
IssueKey = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]{1,9}-\d+$", description="Issue key, e.g. 'WEB-12'.")]
Label = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$", description="Lower-case label, e.g. 'regression'.")]
NULLABLE = {"assignee", "due_date", "story_points"}  # an explicit null clears these
PRIORITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}
# Allowed moves between statuses; closing needs a resolution, reopening goes back to open.
TRANSITIONS: dict[str, set[str]] = {
    "open": {"in_progress", "closed"},
    "in_progress": {"open", "in_review", "closed"},
    "in_review": {"in_progress", "closed"},
    "closed": {"open"},
}


class Project(BaseModel):
    key: str
    name: str
    lead: str
    open_issues: int = 0


class Comment(BaseModel):
    author: str
    body: str
    created_at: datetime


class Link(BaseModel):
    relation: Literal["blocks", "blocked_by", "relates_to", "duplicates"]
    issue_key: str


class Issue(BaseModel):
    key: str
    project: str
    title: str
    description: str = ""
    type: IssueType = "task"
    status: Status = "open"
    priority: Priority = "medium"
    resolution: Resolution | None = None
    reporter: str
    assignee: str | None = None
    labels: list[str] = []
    due_date: date | None = None
    story_points: int | None = None
    comments: list[Comment] = []
    links: list[Link] = []
    created_at: datetime
    updated_at: datetime


class IssueChanges(BaseModel):
    """Fields to change on an issue; omitted fields are left as they are."""

    title: str | None = Field(default=None, min_length=1, max_length=200, description="New title.")
    description: str | None = Field(default=None, description="New description in markdown.")
    priority: Priority | None = Field(default=None, description="New priority.")
    assignee: Email | None = Field(default=None, description="New assignee's email.")
    labels: list[Label] | None = Field(default=None, description="Replacement label set.")
    due_date: date | None = Field(default=None, description="New due date (YYYY-MM-DD).")
    story_points: int | None = Field(default=None, ge=0, le=100, description="New estimate.")


def _seed() -> tuple[dict[str, Project], dict[str, Issue]]:
    def at(day: int, hour: int) -> datetime:
        return datetime(2025, 5, day, hour, tzinfo=UTC)

    alex, priya, sam = "alex.morgan@example.com", "priya.shah@example.com", "sam.lee@example.com"
    projects = [Project(key="WEB", name="Web storefront", lead=priya), Project(key="API", name="Public API", lead=sam)]
    issues = [
        Issue(key="WEB-1", project="WEB", title="Checkout button unresponsive on Safari 17", type="bug",
              priority="critical", status="in_progress", reporter=alex, assignee=priya,
              labels=["checkout", "regression"], created_at=at(26, 9), updated_at=at(29, 14),
              description="Clicking 'Pay now' does nothing on Safari 17.4; console shows a CSP violation.",
              comments=[Comment(author=priya, body="Reproduced; the new CSP blocks the payment iframe.",
                                created_at=at(27, 10))]),
        Issue(key="WEB-2", project="WEB", title="Add dark mode to account settings", type="feature", priority="low",
              reporter=sam, labels=["ui"], story_points=5, created_at=at(14, 11), updated_at=at(14, 11)),
        Issue(key="WEB-3", project="WEB", title="Upgrade React to 19", type="chore", priority="medium",
              status="in_review", reporter=priya, assignee=sam, labels=["dependencies"], story_points=3,
              due_date=date(2025, 6, 13), created_at=at(20, 16), updated_at=at(30, 9)),
        Issue(key="API-1", project="API", title="Rate limiter returns 500 instead of 429", type="bug", priority="high",
              reporter=priya, assignee=sam, labels=["rate-limiting"], created_at=at(22, 8), updated_at=at(28, 17),
              links=[Link(relation="blocks", issue_key="API-2")]),
        Issue(key="API-2", project="API", title="Publish v2 OpenAPI spec", type="task", priority="medium",
              reporter=sam, assignee=alex, labels=["docs"], due_date=date(2025, 6, 20), created_at=at(23, 12),
              updated_at=at(23, 12), links=[Link(relation="blocked_by", issue_key="API-1")]),
        Issue(key="API-3", project="API", title="Pagination cursor leaks internal ids", type="bug", priority="high",
              status="closed", resolution="fixed", reporter=alex, assignee=sam, labels=["security"],
              created_at=at(2, 10), updated_at=at(9, 15)),
    ]  # fmt: skip
    return {p.key: p for p in projects}, {i.key: i for i in issues}


def build_server() -> MCPServer:
    """An issue tracker server with fresh, deterministically seeded state."""
    projects, issues = _seed()
    clock = LogicalClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    last_number = {p: max(int(k.split("-")[1]) for k in issues if k.startswith(f"{p}-")) for p in projects}
    server = MCPServer("issues", instructions="Issue tracker for the WEB and API projects.")

    def issue(key: str) -> Issue:
        if key not in issues:
            raise ToolError(f"No issue {key!r}; use search_issues to find one.")
        return issues[key]

    @server.tool(annotations=READ_ONLY)
    async def list_projects() -> list[Project]:
        """List the projects in the tracker with their lead and number of unresolved issues."""
        counts = {k: sum(i.project == k and i.status != "closed" for i in issues.values()) for k in projects}
        return [p.model_copy(update={"open_issues": counts[p.key]}) for p in projects.values()]

    @server.tool(annotations=READ_ONLY)
    async def search_issues(
        project: Annotated[
            str | None, Field(pattern=r"^[A-Z][A-Z0-9]{1,9}$", description="Project key, e.g. 'WEB'.")
        ] = None,
        text: Annotated[str | None, Field(description="Words to find in the title or description.")] = None,
        statuses: Annotated[Sequence[Status], Field(description="Only issues in one of these statuses.")] = (),
        priority: Annotated[Priority | None, Field(description="Only issues with this priority.")] = None,
        assignee: Annotated[Email | None, Field(description="Only issues assigned to this person.")] = None,
        labels: Annotated[Sequence[Label], Field(description="Only issues carrying all of these labels.")] = (),
        sort: Annotated[Literal["updated", "created", "priority"], Field(description="Sort key.")] = "updated",
        order: Annotated[Literal["asc", "desc"], Field(description="Sort direction.")] = "desc",
        limit: Annotated[int, Field(ge=1, le=100, description="Page size.")] = 25,
        offset: Annotated[int, Field(ge=0, description="Number of matching issues to skip.")] = 0,
    ) -> list[Issue]:
        """Search issues by project, text, status, priority, assignee and labels, with sorting and paging."""
        found = [
            i
            for i in issues.values()
            if (project is None or i.project == project)
            and (not statuses or i.status in statuses)
            and (priority is None or i.priority == priority)
            and (assignee is None or i.assignee == assignee)
            and set(labels) <= set(i.labels)
            and (not text or all(w in f"{i.title} {i.description}".lower() for w in text.lower().split()))
        ]
        keys = {
            "updated": lambda i: i.updated_at.timestamp(),
            "created": lambda i: i.created_at.timestamp(),
            "priority": lambda i: -PRIORITY_RANK[i.priority],
        }
        found.sort(key=keys[sort], reverse=order == "desc")
        return found[offset : offset + limit]

    @server.tool(annotations=READ_ONLY)
    async def get_issue(
        key: IssueKey,
        include_comments: Annotated[bool, Field(description="Include the comment thread.")] = True,
    ) -> Issue:
        """Get one issue with its status, assignee, labels, links and (optionally) comments."""
        found = issue(key)
        return found if include_comments else found.model_copy(update={"comments": []})

    @server.tool()
    async def create_issue(
        project: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]{1,9}$", description="Key of the project, e.g. 'API'.")],
        title: Annotated[str, Field(min_length=1, max_length=200, description="One-line summary of the issue.")],
        reporter: Annotated[Email, Field(description="Email of the person filing the issue.")],
        description: Annotated[str, Field(description="Details in markdown: steps, expected and actual result.")] = "",
        type: Annotated[IssueType, Field(description="Kind of work.")] = "task",
        priority: Annotated[Priority, Field(description="How urgent the issue is.")] = "medium",
        assignee: Annotated[
            Email | None, Field(description="Email of the person to assign; unassigned when omitted.")
        ] = None,
        labels: Annotated[Sequence[Label], Field(max_length=10, description="Labels to attach.")] = (),
        due_date: Annotated[date | None, Field(description="Deadline in YYYY-MM-DD format.")] = None,
        story_points: Annotated[int | None, Field(ge=0, le=100, description="Effort estimate in story points.")] = None,
    ) -> Issue:
        """File a new bug, feature request, task or chore in a project."""
        if project not in projects:
            raise ToolError(f"No project {project!r}; known: {', '.join(projects)}.")
        last_number[project] += 1
        now = clock.now()
        new = Issue(
            key=f"{project}-{last_number[project]}",
            project=project,
            title=title,
            description=description,
            type=type,
            priority=priority,
            reporter=reporter,
            assignee=assignee,
            labels=sorted(set(labels)),
            due_date=due_date,
            story_points=story_points,
            created_at=now,
            updated_at=now,
        )
        issues[new.key] = new
        return new

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    async def update_issue(
        key: IssueKey,
        changes: Annotated[IssueChanges, Field(description="The fields to change; others stay as they are.")],
    ) -> Issue:
        """Change an issue's title, description, priority, assignee, labels, due date or estimate."""
        given = changes.model_dump(exclude_unset=True)
        patch = {k: v for k, v in given.items() if v is not None or k in NULLABLE}
        updated = issue(key).model_copy(update={**patch, "updated_at": clock.now()})
        issues[key] = updated
        return updated

    @server.tool()
    async def transition_issue(
        key: IssueKey,
        to_status: Annotated[Status, Field(description="Workflow status to move the issue to.")],
        resolution: Annotated[Resolution | None, Field(description="Why it is closed; required when closing.")] = None,
        comment: Annotated[str | None, Field(description="Comment to add with the change.")] = None,
        author: Annotated[Email, Field(description="Who makes the change.")] = "alex.morgan@example.com",
    ) -> Issue:
        """Move an issue through the workflow (open, in progress, in review, closed)."""
        current = issue(key)
        if to_status not in TRANSITIONS[current.status]:
            allowed = ", ".join(sorted(TRANSITIONS[current.status]))
            raise ToolError(f"{key} is {current.status}; it can move to: {allowed}.")
        if to_status == "closed" and resolution is None:
            raise ToolError("Closing an issue needs a resolution.")
        now = clock.now()
        current.status, current.updated_at = to_status, now
        current.resolution = resolution if to_status == "closed" else None
        if comment:
            current.comments.append(Comment(author=author, body=comment, created_at=now))
        return current

    @server.tool()
    async def add_comment(
        key: IssueKey,
        body: Annotated[str, Field(min_length=1, max_length=10000, description="Comment text in markdown.")],
        author: Annotated[Email, Field(description="Email of the commenter.")],
        mention: Annotated[Sequence[Email], Field(description="People to notify about the comment.")] = (),
    ) -> Comment:
        """Add a comment to an issue, optionally mentioning people to notify them."""
        current = issue(key)
        mentions = " ".join(f"@{m.split('@')[0]}" for m in mention)
        added = Comment(author=author, body=f"{body}\n\n{mentions}".strip(), created_at=clock.now())
        current.comments.append(added)
        current.updated_at = added.created_at
        return added

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def delete_issue(key: IssueKey) -> str:
        """Delete an issue and its comments permanently, removing links to it from other issues."""
        gone = issue(key)
        del issues[key]
        for other in issues.values():
            other.links = [link for link in other.links if link.issue_key != key]
        return f"Deleted {key} ({gone.title!r})."

    return server


def main() -> None:
    args = make_parser(__doc__).parse_args()
    configure_logging(args.log_level)
    serve(build_server(), args)


if __name__ == "__main__":
    main()
