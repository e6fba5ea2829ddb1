"""A takeover's door state read in chunks equals each workspace's read alone, and what
the door held in memory as it wrote (state_store.load_many; docs/adr/0021).

Several workspaces are built through the real eventlog into Postgres, each with some of
every kind of door state: people, harnesses and agents, spaces, memberships and openers,
runs and their cards, lanes, marks, hidden messages, reactions, asks, held words, the
referee's exchanges and settings, and address choices.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.append import Actor
from chips_common.nats.streams import Names
from chips_eventlog import partitions, state_store
from chips_eventlog.consumer import Appender
from chips_eventlog.leases import Held
from chips_eventlog.state import DoorState

pytestmark = pytest.mark.integration

OnLoop = Callable[[Coroutine[Any, Any, Any]], Any]

# What :func:`state_store.load_many` fills, beside the head seq and the name.
READ = [
    "participants",
    "spaces",
    "members",
    "openers",
    "choices",
    "runs",
    "cards",
    "lanes",
    "marks",
    "hidden",
    "reactions",
    "exchanges",
    "referee",
    "asks",
    "held",
    "by_key",
    "homes",
    "roots",
    "live",
    "where",
]


@pytest.fixture(scope="module")
def on_loop() -> Iterator[OnLoop]:
    """Run a coroutine on a loop of its own (the World's helpers are synchronous)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=60)

    yield run
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.close()


@dataclass
class Built:
    engine: AsyncEngine
    appender: Appender
    held: Held
    ids: list[str]


def enrich(w: Any, n: int) -> None:
    """Some of every kind of door state in ``w``'s workspace, a little different for each
    ``n``."""
    owner, mem = w.p(w.OWN), w.p(w.MEM)

    def new_agent(harness_id: str, key: str, name: str, **fields: Any) -> str:
        command = {"command": "agent.register", "harness_id": harness_id, "key": key, "name": name}
        logged = w.ok(w.h(harness_id), {**command, **fields})
        return str(next(e["agent_id"] for e in logged if e["type"] == "agent.registered"))

    def about(type_: str, message_id: str, **fields: Any) -> dict[str, Any]:
        return {"type": type_, "space_id": w.room, "message_id": message_id, **fields}

    w.ok(owner, {"type": "workspace.referee_set", "stop": 10 + n, "hold": "never"})
    w.ok(
        owner,
        {
            "type": "harness.declared",
            "harness_id": w.H2,
            "capabilities": ["new_agents", "new_spaces"],
        },
    )
    # Agents in the room, one of them speaking there (the referee counts it) and one
    # addressed by name (the person's choice is kept).
    oc = new_agent(w.H1, "oc", f"Oc{n}")
    w.ok(owner, {"type": "membership.added", "space_id": w.room, "participant_id": oc})
    w.ok(mem, {"type": "message.post", "space_id": w.room, "text": f"@Oc{n} the PO?"})
    as_oc = Actor(kind="agent", id=oc, harness_id=w.H1)
    said_by_oc = w.ok(as_oc, {"type": "message.post", "space_id": w.room, "text": "PO 7"})[0][
        "message_id"
    ]
    w.ok(owner, {"type": "exchange.set", "space_id": w.other, "state": "paused"})
    # A free agent's words, held for its next room.
    free = new_agent(w.H2, "free", f"Free{n}")
    group = w.space(w.OWN, [w.MEM], title=f"G{n}")
    w.ok(owner, {"type": "membership.added", "space_id": group, "participant_id": free})
    w.ok(owner, {"type": "membership.removed", "space_id": group, "participant_id": free})
    w.ok(Actor(kind="agent", id=free, harness_id=w.H2), {"type": "message.post", "text": "held"})
    # An ask of a harness for a new agent, and a room opened through the harness door.
    w.ok(owner, {"type": "agent.asked", "space_id": w.room, "harness_id": w.H2, "name": "J"})
    w.ok(w.h(w.H1), {"command": "harness.open_space", "key": f"po-{n}", "title": "PO"})
    asked = w.created(owner, {"type": "space.created", "kind": "group", "asked_of": w.H2})
    w.ok(w.h(w.H2), {"command": "harness.open_space", "key": "asked", "space_id": asked})
    # A thread on a message.
    w.created(
        mem,
        {
            "type": "space.created",
            "kind": "thread",
            "parent_space_id": w.room,
            "root_message_id": w.said_by_maya,
        },
    )
    # Runs with their cards, one done; a lane.
    w.run("run_1", who=w.H1)
    options = [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}]
    w.ok(
        w.h(w.H1),
        {"type": "approval.request", "run_id": "run_1", "approval_id": "ap1", "action": "pay"},
    )
    w.ok(
        w.h(w.H1),
        {
            "type": "question.ask",
            "run_id": "run_1",
            "question_id": "q1",
            "prompt": "Pay?",
            "options": options,
        },
    )
    w.ok(owner, {"type": "question.answered", "question_id": "q1", "value": "yes"})
    w.run("run_2", who=w.H1)
    w.ok(w.h(w.H1), {"type": "run.completed", "run_id": "run_2", "summary": "done"})
    w.ok(
        owner,
        {
            "type": "lane.opened",
            "lane_id": "lane_1",
            "from_space_id": w.room,
            "to_space_id": w.other,
            "task": {"goal": "g"},
        },
    )
    # What is done to messages: pinned, edited, taken back, hidden, reacted to.
    w.ok(mem, about("message.pinned", w.said_by_scout))
    w.ok(mem, about("message.edited", w.said_by_maya, text="new words"))
    w.ok(mem, about("message.deleted", w.say(w.MEM, w.room, "oops")))
    w.ok(mem, about("message.hidden", said_by_oc))
    w.ok(mem, about("feedback", w.said_by_scout, kind="reaction", emoji="👍"))
    w.ok(w.p(w.ADM), about("feedback", said_by_oc, kind="reaction", emoji="🎉"))


