"""What a gateway keeps of each room it delivers: the fast path for context and room.

docs/architecture/design.md §4: the state per-recipient shaping needs comes either from what the
gateway folds from the stream it already reads (a bounded window of each room's recent events),
or from the log (cold start, deep history). A window answers only what it can answer
exactly; anything older than it holds goes to the log, so both paths give the same frame.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from chips_common.db.spend_reads import (
    HELD_READ,
    PERSON_PREFIX,
    JobRead,
    held_since_last_person,
    read_job,
)
from chips_common.events.wire import ContextJson, EventJson, LineJson, TurnJson
from chips_common.rules.context import Budget, fit
from chips_common.rules.context_lines import (
    Changes,
    line_of,
    note_change,
    reauthored,
    revised,
)
from chips_common.rules.delivery import OwnerOf
from chips_common.rules.handles import Member, as_shown
from chips_common.rules.room import (
    JOINING,
    Comebacks,
    Led,
    TurnNews,
    credited,
    news_for,
    room_for,
    since_is_joining,
    speaker,
)
from chips_common.rules.scope import opened_with, standings_of
from chips_common.rules.spend import Job, add_usage, ceiling_of, new_job
from chips_gateway.reader import TURN_ENDS, WORKING_TOLD, LogReader

KEEP = 400  # events of one room a window holds

# A held post, and the room's job as of it (None when the window did not fold it).
Held = tuple[EventJson, JobRead | None]


@dataclass(frozen=True)
class AsOf:
    """What a room's window told of one event as it was folded, for the send loop that
    shapes the event later: each is None when the window could not tell (ask the log)."""

    # A turn's room and context (RoomWindow.extras).
    extras: TurnJson | None = None
    # The room's job as of the event (spend_reads.read_job).
    job: JobRead | None = None
    # The held posts a person's act at the event hands on, newest first
    # (spend_reads.held_since_last_person).
    held: tuple[Held, ...] | None = None


class JobFold:
    """A room's job and its held posts since a person last acted, folded in seq order as
    ``read_job`` and ``held_since_last_person`` read them from the log (docs/adr/0083).

    Both come from the log when the window is loaded (unless it holds the whole room), and
    are then changed by every event of the room alone: a person's act begins a job and
    hands the held posts on; a ceiling set, a usage and a held post add to them.
    """

    def __init__(
        self, read: JobRead | None, held: Iterable[Held] = (), *, known: bool = True
    ) -> None:
        # False for a window that holds part of a room and was not told the rest.
        self.known = known
        # None until the room's first event (the job begins with the room).
        self.job: Job | None = read.job if read is not None else None
        self.ceiling = read.ceiling_usd if read is not None else ceiling_of(None)
        self.read: JobRead | None = read
        # Oldest first, at most HELD_READ: the newest ones are what the log's read hands on.
        self.held: tuple[Held, ...] = tuple(held)[-HELD_READ:]
        # The held posts as they stood before the last event folded, and its seq.
        self.held_then: tuple[Held, ...] = ()
        self.folded = 0

    def apply(self, event: EventJson) -> None:
        seq, kind = event["seq"], event["type"]
        self.held_then, self.folded = self.held, seq
        job = self.job
        person = str((event.get("actor") or {}).get("id", "")).startswith(PERSON_PREFIX)
        if person or job is None:
            job = new_job(seq)
        if kind == "space.spend_ceiling_set":
            self.ceiling = ceiling_of(event.get("usd"))
        elif kind == "usage" and seq > job.since_seq:
            job = add_usage(job, str(event.get("run_id")), event.get("cost_usd"))
        if job is not self.job or self.read is None or self.read.ceiling_usd != self.ceiling:
            self.job = job
            self.read = JobRead(job, self.ceiling)
        if person:
            self.held = ()
        elif kind == "message.post" and event.get("held") is True:
            self.held = (*self.held[-(HELD_READ - 1) :], (event, self.read))

    def job_at(self, seq: int) -> JobRead | None:
        """The room's job as of ``seq``, the event just folded; None otherwise."""
        return self.read if self.known and seq == self.folded else None

    def held_at(self, seq: int) -> tuple[Held, ...] | None:
        """What ``held_since_last_person`` reads at ``seq`` (the event just folded), newest
        first; None otherwise."""
        if not self.known or seq != self.folded:
            return None
        return tuple(reversed(self.held_then))


def who(names: dict[str, dict[str, str]], pid: str) -> dict[str, str]:
    return names.get(pid) or {"id": pid, "kind": "unknown", "name": pid}


