"""What a harness is sent with a message that is its turn: context and room.

Both are worked out from the log relative to the message's seq, never from what this
gateway happens to have seen, so a live delivery, a replay and a delivery after any
restart hand over the same lines (docs/product/websocket.md, What you're told with a question).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chips_common.db.spend_reads import JobRead, held_since_last_person, read_job
from chips_common.events.wire import (
    AttachmentJson,
    ContextJson,
    DeliveredJson,
    EventJson,
    LineJson,
    TurnJson,
    canonical_event,
)
from chips_common.ids import event_id_for_message
from chips_common.rules.agents_view import own_of
from chips_common.rules.context import Budget, fit
from chips_common.rules.context_lines import TAKEN_BY, Changes, lines_of, note_change
from chips_common.rules.delivery import OwnerOf, WorkingTurns, nobody, shape_for, takers
from chips_common.rules.handles import as_shown
from chips_common.rules.lead import handed_opening
from chips_common.rules.room import (
    Led,
    TurnNews,
    news_for,
    room_for,
    since_is_joining,
    speaker,
)
from chips_common.rules.spend import spend_sentence, with_spend_line
from chips_gateway import metrics
from chips_gateway.auth import Principal
from chips_gateway.files import FileLinks, context_files
from chips_gateway.reader import LogReader
from chips_gateway.windows import Held


async def lines_from(
    reader: LogReader, events: list[EventJson], changes: Changes | None = None
) -> list[LineJson]:
    """The context lines these events make, with who said or did each.

    ``changes`` carries the edits and take-backs of newer events already read, for a
    caller reading a room backwards in chunks.
    """
    ids = {(e.get("actor") or {}).get("id", "") for e in events} | {
        e["participant_id"] for e in events if "participant_id" in e
    }
    # Who took somebody's place, known from a newer chunk: the author of older lines.
    ids |= {v for k, v in (changes or {}).items() if k.startswith(TAKEN_BY) and v}
    people = await reader.participants(sorted(i for i in ids if i))

    def who(pid: str) -> dict[str, str]:
        return people.get(pid) or {"id": pid, "kind": "unknown", "name": pid}

    return lines_of(events, who, changes)


async def build_context(
    reader: LogReader,
    workspace_id: str,
    taker_id: str,
    event: EventJson,
    budget: Budget,
    since: int,
    changes: Changes | None = None,
) -> ContextJson:
    """Lines said in the room since the taker last spoke there (or joined), up to the message.

    Reads back from the message only as far as the budget can use (one line more, to know
    whether older ones were left out), so a long room costs no more than a short one.
    The taker is the harness, or the one of its agents whose context it is.
    """
    space_id, seq = event["space_id"], event["seq"]
    wanted = budget.lines + 1
    lines: list[LineJson] = []
    changes = {} if changes is None else changes
    upper = seq
    while len(lines) < wanted:
        chunk = max(wanted - len(lines), 8)
        events = await reader.space_window(workspace_id, space_id, since, upper, chunk)
        said = await lines_from(reader, events, changes)
        lines = [line for line in said if not own(line, taker_id)] + lines
        if len(events) < chunk:
            break
        upper = events[0]["seq"]
    kept, truncated = fit(lines, budget)
    return {
        "lines": kept,
        "since_seq": since,
        "truncated": truncated,
        "before": kept[0]["seq"] if kept else seq,
    }


def own(line: LineJson, taker_id: str) -> bool:
    """The taker's own words are not handed back to it."""
    return line["kind"] == "said" and (line.get("from") or {}).get("id") == taker_id


def least_heard(takers: list[str], since: dict[str, int]) -> str:
    """Of several agents taking one turn, the one whose context starts furthest back: they
    share its context (docs/product/websocket.md, Being spoken to)."""
    return min(takers, key=lambda t: (since[t], takers.index(t)))


