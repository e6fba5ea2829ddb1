"""Folding the log into notifications, checkpoint in the same transaction (docs/adr/0132).

A ``CHIPS_EVENTS`` message is only a prompt: the handler locks the workspace's checkpoint,
reads every event after it from the log, decides with ``rules`` who is told of what and
what is done, writes it, and moves the checkpoint, in one transaction. A notification's
key is (workspace, seq, recipient): an event folded twice (a redelivery, a second
replica, a rebuild) writes nothing twice. Who was in the room is read as of the event
(``membership_log``), so a rebuild decides as the first fold did.

After the commit, every gateway is told on core NATS which notifications of whom were
made or changed (``Live``), and sends them down that person's sockets.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from nats.aio.client import Client as NATS
from sqlalchemy import Row, and_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.notifier_tables import notifications, notifier_checkpoints
from chips_common.db.retry import once_more
from chips_common.events.wire import EventJson, canonical_event
from chips_common.service.consumer import Handler
from chips_common.service.poison import folding, set_aside
from chips_notifier import rules

log = logging.getLogger(__name__)

WANTED = rules.ACTED_ON
PAGE = 500

_n = notifications.c
_cp = notifier_checkpoints.c


def live_subject(prefix: str, workspace_id: str) -> str:
    """Core NATS: the notifications of a workspace made or changed (docs/adr/0132)."""
    return f"{prefix}.notice.notification.{workspace_id}"


class Live:
    """Tells the gateways which notifications changed, best effort: an app that missed a
    frame reads the list again when its socket comes back."""

    def __init__(self, nc: NATS | None, prefix: str) -> None:
        self.nc, self.prefix = nc, prefix

    async def tell(self, workspace_id: str, changed: Iterable[tuple[str, str]]) -> None:
        by_person: dict[str, list[str]] = {}
        for participant_id, notification_id in changed:
            by_person.setdefault(participant_id, []).append(notification_id)
        if self.nc is None or not by_person:
            return
        for participant_id, ids in by_person.items():
            body = {"workspace_id": workspace_id, "participant_id": participant_id, "ids": ids}
            with contextlib.suppress(Exception):
                await self.nc.publish(
                    live_subject(self.prefix, workspace_id), json.dumps(body).encode()
                )


class Spaces:
    """What the consumer knows of spaces, kept by the process, to tell before any
    transaction whether an event may notify anybody (``rules.may_act``).

    A space's kind, as the folds read it: it never changes once the space is made. And
    who was in a direct space as of a seq a fold read it at; the consumer sees every event
    of the log in order, and forgets those people once it sees the space's membership
    change, or a participant of its workspace change, at a later seq. What it does not
    know (a space not folded yet) may notify. The consumer's test only decides whether a
    fold runs now; what the fold does it decides from the log and the door state, so a
    test mistaken by a lost message only delays a notice to the next sweep.
    """

    LIMIT = 100_000

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}
        # A direct space's people: its workspace, them, and the seq they were read as of.
        self.people: dict[str, tuple[str, frozenset[str], int]] = {}
        # The last seq at which a space's membership, or a workspace's participants, changed.
        self.changed: dict[str, int] = {}

    def kind(self, space_id: Any) -> str | None:
        return self.kinds.get(space_id) if isinstance(space_id, str) else None

    def put_kind(self, space_id: str, kind: str) -> None:
        if len(self.kinds) >= self.LIMIT:
            self.kinds.clear()
        self.kinds[space_id] = kind

    def put_people(
        self, workspace_id: str, space_id: str, people: frozenset[str], seq: int
    ) -> None:
        if len(self.people) >= self.LIMIT:
            self.people.clear()
        self.people[space_id] = (workspace_id, people, seq)

    def people_of(self, space_id: Any) -> frozenset[str] | None:
        """A direct space's people as last read, unless they may have changed since."""
        kept = self.people.get(space_id) if isinstance(space_id, str) else None
        if kept is None:
            return None
        workspace_id, people, seq = kept
        if seq < self.changed.get(space_id, 0) or seq < self.changed.get(workspace_id, 0):
            return None
        return people

    def saw(self, event: Mapping[str, Any]) -> None:
        """Note a change of who is in a space (its membership) or who is active."""
        kind = event.get("type")
        if not isinstance(kind, str):
            return
        if kind.startswith("membership."):
            key = event.get("space_id")
        elif kind.startswith("participant."):
            key = event.get("workspace_id")
        else:
            return
        if isinstance(key, str):
            if len(self.changed) >= self.LIMIT:
                self.changed.clear()
                self.people.clear()
            seq = event.get("seq")
            self.changed[key] = max(self.changed.get(key, 0), seq if isinstance(seq, int) else 0)

    def may_act(self, event: Mapping[str, Any]) -> bool:
        """``rules.may_act`` with what is known of the event's space (the consumer's test
        of each event it is delivered)."""
        self.saw(event)
        space_id = event.get("space_id")
        return rules.may_act(event, self.kind(space_id), self.people_of(space_id))