def shown(
    members: Iterable[Member], names: dict[str, dict[str, str]], owners: Mapping[str, str]
) -> list[Member]:
    """The room's members as it shows them: each agent with its harness beside it, and a
    harness that stands behind agents shown as those agents (docs/adr/0070)."""
    found = []
    for member in members:
        # Named as it is now: an agent renamed since it joined (agent.updated), as the log
        # path reads it from the directory, so live and replayed rooms agree.
        current = names.get(member.id)
        if current is not None and current["name"] != member.name:
            member = replace(member, name=current["name"])
        if member.kind == "agent" and member.harness_id is None and member.id in owners:
            harness = owners[member.id]
            member = replace(member, harness_id=harness, harness=who(names, harness)["name"])
        found.append(member)
    return as_shown(found)


class RoomWindow:
    def __init__(
        self,
        space_id: str,
        members: dict[str, Member],
        events: list[EventJson],
        complete: bool,
        marks: dict[str, int | None],
        joined: list[EventJson] | None = None,
        first_said: int | None = None,
        lead: str | None = None,
        told: EventJson | None = None,
        spend: JobFold | None = None,
    ) -> None:
        self.space_id = space_id
        # The room's lead and the last room.working / room.idle (docs/adr/0090), as the
        # log path reads them as of a message.
        self.lead = lead
        self.told = told
        self.members = members
        self.events: deque[EventJson] = deque(events, maxlen=KEEP)
        # Every event of the room after this seq is in the window (0: the whole room).
        self.covers_after = 0 if complete else (events[0]["seq"] - 1 if events else 0)
        # Where each member's context starts (LogReader.context_start), None when unknown.
        self.marks = marks
        # The first message for each member since its last words or its joining, and the
        # members for whom that is known (their last words or joining are in the window).
        self.asked: dict[str, int] = {}
        self.fresh: set[str] = set()
        # The agents an archive took out, and the seqs of their comebacks: not joinings.
        self.comebacks = Comebacks()
        self.back: set[int] = set()
        for event in events:
            self._came_back(event)
            self._turns(event, marks=False)
        # Each event's context line, made once rather than for every delivery.
        self.lines: dict[int, LineJson | None] = {}
        # Every event that brought somebody into the room, and the seq of its first words,
        # however long ago: a turn's news needs them even when its context starts further
        # back than the window holds (a harness that listens and never speaks).
        if joined is None:
            joined = (
                [e for e in events if e["type"] in JOINING and e["seq"] not in self.back]
                if complete
                else None
            )
        self.joined = joined
        if first_said is None and complete:
            first_said = next((e["seq"] for e in events if e["type"] == "message.post"), None)
        self.first_said = first_said
        # The room's job and held posts; folded from the events when they are the whole room.
        if spend is None:
            # Not the whole room, and not told what came before: the log is asked.
            spend = JobFold(None, known=complete)
            for event in events:
                spend.apply(event)
        self.spend = spend

    @classmethod
    async def load(
        cls, reader: LogReader, workspace_id: str, space_id: str, before: int
    ) -> RoomWindow:
        """The window of a room as it stood just before event ``before``."""
        members = await reader.members_as_of(workspace_id, space_id, before - 1)
        events = await reader.space_window(workspace_id, space_id, 0, before, KEEP)
        marks: dict[str, int | None] = {
            m.id: await reader.context_start(workspace_id, space_id, m.id, before) for m in members
        }
        complete = len(events) < KEEP
        joined = None if complete else await reader.joinings(workspace_id, space_id, 0, before)
        first_said = None if complete else await reader.first_said(workspace_id, space_id, before)
        lead, told = await reader.led_as_of(workspace_id, space_id, before - 1)
        spend = None
        if not complete:
            async with reader.engine.connect() as conn:
                job = await read_job(conn, workspace_id, space_id, before - 1)
                held = await held_since_last_person(conn, workspace_id, space_id, before)
            # The job as of each held post is not known here: their spend is read if handed.
            spend = JobFold(job, held=[(e, None) for e in reversed(held)])
        return cls(
            space_id,
            {m.id: m for m in members},
            events,
            complete=complete,
            marks=marks,
            joined=joined,
            first_said=first_said,
            lead=lead,
            told=told,
            spend=spend,
        )

    def apply(self, event: EventJson, names: dict[str, dict[str, str]]) -> None:
        """Fold one event of the room, in seq order."""
        if len(self.events) == KEEP:
            self.covers_after = self.events[0]["seq"]
            self.lines.pop(self.covers_after, None)
        self.events.append(event)
        self.spend.apply(event)
        back = self._came_back(event)
        kind, seq = event["type"], event["seq"]
        self.lines[seq] = line_of(event, lambda p: who(names, p))
        if kind == "message.post" and self.first_said is None:
            self.first_said = seq
        if kind == "space.lead_set":
            self.lead = event.get("agent_id")
        elif kind in WORKING_TOLD:
            self.told = event
        if kind in JOINING:
            if self.joined is not None and not back:
                self.joined.append(event)
            for pid, standing in standings_of(event).items():
                self._add(pid, names, standing)
        elif kind == "membership.removed":
            self.members.pop(event["participant_id"], None)
        self._turns(event, marks=True)

    def follow_room(
        self, event: EventJson, names: dict[str, dict[str, str]], *, back: bool = False
    ) -> None:
        """A thread's window follows its room's membership (it has none of its own);
        ``back``: the room's window found the event an agent's comeback (not a joining)."""
        if event["type"] == "membership.added":
            pid = event["participant_id"]
            self._add(pid, names, event.get("standing") or "member")
            if back:
                return
            self.asked.pop(pid, None)
            self.fresh.add(pid)
            self.marks[pid] = event["seq"]
        elif event["type"] == "membership.removed":
            self.members.pop(event["participant_id"], None)

    def _came_back(self, event: EventJson) -> bool:
        """Whether ``event`` brings back an agent the room's archive released (its
        unarchive): not a joining, so neither its context nor the news starts there."""
        if self.comebacks.fold(event):
            self.back.add(event["seq"])
            return True
        return False

    def _add(self, pid: str, names: dict[str, dict[str, str]], standing: str) -> None:
        known = who(names, pid)
        self.members[pid] = Member(pid, known["kind"], known["name"], standing)

    def _turns(self, event: EventJson, *, marks: bool) -> None:
        """Follow who was asked what and where each turn ended, as context_start reads it.

        A member's context starts at its joining, or where the turn that said its last
        words began: the first message for it since its words before those.
        """
        kind, seq = event["type"], event["seq"]
        joined: list[str] = []
        if kind == "space.created":
            joined = opened_with(event)
        elif kind == "membership.added" and seq not in self.back:
            joined = [event["participant_id"]]
        for pid in joined:
            self.asked.pop(pid, None)
            self.fresh.add(pid)
            if marks:
                self.marks[pid] = seq
        if kind not in TURN_ENDS:
            return
        author = event["actor"]["id"]
        if kind == "message.post":
            addressed = event.get("addressed_to")
            if addressed is None:  # logged before Chips said whom: for every harness
                addressed = [m.id for m in self.members.values() if m.kind == "harness"]
            for pid in addressed:
                if pid != author:
                    self.asked.setdefault(pid, seq)
        began = self.asked.pop(author, None)
        if marks:
            self.marks[author] = (
                began if began is not None else seq if author in self.fresh else None
            )
        self.fresh.add(author)

    def since(self, pid: str, before: int) -> int | None:
        """Where ``pid``'s context starts for a message at ``before``, or None if unknown.

        The window folds events in seq order and is asked about the message just folded,
        so a member's mark is below it unless the member said it (no context then).
        """
        mark = self.marks.get(pid)
        return mark if mark is not None and mark < before else None

    def line(self, event: EventJson, names: dict[str, dict[str, str]]) -> LineJson | None:
        seq = event["seq"]
        if seq not in self.lines:  # loaded with the window rather than folded into it
            self.lines[seq] = line_of(event, lambda p: who(names, p))
        return self.lines[seq]

    def extras(
        self,
        takers: list[str],
        event: EventJson,
        budget: Budget,
        names: dict[str, dict[str, str]],
        owners: Mapping[str, str],
    ) -> TurnJson | None:
        """The room and context for ``takers``' turn on ``event`` (a harness, or those of
        its agents the message is for), or None to ask the log. Several agents share one
        context: the one that has heard least's (docs/product/websocket.md, Being spoken to)."""
        seq = event["seq"]
        since: dict[str, int] = {}
        comings: dict[str, tuple[list[EventJson], bool]] = {}
        for pid in takers:
            mark = self.since(pid, seq)
            if mark is None:
                return None
            found = self.joinings(pid, mark, seq, owners.get)
            if found is None:
                return None  # the room's comings since then are older than the window holds
            since[pid], comings[pid] = mark, found
        least = min(takers, key=lambda t: (since[t], takers.index(t)))
        members = shown(self.members.values(), names, owners)
        extra: TurnJson = {"from": speaker(event, members)}
        kept_count: int | None = None
        if budget.lines > 0:
            context = self.context(least, event, since[least], budget, names)
            if context is None:
                return None
            extra["context"] = context
            kept_count = len(context["lines"]) if context["truncated"] else None
        news: dict[str, TurnNews] = {
            pid: news_for(
                pid,
                event,
                members,
                joinings,
                since[pid],
                talked_before,
                lambda p: who(names, p)["name"],
                kept_count,
            )
            for pid, (joinings, talked_before) in comings.items()
        }
        led = Led(self.lead, self.told, event.get("ts", ""))
        extra["room"] = room_for(takers, members, news, led)
        return extra

    def as_of(
        self,
        takers: list[str],
        event: EventJson,
        budget: Budget,
        names: dict[str, dict[str, str]],
        owners: Mapping[str, str],
    ) -> AsOf:
        """What the send loop needs of the room as of ``event``, the event just folded:
        for a turn (``takers``), its room and context and the room's job; for a person's
        act, the held posts it hands on."""
        seq = event["seq"]
        extras = job = held = None
        if takers:
            extras = self.extras(takers, event, budget, names, owners)
            job = self.spend.job_at(seq)
        if (event.get("actor") or {}).get("kind") == "person":
            held = self.spend.held_at(seq)
        return AsOf(extras, job, held)

    def joinings(
        self, pid: str, since: int, seq: int, owner_of: OwnerOf
    ) -> tuple[list[EventJson], bool] | None:
        """The room's events that brought somebody in from ``since`` to the message (a
        given agent's credited to who brought its harness in), and whether anything was
        said before ``since``; None when the window cannot tell."""
        if self.joined is None:
            return None
        joinings = [e for e in credited(self.joined, owner_of) if since <= e["seq"] < seq]
        talked_before = False
        if since_is_joining(joinings, since, pid):
            talked_before = self.first_said is not None and self.first_said < since
        return joinings, talked_before

    def context(
        self,
        pid: str,
        event: EventJson,
        since: int,
        budget: Budget,
        names: dict[str, dict[str, str]],
    ) -> ContextJson | None:
        """The lines said since ``since`` up to the message, fitted to the budget."""
        seq = event["seq"]
        wanted = budget.lines + 1
        lines: list[LineJson] = []
        changes: Changes = {}
        reached_since = False
        for older in reversed(self.events):
            if older["seq"] >= seq:
                continue
            if older["seq"] <= since:
                reached_since = True
                break
            note_change(older, changes)
            line = self.line(older, names)
            if line is not None:
                line = revised(line, changes)
            if line is not None:
                line = reauthored(line, changes, lambda p: who(names, p))
            if line is not None and not (line["kind"] == "said" and line["from"]["id"] == pid):
                lines.append(line)
                if len(lines) == wanted:
                    break
        if len(lines) < wanted and not reached_since and self.covers_after > since:
            return None  # the lines it needs are older than the window holds
        lines.reverse()
        kept, truncated = fit(lines, budget)
        return {
            "lines": kept,
            "since_seq": since,
            "truncated": truncated,
            "before": kept[0]["seq"] if kept else seq,
        }