class Shaper:
    """Shapes every event one socket is sent (one a socket: slotted, docs/adr/0159)."""

    __slots__ = (
        "budget",
        "fileless",
        "kind",
        "links",
        "owner_of",
        "principal",
        "reader",
        "speaks_agents",
        "turns",
    )

    def __init__(
        self,
        reader: LogReader,
        principal: Principal,
        budget: Budget,
        links: FileLinks | None = None,
    ) -> None:
        self.reader = reader
        self.principal = principal
        self.budget = budget
        self.kind: Any = "harness" if principal.kind == "harness" else "person"
        self.links = links
        # An agent's harness (the feed's directory, once subscribed): whose turn it is.
        self.owner_of: OwnerOf = nobody
        # Whether the harness declared ``agents``: then a message.new says ``for``.
        self.speaks_agents = False
        # The turns its agents have going (a harness's, once subscribed).
        self.turns: WorkingTurns | None = None
        # Rooms known to hold no file as of the last event shaped here: every event of a
        # room this socket is in passes through shape() in seq order, so a post with files
        # is seen before any later message in its room needs context.files.
        self.fileless: set[str] = set()

    async def shape(
        self,
        event: EventJson,
        extras: TurnJson | None = None,
        job: JobRead | None = None,
    ) -> DeliveredJson:
        """The event for this socket; ``extras`` are a message.new's room and context, and
        ``job`` the room's job as of it, when the feed's window of the room could tell
        them (otherwise they are read here)."""
        me = self.principal.participant_id
        if event.get("type") == "harness.declared" and event.get("harness_id") == me:
            self.speaks_agents = "agents" in (event.get("capabilities") or ())
        shaped = shape_for(event, me, self.kind, self.owner_of, self.speaks_agents)
        if self.turns is not None:
            self.turns.fold(event)
            if event.get("type") == "message.post":
                # Every harness is told the turns working where the words were said: a
                # harness that never declared ``agents`` reads its own agents' as its own
                # id, as the pre-agents view writes every id (docs/adr/0136).
                working = self.turns.named_by(event, self.takers(event))
                if working:
                    shaped = {**shaped, "working_turns": working}
                if working and shaped["type"] == "message.post":
                    # Its own post coming back, said by one of its agents: who said it,
                    # for the turns it is handed to (docs/product/websocket.md).
                    members = await self.reader.members_as_of(
                        self.principal.workspace_id, event["space_id"], event["seq"]
                    )
                    shaped["from"] = speaker(event, as_shown(members))
        if event.get("attachments"):
            self.fileless.discard(event.get("space_id", ""))
        if shaped["type"] == "agent.attached" and event.get("harness_id") == me:
            return self.signed(await self.with_catch_up(shaped, event))
        if shaped["type"] != "message.new":
            return self.signed(shaped)
        if extras is not None:
            metrics.SHAPED.labels("window").inc()
            shaped = {**shaped, **extras}
        else:
            metrics.SHAPED.labels("log").inc()
            shaped = {**shaped, **await self.turn(event, self.takers(event))}
        if "context" in shaped:
            shaped = await self.with_files(shaped, event)
        shaped = await self.with_heard(shaped, event)
        shaped = await self.with_spend(shaped, event, job)
        return self.signed(shaped)

    def shape_now(self, event: EventJson) -> DeliveredJson | None:
        """:meth:`shape` for a person's socket, which shapes an event with nothing read:
        every event as it was logged, but each file linked for the socket's credential.
        None for a harness's socket (whose turns are shaped by :meth:`shape`)."""
        if self.kind != "person":
            return None
        shaped = shape_for(event, self.principal.participant_id, self.kind)
        if shaped["type"] in ("message.new", "agent.attached"):
            return None  # a harness's alone: shape() says so
        if event.get("attachments"):
            self.fileless.discard(event.get("space_id", ""))
        return self.signed(shaped)

    async def with_catch_up(self, shaped: DeliveredJson, event: EventJson) -> DeliveredJson:
        """``agent.attached`` to its harness with ``catch_up``: the room's last lines before
        the agent joined, in context's shape and the harness's budget, for its next turn
        there (docs/product/websocket.md, One room at a time). Read from the log as of the event,
        so a replay hands over the same lines; nothing when the budget is no lines."""
        if self.budget.lines <= 0 or not event.get("space_id"):
            return shaped
        agent_id = event["agent_id"]
        # Attached in another's place: what that one said reads as this agent's already,
        # though the membership.replaced saying so is logged just after (docs/adr/0136).
        changes: Changes = {}
        if event.get("replacing"):
            note_change(
                {
                    "type": "membership.replaced",
                    "replaced": event["replacing"],
                    "participant_id": agent_id,
                },
                changes,
            )
        catch_up = await build_context(
            self.reader, self.principal.workspace_id, agent_id, event, self.budget, 0, changes
        )
        # The steps that put it there (its harness's row, its own) are not what was said
        # before it came: the lines end where it joined.
        lines = list(catch_up["lines"])
        entering = {agent_id, self.principal.participant_id}
        while lines and lines[-1]["kind"] == "joined" and lines[-1]["from"]["id"] in entering:
            lines.pop()
        before = lines[0]["seq"] if lines else catch_up["before"]
        return {**shaped, "catch_up": {**catch_up, "lines": lines, "before": before}}

    def takers(self, event: EventJson) -> list[str]:
        """Who of this harness takes a turn on ``event`` (``for``); none for a person."""
        if self.kind != "harness" or event.get("type") != "message.post":
            return []
        return takers(event, self.principal.participant_id, self.owner_of)

    async def turn(self, event: EventJson, taking: list[str]) -> TurnJson:
        """Who said it, the room and the context of a message that is this harness's turn
        (its own, or ``taking``'s: its agents the message is for), read from the log as of
        the message. Several agents share one context, the one that has heard least's."""
        reader, ws = self.reader, self.principal.workspace_id
        space_id, seq = event["space_id"], event["seq"]
        members = as_shown(await reader.members_as_of(ws, space_id, seq))
        since = {t: await reader.context_start(ws, space_id, t, seq) for t in taking}
        least = least_heard(taking, since)
        extra: TurnJson = {"from": speaker(event, members)}
        kept: int | None = None
        if self.budget.lines > 0:
            context = await build_context(reader, ws, least, event, self.budget, since[least])
            extra["context"] = context
            kept = len(context["lines"]) if context["truncated"] else None
        found: dict[str, tuple[list[EventJson], bool]] = {}
        for t in taking:
            joinings = await reader.joinings(ws, space_id, since[t], seq, self.owner_of)
            talked = since_is_joining(joinings, since[t], t) and await reader.talked_before(
                ws, space_id, since[t]
            )
            found[t] = (joinings, talked)
        ids = {(e.get("actor") or {}).get("id", "") for e in [event]} | {
            (e.get("actor") or {}).get("id", "") for j, _ in found.values() for e in j
        }
        people = await reader.participants(sorted(i for i in ids if i))
        news: dict[str, TurnNews] = {
            t: news_for(
                t,
                event,
                members,
                joinings,
                since[t],
                talked,
                lambda p: (people.get(p) or {}).get("name") or p,
                kept,
            )
            for t, (joinings, talked) in found.items()
        }
        lead, told = await reader.led_as_of(ws, space_id, seq)
        extra["room"] = room_for(taking, members, news, Led(lead, told, event.get("ts", "")))
        return extra

    async def with_heard(self, shaped: DeliveredJson, event: EventJson) -> DeliveredJson:
        """Each voice note's ``heard`` (outcome, transcript, note, engine), as the room's
        lines carry it, once it was heard (docs/adr/0147): a message.new handed over after
        the hearing (a replay, a hand-off, a harness that was away) carries what was said.
        One delivered as the note is posted comes before the hearing, which follows as
        ``attachment.transcribed``."""
        notes = [
            a["attachment_id"]
            for a in shaped.get("attachments") or ()
            if a.get("kind") == "voice_note" and "heard" not in a
        ]
        if not notes:
            return shaped
        heard = await self.reader.heard(
            self.principal.workspace_id, event["space_id"], event["seq"], notes
        )
        if not heard:
            return shaped
        attachments: list[AttachmentJson] = [
            {**a, "heard": heard[a["attachment_id"]]} if a.get("attachment_id") in heard else a
            for a in shaped["attachments"]
        ]
        return {**shaped, "attachments": attachments}

    async def with_files(self, shaped: DeliveredJson, event: EventJson) -> DeliveredJson:
        """``context.files``: the room's files as of the message (docs/product/websocket.md)."""
        space_id = event["space_id"]
        if self.links is None or space_id in self.fileless:
            return shaped
        files = await context_files(
            self.reader.engine, self.reader, self.principal.workspace_id, space_id, event["seq"]
        )
        if not files:
            self.fileless.add(space_id)
            return shaped
        return {**shaped, "context": {**shaped["context"], "files": files}}

    async def handed(
        self,
        event: EventJson,
        own: Mapping[str, str] | None = None,
        held: tuple[Held, ...] | None = None,
    ) -> list[DeliveredJson]:
        """The held messages a person's act hands this harness: the newest held message
        that was for it since the person before last acted, as message.new with
        ``handed: true`` (docs/product/websocket.md; docs/adr/0083). Read from the log as of the
        act, so a replay hands over the same. ``own``: the harness's own agents, shown as
        the harness itself in the pre-agents view; what was for them is its. ``held``: the
        held posts as the feed's window of the room read them as of the act, each with the
        room's job as of it, when it could tell."""
        if self.kind != "harness":
            return []
        if event.get("type") == "lead.handed":
            return await self.handed_to_lead(event, own)
        if (event.get("actor") or {}).get("kind") != "person":
            return []
        space_id = event.get("space_id")
        if not isinstance(space_id, str):
            return []
        pid = self.principal.participant_id
        if held is None:
            metrics.SPEND_READS.labels("held", "log").inc()
            async with self.reader.engine.connect() as conn:
                read = await held_since_last_person(
                    conn, self.principal.workspace_id, space_id, event["seq"]
                )
            held = tuple((e, None) for e in read)
        else:
            metrics.SPEND_READS.labels("held", "window").inc()
        mine = {pid, *own_of(own, pid)}

        def is_mine(who: str) -> bool:  # the harness, or one of its agents (ADR 0075)
            return who in mine or self.owner_of(who) == pid

        found = next((h for h in held if any(is_mine(w) for w in h[0].get("held_for") or ())), None)
        if found is None:
            return []
        newest, job = canonical_event(found[0]), found[1]
        takers_now = [h for h in newest.get("held_for") or () if is_mine(h)]
        turn: EventJson = {**newest, "addressed_to": [pid] if own is not None else takers_now}
        shaped = await self.shape(turn, None, job)
        return [{**shaped, "handed": True}]

    async def handed_to_lead(
        self, event: EventJson, own: Mapping[str, str] | None = None
    ) -> list[DeliveredJson]:
        """Words nobody took, handed to the room's lead when it is this harness or one of
        its agents: the message as message.new with ``handed`` and ``lead``, its note
        opening with why (docs/product/websocket.md, Who leads; docs/adr/0090). Read from the log,
        so a replay hands over the same."""
        pid, lead = self.principal.participant_id, str(event.get("agent_id", ""))
        if not (lead == pid or lead in own_of(own, pid) or self.owner_of(lead) == pid):
            return []
        said = await self.reader.event_by_id(
            self.principal.workspace_id, event_id_for_message(str(event.get("message_id", "")))
        )
        if said is None or said.get("type") != "message.post":
            return []
        turn: EventJson = {**said, "addressed_to": [lead]}
        shaped = await self.shape(turn)
        if shaped.get("type") != "message.new":
            return []
        said_by = shaped.get("from")
        sender = (said_by.get("name") if said_by else None) or str(event.get("said_by", ""))
        opening = handed_opening(sender, int(event.get("quiet_seconds", 0)))
        room = shaped.get("room")
        if room is not None:
            notes = {k: f"{opening} {note}" for k, note in (room.get("notes") or {}).items()}
            shaped = {**shaped, "room": {**room, "notes": notes}}
        return [{**shaped, "handed": True, "lead": True}]

    async def with_spend(
        self, shaped: DeliveredJson, event: EventJson, read: JobRead | None = None
    ) -> DeliveredJson:
        """``context.spend`` and its sentence in the note: the room's job as of the message
        (docs/product/websocket.md, What the job has spent; docs/adr/0083), as the feed's window
        folded it (``read``) or else read from the log."""
        if read is None:
            metrics.SPEND_READS.labels("job", "log").inc()
            async with self.reader.engine.connect() as conn:
                read = await read_job(
                    conn, self.principal.workspace_id, event["space_id"], event["seq"]
                )
        else:
            metrics.SPEND_READS.labels("job", "window").inc()
        if "context" in shaped:
            shaped = {**shaped, "context": {**shaped["context"], "spend": read.facts()}}
        room = shaped.get("room")
        if isinstance(room, dict) and room.get("notes"):
            sentence = spend_sentence(read.job, read.ceiling_usd)
            rules = room.get("rules") or {}
            notes = {
                pid: with_spend_line(note, rules.get(pid, ""), sentence)
                for pid, note in room["notes"].items()
            }
            shaped = {**shaped, "room": {**room, "notes": notes}}
        return shaped

    def signed(self, shaped: DeliveredJson) -> DeliveredJson:
        """Each file the frame carries, with a URL signed for this socket's credential."""
        if self.links is None:
            return shaped
        return self.links.sign_event(shaped, self.principal.credential_id)