@pytest.fixture(scope="module")
def built(database_url: str, on_loop: OnLoop, appended: Any) -> Iterator[Built]:
    """Four workspaces with rich door state, appended by one appender under one Held."""
    engine = create_async_engine(database_url)
    appender = Appender(engine, None, None, Names("CHIPS", "chips", 1))  # type: ignore[arg-type]
    held = Held(partition=0)
    tag = secrets.token_hex(3)
    ids = []
    for n in range(4):
        w = appended(f"ws_{tag}{n}", appender, held, on_loop)
        enrich(w, n)
        ids.append(w.workspace_id)
    yield Built(engine, appender, held, ids)
    on_loop(engine.dispose())


def fields(state: DoorState) -> dict[str, Any]:
    """A state's door-state fields, empty inner maps left out (memory keeps some)."""
    found: dict[str, Any] = {"head_seq": state.head_seq, "name": state.name}
    for name in READ:
        value = getattr(state, name)
        if isinstance(value, dict):
            value = {k: dict(v) if isinstance(v, dict) else v for k, v in value.items() if v != {}}
        found[name] = value
    return found


def test_a_chunk_reads_the_states_each_workspace_reads_alone(built: Built, on_loop: OnLoop) -> None:
    absent = "ws_absent"

    async def read() -> tuple[dict[str, DoorState], dict[str, DoorState]]:
        async with built.engine.connect() as conn:
            alone = {ws: await state_store.load(conn, ws) for ws in [*built.ids, absent]}
            return alone, await state_store.load_many(conn, [*built.ids, absent])

    alone, together = on_loop(read())
    assert list(together) == [*built.ids, absent]
    for ws in [*built.ids, absent]:
        assert vars(together[ws]) == vars(alone[ws]), ws
    assert fields(together[absent]) == fields(DoorState(absent))
    for ws in built.ids:
        state = together[ws]
        # Equal to what the door held in memory as it wrote each batch.
        assert fields(state) == fields(built.held.states[ws]), ws
        # And rich: some of every kind read, from this workspace only.
        empty = [name for name in READ if not getattr(state, name)]
        assert empty == [], f"{ws}: nothing read into {empty}"
        assert state.referee.stop == 10 + built.ids.index(ws)
        assert {s.id for s in state.spaces.values()} == set(alone[ws].spaces)
    spaces = [set(together[ws].spaces) for ws in built.ids]
    assert all(a.isdisjoint(b) for i, a in enumerate(spaces) for b in spaces[i + 1 :])


def test_a_takeover_reads_in_chunks_and_keeps_a_state_a_batch_put_in_place(
    built: Built, on_loop: OnLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partitions, "TAKEOVER_CHUNK", 3)
    taken = Held(partition=0)
    first = built.ids[0]
    already = DoorState(first, 1, "put by a batch")
    taken.states[first] = already
    on_loop(built.appender.load_states(taken))
    assert set(taken.states) == set(built.ids)
    assert taken.states[first] is already
    for ws in built.ids[1:]:
        assert fields(taken.states[ws]) == fields(built.held.states[ws]), ws


def test_a_takeover_fenced_reads_nothing_more(built: Built, on_loop: OnLoop) -> None:
    gone = Held(partition=0, fenced=True)
    on_loop(built.appender.load_states(gone))
    assert gone.states == {}
