"""A small workspace built through the door itself, in memory, for the rules' unit tests.

Every rule is a pure function over the door state (docs/adr/0021), so a test builds the
state by sending events through :class:`~chips_eventlog.door.Door` as the eventlog
would, with no Postgres and no NATS, and asks what the door says to the next one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
from opentelemetry.trace import INVALID_SPAN
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.append import Actor, AppendRequest, IssuedCredential
from chips_eventlog.consumer import Pending
from chips_eventlog.door import Door
from chips_eventlog.refused import Refused
from chips_eventlog.rules.agents import given
from chips_eventlog.state import DoorState

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
_keys = count()

OPERATOR = Actor(kind="operator", id="operator")


def person(pid: str) -> Actor:
    return Actor(kind="person", id=pid)


def harness(hid: str) -> Actor:
    return Actor(kind="harness", id=hid)


OWN, ADM, MEM, GST, OUT = "usr_own", "usr_adm", "usr_mem", "usr_gst", "usr_out"
H1, H2 = "hrn_h1", "hrn_h2"


class World:
    """A workspace: Arjun owns it; Ada is an admin; Maya a member; Gus a guest in the room;
    Otto is in no room. Scout (Arjun's harness, takes new spaces and follows rooms) and
    Ledger (his too) are harnesses. ``room`` has them all, ``other`` only Arjun and Scout,
    ``home`` is Scout's home; Maya and Scout have each said something in the room.

    It is a workspace from before every harness was given its agent in each room
    (docs/adr/0154): Scout and Ledger stand in their rooms as themselves, as such a log left
    them, until something gives them their agents (``agents.give``, declaring ``agents``)
    or brings them into a room after that."""

    OWN, ADM, MEM, GST, OUT, H1, H2 = OWN, ADM, MEM, GST, OUT, H1, H2
    operator = OPERATOR
    now = NOW

    @staticmethod
    def p(pid: str) -> Actor:
        return person(pid)

    @staticmethod
    def h(hid: str) -> Actor:
        return harness(hid)

    def __init__(self) -> None:
        gifts_after = given.gifts_after
        given.gifts_after = lambda *_: None  # type: ignore[assignment]  # a log from before
        try:
            self.build()
        finally:
            given.gifts_after = gifts_after  # type: ignore[assignment]

    def build(self) -> None:
        self.state = DoorState("ws_test")
        self.ok(OPERATOR, {"type": "workspace.created", "name": "Acme"})
        self.join(OPERATOR, self.OWN, "person", "Arjun", "owner")
        self.join(person(self.OWN), self.ADM, "person", "Ada", "admin")
        self.join(person(self.OWN), self.MEM, "person", "Maya", "member")
        self.join(person(self.OWN), self.GST, "person", "Gus", "guest")
        self.join(person(self.OWN), self.OUT, "person", "Otto", "member")
        self.join(person(self.OWN), self.H1, "harness", "Scout", "member", owner_id=self.OWN)
        self.join(person(self.OWN), self.H2, "harness", "Ledger", "member", owner_id=self.OWN)
        self.ok(
            person(self.OWN),
            {
                "type": "harness.declared",
                "harness_id": self.H1,
                "capabilities": ["new_spaces", "follows_rooms"],
            },
        )
        self.room = self.space(self.OWN, [self.ADM, self.MEM, self.H1, self.H2], title="Room")
        self.ok(
            person(self.OWN),
            {
                "type": "membership.added",
                "space_id": self.room,
                "participant_id": self.GST,
                "standing": "guest",
            },
        )
        self.other = self.space(self.OWN, [self.H1], title="Other")
        self.home = self.created(
            person(self.OWN),
            {"type": "space.created", "kind": "direct", "members": [self.H1], "home_of": self.H1},
        )
        self.said_by_maya = self.say(self.MEM, self.room, "hello")
        self.said_by_scout = self.say(self.H1, self.room, "the total is 42")

    # --- sending ----------------------------------------------------------------------

    def send(self, actor: Actor, *events: Any, request: AppendRequest | None = None) -> list[Any]:
        """Let a request through the door and settle it, as a commit would."""
        req = request or AppendRequest(
            request_id="req",
            workspace_id=self.state.workspace_id,
            credential_id=f"crd_{actor.id}",
            actor=actor,
            idempotency_key=f"k{next(_keys)}",
            events=list(events),
        )
        door = Door(self.state, self.now)
        mark = door.mark()
        try:
            logged = door.append(req)
        except Refused:
            door.undo(mark)
            raise
        self.state.settle(door.head_seq, [])
        return logged

    def ok(self, actor: Actor, *events: Any) -> list[Any]:
        return self.send(actor, *events)

    def refused(self, actor: Actor, *events: Any) -> Refused:
        with pytest.raises(Refused) as caught:
            self.send(actor, *events)
        return caught.value

    def says_no(self, actor: Actor, event: Any, code: str, fragment: str) -> Refused:
        """The door refuses ``event`` from ``actor`` with ``code``, saying ``fragment``;
        and the refusal leaves the door state as it was."""
        before = snapshot(self.state)
        refusal = self.refused(actor, event)
        assert (refusal.code, fragment in refusal.message) == (code, True), refusal.message
        assert snapshot(self.state) == before
        return refusal

    # --- building ---------------------------------------------------------------------

    def join(
        self, by: Actor, pid: str, kind: str, name: str, role: str, owner_id: str | None = None
    ) -> None:
        event = {
            "type": "participant.joined",
            "participant_id": pid,
            "kind": kind,
            "name": name,
            "role": role,
        }
        if owner_id:
            event["owner_id"] = owner_id
        req = AppendRequest(
            request_id="req",
            workspace_id=self.state.workspace_id,
            credential_id="crd_join",
            actor=by,
            idempotency_key=f"k{next(_keys)}",
            events=[event],
            credentials=[
                IssuedCredential(
                    credential_id=f"crd_{pid}", participant_id=pid, token_hash=f"h_{pid}"
                )
            ],
        )
        self.send(by, request=req)

    def created(self, actor: Actor, event: dict[str, Any]) -> str:
        return str(self.ok(actor, event)[0]["space_id"])

    def space(self, owner: str, members: list[str], **fields: Any) -> str:
        event = {"type": "space.created", "kind": "group", "members": members, **fields}
        return self.created(person(owner), event)

    def say(self, who: str, space_id: str, text: str, **fields: Any) -> str:
        actor = harness(who) if who.startswith("hrn_") else person(who)
        logged = self.ok(
            actor, {"type": "message.post", "space_id": space_id, "text": text, **fields}
        )
        return str(logged[0]["message_id"])

    def run(
        self, run_id: str = "run_1", space_id: str | None = None, who: str = H1, **fields: Any
    ) -> str:
        self.ok(
            harness(who),
            {
                "type": "run.started",
                "run_id": run_id,
                "space_id": space_id or self.room,
                "goal": "find the PO",
                **fields,
            },
        )
        return run_id


def snapshot(state: DoorState) -> tuple[Any, ...]:
    """Everything a decision reads, to compare before and after."""
    return (
        state.head_seq,
        dict(state.participants),
        dict(state.spaces),
        {k: dict(v) for k, v in state.members.items() if v},
        dict(state.openers),
        dict(state.choices),
        dict(state.runs),
        dict(state.cards),
        dict(state.lanes),
        dict(state.marks),
        dict(state.hidden),
        dict(state.reactions),
        dict(state.messages),
        {k: dict(v) for k, v in state.live.items() if v},
        dict(state.by_key),
        state.name,
        dict(state.where),
        dict(state.asks),
        dict(state.held),
        dict(state.invites),
        dict(state.devices),
    )


@pytest.fixture
def w() -> World:
    return World()


# --- an engine on the database of its own (the root conftest's ``database_url``) -------


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    built = create_async_engine(database_url)
    yield built
    await built.dispose()


# --- the same workspace, appended through the real eventlog into Postgres ---------------


class Appended(World):
    """A :class:`World` whose every request goes through the eventlog's :class:`Appender`
    into Postgres, as a partition's batches do, rather than through a door in memory.

    The World's helpers are synchronous, so the appender runs on a loop of its own in
    another thread; :attr:`state` is the appender's door state of the workspace, and the
    people and harnesses have ids of this workspace's own."""

    def __init__(self, workspace_id: str, appender: Any, held: Any, on_loop: Any) -> None:
        self.workspace_id = workspace_id
        # Participant and credential ids are unique across workspaces.
        tail = workspace_id.removeprefix("ws_")
        self.OWN, self.ADM, self.MEM, self.GST, self.OUT, self.H1, self.H2 = (
            f"{pid}{tail}" for pid in (OWN, ADM, MEM, GST, OUT, H1, H2)
        )
        self.appender = appender
        self.held = held
        self.on_loop = on_loop
        super().__init__()

    @property
    def state(self) -> DoorState:
        found: DoorState | None = self.held.states.get(self.workspace_id)
        return found if found is not None else DoorState(self.workspace_id)

    @state.setter
    def state(self, _: DoorState) -> None:
        """The World's own in-memory state: here the appender's stands in for it."""

    def send(self, actor: Actor, *events: Any, request: AppendRequest | None = None) -> list[Any]:
        req = request or AppendRequest(
            request_id="req",
            workspace_id=self.workspace_id,
            credential_id=f"crd_{actor.id}",
            actor=actor,
            idempotency_key=f"k{next(_keys)}",
            events=list(events),
        )
        item = Pending(msg=None, request=req, span=INVALID_SPAN)  # type: ignore[arg-type]
        self.on_loop(self.appender.append_group(self.workspace_id, [item], self.held))
        answer = item.answer
        assert answer is not None
        if not answer.ok:
            raise Refused(answer.code or "", answer.message or "", answer.field, answer.data)
        return list(answer.events)


@pytest.fixture(scope="module")
def appended() -> type[Appended]:
    """The :class:`Appended` world, for a module to build workspaces in Postgres with."""
    return Appended
