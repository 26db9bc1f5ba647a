"""Example upstream MCP server: a personal notes app with notebooks, tags, checklists and sharing."""

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

try:
    from ._common import Email, LogicalClock, configure_logging, make_parser, serve
except ImportError:  # run as a script: python examples/servers/notes_server.py
    from _common import Email, LogicalClock, configure_logging, make_parser, serve  # type: ignore[no-redef]

READ_ONLY = ToolAnnotations(read_only_hint=True)

Permission = Literal["view", "comment", "edit"]
NoteId = Annotated[str, Field(pattern=r"^note-\d+$", description="Note identifier, e.g. 'note-3'.")]
Tag = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$", description="Lower-case tag, e.g. 'q3-planning'.")]


class ChecklistItem(BaseModel):
    text: str = Field(min_length=1, description="What to do.")
    done: bool = Field(default=False, description="Whether the item is ticked.")


class Share(BaseModel):
    email: Email = Field(description="Person to share with.")
    permission: Permission = Field(default="view", description="What they may do with the note.")


class Note(BaseModel):
    id: str
    title: str
    body: str
    notebook: str
    tags: list[str] = []
    pinned: bool = False
    checklist: list[ChecklistItem] = []
    shared_with: list[Share] = []
    trashed: bool = False
    created_at: datetime
    updated_at: datetime


class NoteSummary(BaseModel):
    id: str
    title: str
    notebook: str
    tags: list[str]
    pinned: bool
    updated_at: datetime
    snippet: str


class Notebook(BaseModel):
    name: str
    note_count: int
    pinned_count: int


def _seed() -> dict[str, Note]:
    def at(day: int, hour: int) -> datetime:
        return datetime(2025, 5, day, hour, tzinfo=UTC)

    todo = [
        ChecklistItem(text="Freeze main", done=True),
        ChecklistItem(text="Run load test"),
        ChecklistItem(text="Draft changelog"),
    ]
    notes = [
        Note(id="note-1", title="Q3 planning ideas", notebook="Work", tags=["q3-planning", "ideas"], pinned=True,
             created_at=at(12, 9), updated_at=at(28, 16),
             body="Themes: reliability, onboarding speed, gateway routing.\nOpen question: platform team headcount."),
        Note(id="note-2", title="Release 2.4 checklist", notebook="Work", tags=["release"], created_at=at(20, 10),
             updated_at=at(30, 11), body="Steps before the go/no-go meeting.", checklist=todo),
        Note(id="note-3", title="Sourdough recipe", notebook="Personal", tags=["cooking"], created_at=at(3, 19),
             updated_at=at(3, 19), body="500 g flour, 350 g water, 100 g starter, 10 g salt. Bulk ferment 5 h."),
        Note(id="note-4", title="Book list 2025", notebook="Personal", tags=["reading", "ideas"], created_at=at(1, 8),
             updated_at=at(25, 21),
             body="- The Pragmatic Programmer\n- Designing Data-Intensive Applications\n- Piranesi"),
        Note(id="note-5", title="Meeting notes: vendor call", notebook="Work", tags=["vendors"], created_at=at(27, 15),
             updated_at=at(27, 15),
             body="Vendor offers 12% discount for a 2-year contract. Follow up with finance by 6 June.",
             shared_with=[Share(email="priya.shah@example.com", permission="comment")]),
    ]  # fmt: skip
    return {n.id: n for n in notes}


def _summary(note: Note) -> NoteSummary:
    snippet = note.body.splitlines()[0][:120] if note.body else ""
    return NoteSummary(**note.model_dump(include=set(NoteSummary.model_fields) - {"snippet"}), snippet=snippet)