class ReplayWindows:
    """Room windows folded along one socket's replay, as the feed folds them live.

    Without them every turn in a long replay is shaped from the log (several reads each);
    with them a harness resuming after a thousand messages is handed each turn from memory,
    and the log is asked only what a window cannot answer exactly.
    """

    def __init__(self, reader: LogReader, workspace_id: str, names: dict[str, dict[str, str]]):
        self.reader = reader
        self.workspace_id = workspace_id
        self.names = names
        self.rooms: dict[str, RoomWindow] = {}

    async def fold(self, event: EventJson) -> RoomWindow | None:
        """Fold one event of the replay (every event, in seq order); its room's window."""
        space_id = event.get("space_id")
        if space_id is None:
            return None
        kind = event["type"]
        if kind == "space.erased" or kind in ("membership.added", "membership.removed"):
            # A thread's members are its room's: drop the other windows rather than follow
            # each thread's room here; they load again, as of their next event.
            kept = self.rooms.get(space_id) if kind != "space.erased" else None
            self.rooms = {space_id: kept} if kept is not None else {}
        if kind == "space.erased":
            return None
        window = self.rooms.get(space_id)
        if window is None:
            window = await RoomWindow.load(self.reader, self.workspace_id, space_id, event["seq"])
            self.rooms[space_id] = window
        window.apply(event, self.names)
        return window
