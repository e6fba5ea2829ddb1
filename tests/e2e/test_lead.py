"""A room's lead, who is working, and the hand-off of what is nobody's turn.

docs/product/websocket.md, Who leads, and who is working: "A room may have a lead … A person
chooses it … Its member says "lead": true, and the note says so … The note also says which
of the other agents have a turn going … room.working and room.idle carry the same facts. A
turn nothing has been heard from for ten minutes is not counted … When the last words in a
room with a lead are an agent's that reached nobody, and nobody has been working for twenty
seconds, Chips hands those words to the lead as message.new with handed: true and lead:
true, its note starting "Nobody has this turn: J1 said it with no @". Not the lead's own
words, words that named anybody, an answer to a person who asked that agent alone, anything
the referee holds, nor the same words twice."

The e2e stack's referee waits two seconds, not twenty (conftest.py); docs/adr/0090.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from tests.e2e.client import Api, Identity, Socket

QUIET = 2  # the stack's CHIPS_LEAD_HANDOFF_SECONDS


@dataclass
class Room:
    id: str
    agents: dict[str, str]  # its harness's name -> the agent's id in the room
    # Its harness's name -> the agent's: each harness is given an agent per room, named
    # after it and numbered once the name is taken (docs/adr/0154).
    names: dict[str, str]


@dataclass
class Crew:
    owner: Identity
    scout: Identity
    ledger: Identity
    atlas: Identity
    socks: dict[str, Socket]  # "owner", "scout", "ledger", "atlas"


async def crew(stack: Any, api: Api) -> Crew:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    atlas, _ = await api.connect_harness(owner, "Atlas")
    socks = {}
    for name, who, url in (
        ("owner", owner, stack.gateway_a),
        ("scout", scout, stack.gateway_a),
        ("ledger", ledger, stack.gateway_b),
        ("atlas", atlas, stack.gateway_b),
    ):
        socks[name] = await Socket.open(url, who)
        await socks[name].subscribe(owner.workspace_id)
        await socks[name].attached()
    return Crew(owner, scout, ledger, atlas, socks)


async def led_room(api: Api, c: Crew, title: str) -> Room:
    """A room with the three harnesses' agents, Atlas's leading it."""
    members = [c.scout.participant_id, c.ledger.participant_id, c.atlas.participant_id]
    room_id = await api.open_space(c.owner, title, members)
    sheet = await api.sheet(c.owner, room_id, await api.head(c.owner))
    shown = [m for m in sheet["members"] if m["kind"] != "person"]
    agents = {m["name"].rstrip("0123456789 "): m["participant_id"] for m in shown}
    names = {m["name"].rstrip("0123456789 "): m["name"] for m in shown}
    r = await api.http.post(
        f"/v1/spaces/{room_id}/lead", json={"agent_id": agents["Atlas"]}, headers=api.auth(c.owner)
    )
    assert r.status_code == 200, r.text
    return Room(room_id, agents, names)


def handed_to_lead(message_seq: int) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        events = [frame["event"]] if frame["frame"] == "event" else frame.get("events", [])
        return any(
            e["type"] == "message.new" and e.get("lead") and e["seq"] == message_seq for e in events
        )

    return match


def of_type(kind: str, space_id: str) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        events = [frame["event"]] if frame["frame"] == "event" else frame.get("events", [])
        return any(e["type"] == kind and e.get("space_id") == space_id for e in events)

    return match


async def logged(api: Api, who: Identity, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    since = 0
    while batch := await api.read(who, since=since):
        found += [e for e in batch if e["type"] == kind]
        since = batch[-1]["seq"]
    return found


def handed_of(sock: Socket, seq: int) -> list[dict[str, Any]]:
    return [
        e for e in sock.events() if e["type"] == "message.new" and e.get("lead") and e["seq"] == seq
    ]


async def test_a_person_chooses_the_lead_and_the_room_says_so(stack, api: Api) -> None:
    c = await crew(stack, api)
    room = await led_room(api, c, "Alphabet")
    url = f"/v1/spaces/{room.id}/lead"

    # A harness in the room does not choose; the lead is one of the room's agents.
    r = await api.http.post(url, json={"agent_id": room.agents["Scout"]}, headers=api.auth(c.scout))
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    r = await api.http.post(
        url, json={"agent_id": c.owner.participant_id}, headers=api.auth(c.owner)
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_event", r.text
    assert "one of the agents in it" in r.json()["message"]

    head = await api.head(c.owner)
    sheet = await api.sheet(c.owner, room.id, head)
    assert sheet["lead_id"] == room.agents["Atlas"]
    assert [m["name"] for m in sheet["members"] if m.get("lead")] == [room.names["Atlas"]]

    # The member says "lead": true, and each note says who leads; the lead's says "You".
    seq = await api.say(c.owner, room.id, "@Scout @Atlas where are we?")
    await c.socks["scout"].wait_for_seq(seq)
    await c.socks["atlas"].wait_for_seq(seq)
    (to_scout,) = [e for e in c.socks["scout"].events() if e["seq"] == seq]
    (to_atlas,) = [e for e in c.socks["atlas"].events() if e["seq"] == seq]
    # A harness before agents is shown each given agent as its harness, by its name
    # (docs/adr/0154); people see the agent's own.
    leads = [m for m in to_scout["room"]["members"] if m.get("lead")]
    assert [m["name"] for m in leads] == ["Atlas"]
    (scout_note,) = to_scout["room"]["notes"].values()
    assert "Atlas leads here: it hands out the work, and what is nobody's turn goes to it." in (
        scout_note
    )
    (atlas_note,) = to_atlas["room"]["notes"].values()
    assert "You lead here" in atlas_note
    assert "A step one agent has handed to another needs no word from you" in atlas_note
    # Atlas, a harness that did not declare agents, reads its lead as itself.
    assert [m["participant_id"] for m in to_atlas["room"]["members"] if m.get("lead")] == [
        c.atlas.participant_id
    ]


async def test_the_lead_is_handed_nobodys_words_once_and_never_the_exceptions(
    stack, api: Api
) -> None:
    c = await crew(stack, api)
    rooms = [await led_room(api, c, f"Room {i}") for i in range(6)]
    own, named, reached, answered, paused, nobodys = rooms
    said: dict[str, int] = {}

    said["own"] = await api.say(c.atlas, own.id, "I will take the next part myself.")
    said["named"] = await api.say(c.scout, named.id, "@Arjun the PO is ready for you.")
    said["reached"] = await api.say(c.scout, reached.id, "@Ledger over to you for the totals.")
    await api.say(c.owner, answered.id, "@Scout how far along are you?")
    said["answered"] = await api.say(c.scout, answered.id, "About halfway.")
    await api.append(c.owner, {"type": "exchange.set", "space_id": paused.id, "state": "paused"})
    said["paused"] = await api.say(c.scout, paused.id, "Drawn up to the letter M.")
    said["nobodys"] = await api.say(c.scout, nobodys.id, "The alphabet is drawn, A to Z.")

    # The words that reached nobody go to the lead, after the quiet spell.
    frame = await c.socks["atlas"].wait_for(handed_to_lead(said["nobodys"]), timeout=30)
    handed = frame["event"] if frame["frame"] == "event" else None
    assert handed is not None
    assert handed["handed"] is True and handed["lead"] is True
    assert handed["message_id"].startswith("msg_") and handed["text"].startswith("The alphabet")
    (note,) = handed["room"]["notes"].values()
    assert note.startswith("Nobody has this turn: Scout said it with no @"), note
    # Everybody in the room sees the quiet line's event, said by Chips.
    line = await c.socks["owner"].wait_for(of_type("lead.handed", nobodys.id))
    event = line["event"] if line["frame"] == "event" else None
    assert event is not None and event["actor"]["kind"] == "system"
    assert (event["agent_id"], event["said_by"]) == (
        nobodys.agents["Atlas"],
        nobodys.agents["Scout"],
    )
    assert event["quiet_seconds"] == QUIET
    # Nobody else is handed it: each of them has the quiet line's event by now, and a
    # hand-off would travel beside it.
    for name in ("scout", "ledger"):
        await c.socks[name].wait_for(of_type("lead.handed", nobodys.id))
    assert not [e for e in c.socks["scout"].events() if e.get("lead")]
    assert not [e for e in c.socks["ledger"].events() if e.get("lead")]

    # New words that reach nobody, in a room that was handed some: handed once more, later
    # than any of the exceptions above would have been.
    again = await api.say(c.ledger, nobodys.id, "And the totals are checked.")
    await c.socks["atlas"].wait_for(handed_to_lead(again), timeout=30)

    for_lead = await logged(api, c.owner, "lead.handed")
    assert [e["space_id"] for e in for_lead] == [nobodys.id, nobodys.id]
    assert len({e["message_id"] for e in for_lead}) == 2  # the same words never twice
    assert len(handed_of(c.socks["atlas"], said["nobodys"])) == 1
    for case in ("own", "named", "reached", "answered", "paused"):
        assert not handed_of(c.socks["atlas"], said[case]), case


async def test_who_is_working_is_told_and_the_note_says_it(stack, api: Api) -> None:
    c = await crew(stack, api)
    room = await led_room(api, c, "Working")
    owner = c.socks["owner"]
    await api.append(
        c.scout,
        {"type": "run.started", "run_id": "run_draw", "space_id": room.id, "goal": "draw A-Z"},
    )
    await api.append(
        c.scout,
        {
            "type": "step.log",
            "run_id": "run_draw",
            "step_id": "s1",
            "status": "started",
            "title": "Editing ascii-alphabet.html",
        },
    )

    def working_on_step(frame: dict[str, Any]) -> bool:
        events = [frame["event"]] if frame["frame"] == "event" else frame.get("events", [])
        return any(
            e["type"] == "room.working"
            and e["space_id"] == room.id
            and e["working"][0].get("last_step") == "Editing ascii-alphabet.html"
            for e in events
        )

    frame = await owner.wait_for(working_on_step, timeout=20)
    told = frame["event"] if frame["frame"] == "event" else None
    assert told is not None and told["actor"]["kind"] == "system"
    (going,) = told["working"]
    assert (going["agent_id"], going["run_id"]) == (room.agents["Scout"], "run_draw")
    assert {r["agent_id"] for r in told["idle"]} == {room.agents["Ledger"], room.agents["Atlas"]}

    # While Scout works, nobody's words wait for it: Ledger's are not handed yet.
    words = await api.say(c.ledger, room.id, "The totals are in the sheet.")
    seq = await api.say(c.owner, room.id, "@Ledger what is next?")
    await c.socks["ledger"].wait_for_seq(seq)
    (turn,) = [e for e in c.socks["ledger"].events() if e["seq"] == seq]
    (note,) = turn["room"]["notes"].values()
    assert (
        "Working now: Scout, less than a minute in (last step: Editing ascii-alphabet.html)."
        in note
    ), note
    assert "Not working: Atlas for less than a minute." in note, note

    await api.append(c.scout, {"type": "run.completed", "run_id": "run_draw", "summary": "A-Z"})
    idle = await owner.wait_for(of_type("room.idle", room.id), timeout=20)
    event = idle["event"] if idle["frame"] == "event" else None
    assert event is not None
    assert {r["agent_id"] for r in event["idle"]} == set(room.agents.values())
    # The person's question was the last words: nothing is handed to the lead.
    assert not handed_of(c.socks["atlas"], words)

    # Ledger's answer to the person who asked it alone is not handed; once the turn is
    # over, Scout's next words to nobody go to the lead.
    answer = await api.say(c.ledger, room.id, "The index page is next.")
    again = await api.say(c.scout, room.id, "The alphabet is done: A to Z.")
    await c.socks["atlas"].wait_for(handed_to_lead(again), timeout=30)
    (to_lead,) = handed_of(c.socks["atlas"], again)
    handed = [e for e in await logged(api, c.owner, "lead.handed") if e["space_id"] == room.id]
    ended = [e for e in await logged(api, c.owner, "run.completed")]
    assert handed[0]["seq"] > ended[-1]["seq"]
    # Only `again` was ever handed to the lead, in this room: not Ledger's words from
    # while Scout worked, nor its answer (the log holds every hand-off up to this one).
    assert [e["message_id"] for e in handed] == [to_lead["message_id"]]
    assert not handed_of(c.socks["atlas"], answer)


@pytest.mark.timeout(300)  # the referee is restarted twice
async def test_a_turn_silent_too_long_is_not_counted(stack, api: Api) -> None:
    """The ten minutes are four seconds here: the referee is restarted with them."""
    stack.extra_env["referee"] = {
        **stack.extra_env.get("referee", {}),
        "CHIPS_TURN_SILENT_SECONDS": "4",
    }
    try:
        stack.restart("referee")
        c = await crew(stack, api)
        room = await led_room(api, c, "Silent")
        await api.append(
            c.scout,
            {"type": "run.started", "run_id": "run_quiet", "space_id": room.id, "goal": "x"},
        )
        words = await api.say(c.ledger, room.id, "The totals are in the sheet.")
        await c.socks["owner"].wait_for(of_type("room.working", room.id), timeout=20)
        # Nothing more is heard from Scout's turn: it stops counting, the room is idle, and
        # the words nobody took go to the lead.
        idle = await c.socks["owner"].wait_for(of_type("room.idle", room.id), timeout=30)
        event = idle["event"] if idle["frame"] == "event" else None
        assert event is not None
        await c.socks["atlas"].wait_for(handed_to_lead(words), timeout=30)
        # The notes say so too: Scout is not working.
        seq = await api.say(c.owner, room.id, "@Ledger anything new?")
        await c.socks["ledger"].wait_for_seq(seq)
        (turn,) = [e for e in c.socks["ledger"].events() if e["seq"] == seq]
        (note,) = turn["room"]["notes"].values()
        assert "Working now" not in note, note
        assert "Not working: Atlas for less than a minute, Scout for less than a minute." in note
    finally:
        stack.extra_env["referee"] = {
            k: v for k, v in stack.extra_env["referee"].items() if k != "CHIPS_TURN_SILENT_SECONDS"
        }
        stack.restart("referee")


@pytest.mark.timeout(300)  # the referee is killed and started twice
async def test_a_hand_off_due_while_the_referee_was_killed_happens_once(stack, api: Api) -> None:
    c = await crew(stack, api)
    room = await led_room(api, c, "Restart")
    other = await led_room(api, c, "Later")
    stack.kill("referee")  # SIGKILL: no chance to finish anything
    try:
        words = await api.say(c.scout, room.id, "The alphabet is drawn.")
        # The hand-off falls due while the referee is down.
        await asyncio.sleep(QUIET + 1)
        assert not handed_of(c.socks["atlas"], words)
    finally:
        stack.start("referee")
        stack.wait_ready("referee")
    await c.socks["atlas"].wait_for(handed_to_lead(words), timeout=30)

    # Killed again straight after, and started: the same words are not handed twice.
    stack.kill("referee")
    stack.start("referee")
    stack.wait_ready("referee")
    later = await api.say(c.scout, other.id, "The index page is drawn.")
    await c.socks["atlas"].wait_for(handed_to_lead(later), timeout=30)
    handed = await logged(api, c.owner, "lead.handed")
    assert [e["space_id"] for e in handed] == [room.id, other.id]
    assert len(handed_of(c.socks["atlas"], words)) == 1


def forget_workspace(stack: Any, workspace_id: str) -> None:
    """Drop everything the referee keeps of a workspace: its checkpoint and its rooms."""
    url = stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        for table in ("referee_rooms", "referee_checkpoints"):
            conn.execute(f"DELETE FROM {table} WHERE workspace_id = %s", (workspace_id,))


@pytest.mark.timeout(300)  # the referee is killed and started
async def test_the_referee_rebuilt_from_the_log_fires_nothing_twice(stack, api: Api) -> None:
    """What the referee keeps is rebuilt from the log when it is gone: the words already
    handed, who was told who works and the job already warned are not told again."""
    c = await crew(stack, api)
    room = await led_room(api, c, "Rebuilt")
    other = await led_room(api, c, "After")
    await api.append(
        c.scout, {"type": "run.started", "run_id": "run_rb", "space_id": room.id, "goal": "x"}
    )
    await c.socks["owner"].wait_for(of_type("room.working", room.id), timeout=20)
    await api.append(
        c.scout,
        {
            "type": "usage",
            "run_id": "run_rb",
            "tokens_in": 1,
            "tokens_out": 1,
            "cost_usd": 2.5,
        },
    )
    await c.socks["owner"].wait_for(of_type("budget.warning", room.id), timeout=20)
    await api.append(c.scout, {"type": "run.completed", "run_id": "run_rb", "summary": "x"})
    words = await api.say(c.scout, room.id, "The alphabet is drawn.")
    await c.socks["atlas"].wait_for(handed_to_lead(words), timeout=30)
    told_before = [
        e["type"]
        for e in await logged(api, c.owner, "room.working")
        + await logged(api, c.owner, "room.idle")
        if e["space_id"] == room.id
    ]

    stack.kill("referee")
    try:
        forget_workspace(stack, c.owner.workspace_id)
    finally:
        stack.start("referee")
        stack.wait_ready("referee")
    # Something new, so it reads the workspace's log again from its start.
    later = await api.say(c.scout, other.id, "The index page is drawn.")
    await c.socks["atlas"].wait_for(handed_to_lead(later), timeout=30)

    handed = await logged(api, c.owner, "lead.handed")
    assert [e["space_id"] for e in handed] == [room.id, other.id]
    warned = [e for e in await logged(api, c.owner, "budget.warning") if e["space_id"] == room.id]
    assert [(e["threshold"], e["since_seq"]) for e in warned] == [(80, warned[0]["since_seq"])]
    told_after = [
        e["type"]
        for e in await logged(api, c.owner, "room.working")
        + await logged(api, c.owner, "room.idle")
        if e["space_id"] == room.id
    ]
    assert told_after == told_before
    assert len(handed_of(c.socks["atlas"], words)) == 1


def logged_errors(stack: Any, service: str, start: int) -> list[str]:
    """The lines at level error (and any traceback) ``service`` logged past byte ``start``."""
    with stack.procs[service].log_path.open("rb") as log:
        log.seek(start)
        lines = log.read().decode(errors="replace").splitlines()
    found = []
    for line in lines:
        try:
            level = json.loads(line).get("level")
        except ValueError:
            level = "error" if line.startswith("Traceback") else None
        if level in ("error", "critical"):
            found.append(line)
    return found


async def test_fifty_turns_going_in_one_room_are_told_and_nothing_fails(stack, api: Api) -> None:
    """Its key names the runs by a digest: listing them passed the log's 200 characters at
    about five runs, and the referee failed on that room in a loop (issue 26)."""
    c = await crew(stack, api)
    room = await led_room(api, c, "Busy")
    start = stack.procs["referee"].log_path.stat().st_size
    runs = {f"run_scout_{room.id}_{i:02d}" for i in range(50)}
    for run in sorted(runs):
        started = {"type": "run.started", "run_id": run, "space_id": room.id, "goal": "count"}
        await api.append(c.scout, started)

    def all_told(frame: dict[str, Any]) -> bool:
        events = [frame["event"]] if frame["frame"] == "event" else frame.get("events", [])
        return any(
            e["type"] == "room.working"
            and e["space_id"] == room.id
            and {w["run_id"] for w in e["working"]} == runs
            for e in events
        )

    await c.socks["owner"].wait_for(all_told, timeout=30)
    # The referee still acts on the room: the turns' end is told too.
    for run in sorted(runs):
        await api.append(c.scout, {"type": "run.completed", "run_id": run, "summary": "done"})
    await c.socks["owner"].wait_for(of_type("room.idle", room.id), timeout=30)
    assert logged_errors(stack, "referee", start) == []