class Facts:
    """What the rules need of the door state, read once per fold and kept for it."""

    def __init__(
        self, conn: AsyncConnection, workspace_id: str, known: Spaces | None = None
    ) -> None:
        self.conn, self.workspace_id = conn, workspace_id
        self.known = known if known is not None else Spaces()
        self.spaces: dict[str, Row[*tuple[Any, ...]] | None] = {}
        # The seqs this fold reads past (after, up to); each room's people as last read
        # (as of which seq), and where in that range memberships changed.
        self.range = (0, 0)
        self.rooms: dict[str, tuple[int, frozenset[str]]] = {}
        self.changes: dict[str, list[int]] | None = None
        self.people: dict[str, tuple[str, str | None, bool]] | None = None
        self.names: dict[str, str] = {}

    async def participants(self) -> dict[str, tuple[str, str | None, bool]]:
        """Each participant's kind, owner and whether active."""
        if self.people is None:
            p = t.participants.c
            rows = await self.conn.execute(
                select(p.id, p.kind, p.owner_id, p.name, p.active).where(
                    p.workspace_id == self.workspace_id
                )
            )
            self.people, self.names = {}, {}
            for row in rows:
                self.people[row.id] = (row.kind, row.owner_id, bool(row.active))
                self.names[row.id] = row.name
        return self.people

    async def space(self, space_id: str) -> Any:
        if space_id not in self.spaces:
            s = t.spaces.c
            found = (
                await self.conn.execute(
                    select(s.id, s.kind, s.title, s.parent_space_id).where(s.id == space_id)
                )
            ).first()
            self.spaces[space_id] = found
            if found is not None:
                self.known.put_kind(space_id, found.kind)
        return self.spaces[space_id]

    async def may_act(self, event: Mapping[str, Any]) -> bool:
        """``rules.may_act``, reading the space's kind only when the event's own fields
        do not decide."""
        if not rules.may_act(event):
            return False
        if event.get("type") != "message.post":
            return True
        space_id = event.get("space_id")
        if not isinstance(space_id, str):
            return False  # ``apply`` finds no room for it
        kind = self.known.kind(space_id)
        if kind is None:
            space = await self.space(space_id)
            kind = space.kind if space is not None else None
        if kind is None or rules.may_act(event, kind):
            if kind != "direct" or rules.may_act(event, "group"):
                return True
            # A direct space: who else is in it (as ``apply`` would read them).
            room = await self.room(space_id, int(event["seq"]))
            return room is not None and rules.may_act(event, kind, room.people)
        return False

    async def members(self, room_id: str, seq: int) -> frozenset[str]:
        """The active people in ``room_id`` as of ``seq``. Read once per room and fold
        while its membership does not change between the events that ask."""
        kept = self.rooms.get(room_id)
        if kept is not None and (
            kept[0] == seq or (kept[0] < seq and not await self.changed(room_id, kept[0], seq))
        ):
            return kept[1]
        people = await self.participants()
        rows = await self.conn.execute(
            text(
                "SELECT participant_id, added FROM ("
                " SELECT DISTINCT ON (participant_id) participant_id, added FROM membership_log"
                " WHERE workspace_id = :w AND space_id = :room AND seq <= :seq"
                " ORDER BY participant_id, seq DESC) AS last WHERE added"
            ),
            {"w": self.workspace_id, "room": room_id, "seq": seq},
        )
        members = frozenset(
            row.participant_id
            for row in rows
            if (facts := people.get(row.participant_id)) and facts[0] == "person" and facts[2]
        )
        self.rooms[room_id] = (seq, members)
        return members

    async def changed(self, room_id: str, after: int, upto: int) -> bool:
        """Whether ``room_id``'s membership changed after seq ``after`` up to ``upto``:
        the fold's range's changes, read once when first asked."""
        if self.changes is None:
            low, high = self.range
            rows = await self.conn.execute(
                text(
                    "SELECT DISTINCT space_id, seq FROM membership_log"
                    " WHERE workspace_id = :w AND seq > :low AND seq <= :high"
                ),
                {"w": self.workspace_id, "low": low, "high": high},
            )
            self.changes = {}
            for row in rows:
                self.changes.setdefault(row.space_id, []).append(int(row.seq))
        if not self.range[0] <= after <= upto <= self.range[1]:
            return True  # outside what was read: read the room again
        return any(after < at <= upto for at in self.changes.get(room_id, ()))

    async def room(self, space_id: str, seq: int) -> rules.Room | None:
        space = await self.space(space_id)
        if space is None:
            return None
        room_id = space.parent_space_id or space.id
        name = space.title
        if space.parent_space_id:
            parent = await self.space(space.parent_space_id)
            name = f"a thread in {(parent.title if parent else None) or 'a room'}"
        members = await self.members(room_id, seq)
        if space.kind == "direct":
            self.known.put_people(self.workspace_id, space.id, members, seq)
        default = "a direct conversation" if space.kind == "direct" else "a room"
        return rules.Room(space.id, room_id, name or default, space.kind, members)


