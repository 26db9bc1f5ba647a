"""Example upstream MCP server: a team calendar with events, invitations and free-slot search."""

import itertools
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

try:
    from ._common import Email, configure_logging, make_parser, serve
except ImportError:  # run as a script: python examples/servers/calendar_server.py
    from _common import Email, configure_logging, make_parser, serve  # type: ignore[no-redef]

READ_ONLY = ToolAnnotations(read_only_hint=True)
ME = "alex.morgan@example.com"

Visibility = Literal["default", "public", "private"]
Response = Literal["needs_action", "accepted", "declined", "tentative"]
EventId = Annotated[str, Field(description="Event identifier, e.g. 'evt-1003'.")]
Hour = Annotated[int, Field(ge=0, le=24)]
CalendarId = Annotated[str, Field(description="Calendar identifier: 'primary', 'engineering' or 'holidays'.")]


class Calendar(BaseModel):
    id: str
    name: str
    owner: str
    timezone: str
    writable: bool


class Attendee(BaseModel):
    email: str
    response: Response = "needs_action"
    comment: str | None = None


class Reminder(BaseModel):
    method: Literal["email", "popup"] = Field(description="How the reminder is delivered.")
    minutes_before: int = Field(ge=0, le=40320, description="Minutes before the start.")


class Recurrence(BaseModel):
    frequency: Literal["daily", "weekly", "monthly"] = Field(description="Repeat unit.")
    interval: int = Field(default=1, ge=1, le=30, description="Repeat every N units.")
    count: int | None = Field(default=None, ge=1, le=365, description="Occurrences.")
    until: date | None = Field(default=None, description="Last date (inclusive).")


class Event(BaseModel):
    id: str
    calendar_id: str
    title: str
    start: datetime
    end: datetime
    organizer: str
    description: str = ""
    location: str | None = None
    attendees: list[Attendee] = []
    visibility: Visibility = "default"
    reminders: list[Reminder] = []
    recurrence: Recurrence | None = None


class EventChanges(BaseModel):
    """Fields to change on an event; omitted fields are left as they are."""

    title: str | None = Field(default=None, min_length=1, description="New title.")
    start: datetime | None = Field(default=None, description="New start (ISO 8601).")
    end: datetime | None = Field(default=None, description="New end (ISO 8601).")
    location: str | None = Field(default=None, description="New location.")
    description: str | None = Field(default=None, description="New description.")
    visibility: Visibility | None = Field(default=None, description="New visibility.")
    add_attendees: list[Email] = Field(default=[], description="Emails to invite.")
    remove_attendees: list[Email] = Field(default=[], description="Emails to uninvite.")


class FreeSlot(BaseModel):
    start: datetime
    end: datetime


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 6, day, hour, minute, tzinfo=UTC)


def _people(*emails: str) -> list[Attendee]:
    return [Attendee(email=e, response="accepted") for e in emails]


def _seed() -> tuple[dict[str, Calendar], dict[str, Event]]:
    bank = "holidays@example.com"
    calendars = [
        Calendar(id="primary", name="Alex Morgan", owner=ME, timezone="Europe/London", writable=True),
        Calendar(id="engineering", name="Engineering", owner="eng@example.com", timezone="UTC", writable=True),
        Calendar(id="holidays", name="UK Holidays", owner=bank, timezone="Europe/London", writable=False),
    ]
    priya, sam = "priya.shah@example.com", "sam.lee@example.com"
    events = [
        Event(id="evt-1001", calendar_id="engineering", title="Weekly engineering sync", start=_at(2, 9),
              end=_at(2, 9, 30), organizer=ME, attendees=_people(ME, priya, sam),
              recurrence=Recurrence(frequency="weekly")),
        Event(id="evt-1002", calendar_id="primary", title="1:1 Alex / Priya", start=_at(3, 14), end=_at(3, 14, 30),
              organizer=ME, attendees=_people(ME, priya)),
        Event(id="evt-1003", calendar_id="engineering", title="Q3 planning workshop", start=_at(4, 13),
              end=_at(4, 16), organizer=priya, location="Room 4.12", attendees=_people(ME, priya, sam),
              reminders=[Reminder(method="popup", minutes_before=15)]),
        Event(id="evt-1004", calendar_id="primary", title="Dentist", start=_at(5, 8), end=_at(5, 9), organizer=ME,
              visibility="private"),
        Event(id="evt-1005", calendar_id="engineering", title="Release 2.4 go/no-go", start=_at(6, 15),
              end=_at(6, 15, 45), organizer=sam, attendees=_people(ME, sam)),
        Event(id="evt-1006", calendar_id="holidays", title="Whit Monday (bank holiday)", start=_at(9, 0),
              end=_at(10, 0), organizer=bank, visibility="public"),
    ]  # fmt: skip
    return {c.id: c for c in calendars}, {e.id: e for e in events}