def build_server() -> MCPServer:
    """A notes server with fresh, deterministically seeded state."""
    notes = _seed()
    clock = LogicalClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    next_id = itertools.count(len(notes) + 1)
    server = MCPServer("notes", instructions="Personal and work notes organised in notebooks with tags.")

    def note(note_id: str, *, trashed_too: bool = False) -> Note:
        if note_id not in notes or (notes[note_id].trashed and not trashed_too):
            raise ToolError(f"No note with id {note_id!r}; use search_notes to find one.")
        return notes[note_id]

    @server.tool(annotations=READ_ONLY)
    async def search_notes(
        query: Annotated[str, Field(description="Words to look for in titles and bodies; empty matches all.")] = "",
        tags: Annotated[Sequence[Tag], Field(description="Only notes carrying all of these tags.")] = (),
        notebook: Annotated[str | None, Field(description="Only notes in this notebook, e.g. 'Work'.")] = None,
        sort_by: Annotated[
            Literal["relevance", "updated", "created", "title"], Field(description="Result order.")
        ] = "relevance",
        limit: Annotated[int, Field(ge=1, le=50, description="Maximum number of notes to return.")] = 10,
    ) -> list[NoteSummary]:
        """Search notes by text, tags and notebook and return short summaries."""
        words = query.lower().split()
        found = [n for n in notes.values() if not n.trashed and set(tags) <= set(n.tags)]
        if notebook is not None:
            found = [n for n in found if n.notebook.lower() == notebook.lower()]

        def score(n: Note) -> int:
            text = (3 * n.title.lower().count(w) + n.body.lower().count(w) for w in words)
            return sum(text) + sum(2 for w in words if w in n.tags)

        found = [n for n in found if not words or score(n) > 0]
        keys = {
            "relevance": lambda n: (-score(n), -n.updated_at.timestamp()),
            "updated": lambda n: -n.updated_at.timestamp(),
            "created": lambda n: -n.created_at.timestamp(),
            "title": lambda n: n.title.lower(),
        }
        return [_summary(n) for n in sorted(found, key=keys[sort_by])[:limit]]

    @server.tool(annotations=READ_ONLY)
    async def get_note(
        note_id: NoteId,
        format: Annotated[
            Literal["markdown", "plain"], Field(description="Render the checklist as markdown or plain text.")
        ] = "markdown",
    ) -> str:
        """Get the full text of one note, including its checklist and tags."""
        n = note(note_id)
        box = ("- [x] ", "- [ ] ") if format == "markdown" else ("(done) ", "(todo) ")
        lines = [f"# {n.title}" if format == "markdown" else n.title, "", n.body]
        lines += [f"{box[0] if item.done else box[1]}{item.text}" for item in n.checklist]
        lines += [
            "",
            f"notebook: {n.notebook} | tags: {', '.join(n.tags) or '-'} | updated: {n.updated_at.isoformat()}",
        ]
        return "\n".join(lines)

    @server.tool()
    async def create_note(
        title: Annotated[str, Field(min_length=1, max_length=200, description="Title of the new note.")],
        body: Annotated[str, Field(description="Note text in markdown.")] = "",
        notebook: Annotated[str, Field(description="Notebook to file the note in; created if missing.")] = "Inbox",
        tags: Annotated[Sequence[Tag], Field(max_length=20, description="Tags to attach.")] = (),
        pinned: Annotated[bool, Field(description="Pin the note to the top of its notebook.")] = False,
        checklist: Annotated[Sequence[ChecklistItem], Field(description="Optional to-do items.")] = (),
    ) -> Note:
        """Create a note in a notebook with optional tags and checklist items."""
        now = clock.now()
        new = Note(
            id=f"note-{next(next_id)}",
            title=title,
            body=body,
            notebook=notebook,
            tags=sorted(set(tags)),
            pinned=pinned,
            checklist=list(checklist),
            created_at=now,
            updated_at=now,
        )
        notes[new.id] = new
        return new

    @server.tool()
    async def update_note(
        note_id: NoteId,
        title: Annotated[str | None, Field(min_length=1, description="New title; unchanged when omitted.")] = None,
        text: Annotated[str | None, Field(description="Text to write into the body; unchanged when omitted.")] = None,
        mode: Annotated[
            Literal["replace", "append", "prepend"], Field(description="How text is combined with the body.")
        ] = "append",
        pinned: Annotated[bool | None, Field(description="Pin or unpin the note.")] = None,
        notebook: Annotated[str | None, Field(description="Move the note to this notebook.")] = None,
    ) -> Note:
        """Edit a note: retitle it, add to or replace its body, pin it or move it to another notebook."""
        n = note(note_id)
        if text is not None:
            n.body = {"replace": text, "append": f"{n.body}\n{text}", "prepend": f"{text}\n{n.body}"}[mode].strip("\n")
        n.title = title or n.title
        n.pinned = n.pinned if pinned is None else pinned
        n.notebook = notebook or n.notebook
        n.updated_at = clock.now()
        return n

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    async def tag_notes(
        note_ids: Annotated[list[NoteId], Field(min_length=1, max_length=100, description="Notes to retag.")],
        add: Annotated[Sequence[Tag], Field(description="Tags to add.")] = (),
        remove: Annotated[Sequence[Tag], Field(description="Tags to remove.")] = (),
    ) -> list[NoteSummary]:
        """Add and remove tags on several notes at once."""
        targets = [note(i) for i in note_ids]
        for n in targets:
            n.tags = sorted((set(n.tags) | set(add)) - set(remove))
            n.updated_at = clock.now()
        return [_summary(n) for n in targets]

    @server.tool()
    async def share_note(
        note_id: NoteId,
        recipients: Annotated[
            list[Share], Field(min_length=1, max_length=20, description="People and their permissions.")
        ],
        message: Annotated[
            str | None, Field(max_length=1000, description="Message included in the invitation email.")
        ] = None,
    ) -> Note:
        """Share a note with people by email, each with view, comment or edit permission."""
        n = note(note_id)
        by_email = {s.email: s for s in n.shared_with} | {s.email: s for s in recipients}
        n.shared_with = sorted(by_email.values(), key=lambda s: s.email)
        n.updated_at = clock.now()
        return n

    @server.tool(annotations=READ_ONLY)
    async def list_notebooks() -> list[Notebook]:
        """List notebooks with how many notes and pinned notes each holds."""
        live = [n for n in notes.values() if not n.trashed]
        names = sorted({n.notebook for n in live})
        return [
            Notebook(
                name=name,
                note_count=sum(n.notebook == name for n in live),
                pinned_count=sum(n.notebook == name and n.pinned for n in live),
            )
            for name in names
        ]

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def delete_note(
        note_id: NoteId,
        permanent: Annotated[bool, Field(description="Erase now instead of moving to the trash.")] = False,
    ) -> str:
        """Move a note to the trash, or erase it permanently."""
        n = note(note_id, trashed_too=permanent)
        if permanent:
            del notes[note_id]
            return f"Permanently deleted {note_id} ({n.title!r})."
        n.trashed, n.updated_at = True, clock.now()
        return f"Moved {note_id} ({n.title!r}) to the trash."

    return server


def main() -> None:
    args = make_parser(__doc__).parse_args()
    configure_logging(args.log_level)
    serve(build_server(), args)


if __name__ == "__main__":
    main()