async def fold(
    conn: AsyncConnection,
    workspace_id: str,
    upto: int | None,
    known: Spaces | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """In the caller's transaction: fold the workspace's events after its checkpoint up
    to ``upto`` (its head when None). Returns the checkpoint reached and the (person,
    notification) made or marked done. An event that surely makes and settles nothing
    (``Facts.may_act``) is read past without being folded."""
    await conn.execute(
        pg_insert(notifier_checkpoints)
        .values(workspace_id=workspace_id, seq=0)
        .on_conflict_do_nothing(index_elements=["workspace_id"])
    )
    done = (
        await conn.execute(
            select(_cp.seq).where(_cp.workspace_id == workspace_id).with_for_update()
        )
    ).scalar_one()
    if upto is None:
        upto = (
            await conn.execute(
                select(t.workspaces.c.head_seq).where(t.workspaces.c.id == workspace_id)
            )
        ).scalar() or 0
    facts = Facts(conn, workspace_id, known)
    facts.range = (done, upto)
    changed: list[tuple[str, str]] = []
    reached = done
    e = t.events.c
    while reached < upto:
        rows = (
            await conn.execute(
                select(e.seq, e.body)
                .where(
                    and_(
                        e.workspace_id == workspace_id,
                        e.seq > reached,
                        e.seq <= upto,
                        e.type.in_(sorted(WANTED)),
                    )
                )
                .order_by(e.seq)
                .limit(PAGE)
            )
        ).all()
        for row in rows:
            if not await facts.may_act(row.body):
                continue
            event = canonical_event(row.body)
            if set_aside(event):  # dead-lettered: read past (docs/adr/0148)
                continue
            with folding(event):
                changed += await apply(conn, facts, event)
        reached = upto if len(rows) < PAGE else int(rows[-1].seq)
    if reached != done:
        await conn.execute(
            update(notifier_checkpoints).where(_cp.workspace_id == workspace_id).values(seq=reached)
        )
    return reached, changed


async def apply(conn: AsyncConnection, facts: Facts, event: EventJson) -> list[tuple[str, str]]:
    settle = rules.settles(event)
    if settle is not None:
        return await mark_done(conn, facts.workspace_id, settle, parse_ts(event["ts"]))
    space_id = event.get("space_id")
    if not isinstance(space_id, str):
        return []
    room = await facts.room(space_id, int(event["seq"]))
    if room is None or not room.people:
        return []
    people = await facts.participants()
    # The deciders of an approval are its harness's owner's (the door's rule, by the
    # card's harness): an agent's request is its harness's, whose owner is a person.
    harness = rules.harness_of_actor(event)
    owner = people.get(harness, ("", None, False))[1]
    found = rules.notices(event, room, owner, facts.names)
    if not found:
        return []
    created = parse_ts(event["ts"])
    rows = [
        {
            "id": rules.notification_id(event["id"], n.participant_id),
            "workspace_id": facts.workspace_id,
            "participant_id": n.participant_id,
            "kind": n.kind,
            "space_id": room.space_id,
            "room_id": room.room_id,
            "space_name": room.name,
            "seq": int(event["seq"]),
            "ref_id": n.ref_id,
            "run_id": n.run_id,
            "title": n.title,
            "body": n.body,
            "sole": n.sole,
            "expires_at": n.expires_at,
            "created_at": created,
            "email_due_at": created,
            "push_due_at": created,
        }
        for n in found
    ]
    made = await conn.execute(
        pg_insert(notifications)
        .values(rows)
        .on_conflict_do_nothing(constraint="notifications_once")
        .returning(_n.participant_id, _n.id)
    )
    return [(row.participant_id, row.id) for row in made]


async def mark_done(
    conn: AsyncConnection, workspace_id: str, settle: rules.Settle, at: datetime
) -> list[tuple[str, str]]:
    where = [_n.workspace_id == workspace_id, _n.done_at.is_(None)]
    if settle.ref_id is not None:
        where.append(_n.ref_id == settle.ref_id)
    elif settle.run_id is not None:
        where += [_n.run_id == settle.run_id, _n.kind.in_(sorted(rules.ASKING))]
    else:
        return []
    rows = await conn.execute(
        update(notifications)
        .where(and_(*where))
        .values(done_at=at, done_reason=settle.reason)
        .returning(_n.participant_id, _n.id)
    )
    return [(row.participant_id, row.id) for row in rows]


def parse_ts(value: Any) -> datetime:
    parsed = rules.parse_time(value)
    return parsed if parsed is not None else datetime.now(UTC)


def build_handler(engine: AsyncEngine, live: Live, known: Spaces | None = None) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async def work(conn: AsyncConnection) -> list[tuple[str, str]]:
            async with conn.begin():
                return (await fold(conn, workspace_id, None, known))[1]

        changed = await once_more(engine, work)
        await live.tell(workspace_id, changed)

    return handle