def build_server() -> MCPServer:
    """A calendar server with fresh, deterministically seeded state."""
    calendars, events = _seed()
    next_id = itertools.count(1001 + len(events))
    server = MCPServer("calendar", instructions="Alex Morgan's work calendar (week of 2 June 2025).")

    def event(event_id: str) -> Event:
        if event_id not in events:
            raise ToolError(f"No event with id {event_id!r}; use list_events to find one.")
        return events[event_id]

    def writable(calendar_id: str) -> None:
        if calendar_id not in calendars:
            raise ToolError(f"No calendar {calendar_id!r}; known: {', '.join(calendars)}.")
        if not calendars[calendar_id].writable:
            raise ToolError(f"Calendar {calendar_id!r} is read-only.")

    @server.tool(annotations=READ_ONLY)
    async def list_calendars() -> list[Calendar]:
        """List the calendars the user can see, with owner, timezone and whether they are writable."""
        return list(calendars.values())

    @server.tool(annotations=READ_ONLY)
    async def list_events(
        calendar_id: Annotated[str | None, Field(description="Only this calendar; all when omitted.")] = None,
        start: Annotated[datetime | None, Field(description="Only events ending after this instant.")] = None,
        end: Annotated[datetime | None, Field(description="Only events starting before this instant.")] = None,
        query: Annotated[str | None, Field(description="Case-insensitive text to match in title or location.")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Maximum number of events to return.")] = 20,
    ) -> list[Event]:
        """List calendar events in a time range, optionally filtered by calendar and text, ordered by start."""
        found = sorted(events.values(), key=lambda e: e.start)
        if calendar_id is not None:
            found = [e for e in found if e.calendar_id == calendar_id]
        if start is not None:
            found = [e for e in found if e.end > _utc(start)]
        if end is not None:
            found = [e for e in found if e.start < _utc(end)]
        if query:
            q = query.lower()
            found = [e for e in found if q in e.title.lower() or q in (e.location or "").lower()]
        return found[:limit]

    @server.tool(annotations=READ_ONLY)
    async def get_event(event_id: EventId) -> Event:
        """Get one event with its attendees, their responses, reminders and recurrence rule."""
        return event(event_id)

    @server.tool()
    async def create_event(
        title: Annotated[str, Field(min_length=1, max_length=200, description="Short title shown on the calendar.")],
        start: Annotated[datetime, Field(description="Start time in ISO 8601; UTC when no offset is given.")],
        end: Annotated[datetime | None, Field(description="End time; defaults to start plus duration_minutes.")] = None,
        duration_minutes: Annotated[int, Field(ge=5, le=1440, description="Length when end is omitted.")] = 30,
        calendar_id: CalendarId = "primary",
        attendees: Annotated[Sequence[Email], Field(description="Email addresses of people to invite.")] = (),
        location: Annotated[str | None, Field(description="Room name, address or video-call link.")] = None,
        description: Annotated[str, Field(description="Agenda or notes shown in the event body.")] = "",
        visibility: Annotated[Visibility, Field(description="Who can see the event details.")] = "default",
        reminders: Annotated[Sequence[Reminder], Field(max_length=5, description="Reminders before the event.")] = (),
        recurrence: Annotated[Recurrence | None, Field(description="Repeat rule; a single event when omitted.")] = None,
    ) -> Event:
        """Create a calendar event, invite attendees by email and return the stored event."""
        writable(calendar_id)
        begin = _utc(start)
        finish = _utc(end) if end is not None else begin + timedelta(minutes=duration_minutes)
        if finish <= begin:
            raise ToolError("The event must end after it starts.")
        new = Event(
            id=f"evt-{next(next_id)}",
            calendar_id=calendar_id,
            title=title,
            start=begin,
            end=finish,
            organizer=ME,
            description=description,
            location=location,
            visibility=visibility,
            attendees=[Attendee(email=ME, response="accepted")] + [Attendee(email=a) for a in attendees if a != ME],
            reminders=list(reminders),
            recurrence=recurrence,
        )
        events[new.id] = new
        return new

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    async def update_event(
        event_id: EventId,
        changes: Annotated[EventChanges, Field(description="The fields to change; others stay as they are.")],
    ) -> Event:
        """Change an event's time, title, location, visibility or attendee list."""
        current = event(event_id)
        writable(current.calendar_id)
        patch = changes.model_dump(exclude_none=True, exclude={"add_attendees", "remove_attendees"})
        updated = current.model_copy(update=patch)
        updated.start, updated.end = _utc(updated.start), _utc(updated.end)
        if updated.end <= updated.start:
            raise ToolError("The event must end after it starts.")
        gone = set(changes.remove_attendees)
        kept = [a for a in updated.attendees if a.email not in gone]
        known = {a.email for a in kept}
        updated.attendees = kept + [Attendee(email=e) for e in changes.add_attendees if e not in known]
        events[event_id] = updated
        return updated

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def delete_event(
        event_id: EventId,
        notify_attendees: Annotated[bool, Field(description="Email a cancellation to the attendees.")] = True,
    ) -> str:
        """Delete an event permanently, optionally sending a cancellation notice to its attendees."""
        gone = event(event_id)
        writable(gone.calendar_id)
        del events[event_id]
        notified = len([a for a in gone.attendees if a.email != ME]) if notify_attendees else 0
        return f"Deleted {event_id} ({gone.title!r}); notified {notified} attendee(s)."

    @server.tool()
    async def respond_to_invitation(
        event_id: EventId,
        response: Annotated[Literal["accepted", "declined", "tentative"], Field(description="Your answer.")],
        comment: Annotated[str | None, Field(max_length=500, description="Note sent to the organizer.")] = None,
    ) -> Event:
        """Accept, decline or tentatively accept an event the user is invited to."""
        current = event(event_id)
        for attendee in current.attendees:
            if attendee.email == ME:
                attendee.response, attendee.comment = response, comment
                return current
        raise ToolError(f"{ME} is not invited to {event_id}.")

    @server.tool(annotations=READ_ONLY)
    async def find_free_slots(
        attendees: Annotated[list[Email], Field(min_length=1, description="People who must all be free.")],
        window_start: Annotated[datetime, Field(description="Earliest acceptable start (ISO 8601).")],
        window_end: Annotated[datetime, Field(description="Latest acceptable end (ISO 8601).")],
        duration_minutes: Annotated[int, Field(ge=15, le=480, description="Length of the meeting.")] = 30,
        working_hours: Annotated[
            tuple[Hour, Hour], Field(description="First and last working hour of each day in UTC, e.g. [9, 17].")
        ] = (9, 17),
        include_weekends: Annotated[bool, Field(description="Also offer Saturday and Sunday slots.")] = False,
        max_results: Annotated[int, Field(ge=1, le=50, description="Maximum number of slots to return.")] = 10,
    ) -> list[FreeSlot]:
        """Find time slots in a window when all given attendees are free for the requested duration."""
        lo, hi = _utc(window_start), _utc(window_end)
        first, last = working_hours
        if first >= last or lo >= hi:
            raise ToolError("working_hours and the window must each end after they start.")
        wanted = set(attendees)
        busy = sorted(
            (e.start, e.end)
            for e in events.values()
            if wanted & ({a.email for a in e.attendees if a.response != "declined"} | {e.organizer})
        )
        need, day = timedelta(minutes=duration_minutes), lo.date()
        slots: list[FreeSlot] = []
        while day <= hi.date() and len(slots) < max_results:
            if include_weekends or day.weekday() < 5:
                cursor = max(lo, datetime.combine(day, time(first), UTC))
                stop = min(hi, datetime.combine(day, time(0), UTC) + timedelta(hours=last))
                for b_start, b_end in [*busy, (stop, stop)]:
                    if b_end <= cursor or b_start > stop:
                        continue
                    if min(b_start, stop) - cursor >= need:
                        slots.append(FreeSlot(start=cursor, end=min(b_start, stop)))
                    cursor = max(cursor, b_end)
            day += timedelta(days=1)
        return slots[:max_results]

    return server


def main() -> None:
    args = make_parser(__doc__).parse_args()
    configure_logging(args.log_level)
    serve(build_server(), args)


if __name__ == "__main__":
    main()
