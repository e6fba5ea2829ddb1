"""What each ``apply_*`` writes for a logged event, with no database.

Most event types the projector folds have no rule of their own in ``chips_projector.rules``:
their ``apply_*`` writes the event's fields straight into a row. Those writes are read here
as SQLAlchemy builds them (each statement compiled for Postgres, its values and its
conditions), for the catalogue's samples as the door logs them; only the ``apply_*`` that
write without reading anything back first are here. That the statements do to Postgres what
they say is the end-to-end rebuild tests' to prove (docs/architecture/design.md §5).
"""

from __future__ import annotations

import asyncio
import importlib.util
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql.dml import Delete, Insert, Update

from chips_common.events.wire import EventJson
from chips_projector import erase, runs, store, threads, words

pytestmark = pytest.mark.unit


def _sibling(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


L = _sibling("test_rules_logged")
sample, logged, SAMPLES, MORE = L.sample, L.logged, L.SAMPLES, L.MORE
PERSON, HARNESS, AGENT = L.PERSON, L.HARNESS, L.AGENT
USR, HRN, AGT, SPC, SPC2, MSG, RUN = L.USR, L.HRN, L.AGT, L.SPC, L.SPC2, L.MSG, L.RUN
WS, WHEN = "ws_01J9ZQ5V1M3X8K2R7T4W6Y0WSP", L.WHEN
PG = postgresql.dialect()  # type: ignore[no-untyped-call]


@dataclass
class Write:
    """One statement an ``apply_*`` sent: what it does, to which table, with which values
    (by column) and which conditions (the other bound parameters), and its SQL."""

    verb: str
    table: str
    values: dict[str, Any]
    where: dict[str, Any]
    sql: str


class Statements:
    """Stands where the connection would: keeps each statement, runs none."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def execute(self, statement: Any, parameters: Any = None) -> None:
        self.sent.append(statement)


def writes(apply: Callable[[Any, EventJson], Awaitable[None]], event: EventJson) -> list[Write]:
    conn = Statements()
    asyncio.run(apply(conn, event))
    out = []
    for statement in conn.sent:
        assert isinstance(statement, Insert | Update | Delete), statement
        compiled = statement.compile(dialect=PG)
        columns = set(statement.table.c.keys())  # type: ignore[attr-defined]
        params = dict(compiled.params)
        out.append(
            Write(
                verb=type(statement).__name__.lower(),
                table=statement.table.name,  # type: ignore[attr-defined]
                values={k: v for k, v in params.items() if k in columns},
                where={k: v for k, v in params.items() if k not in columns},
                sql=str(compiled),
            )
        )
    return out


def only(apply: Callable[[Any, EventJson], Awaitable[None]], event: EventJson) -> Write:
    [one] = writes(apply, event)
    return one


# --- people and harnesses -----------------------------------------------------------------


def test_a_harness_joining_is_a_participant_owned_by_its_person() -> None:
    w = only(store.apply_participant_joined, sample("participant.joined", PERSON))
    assert (w.verb, w.table) == ("insert", "rm_participants")
    assert w.values == {
        "id": HRN,
        "workspace_id": WS,
        "kind": "harness",
        "name": "Scout",
        "role": "member",
        "owner_id": USR,
        "joined_seq": 7,
    }


def test_a_person_joining_with_no_role_given_is_a_member_and_owned_by_nobody() -> None:
    joined = sample(
        "participant.joined", PERSON, participant_id=USR, kind="person", name="Ada", role=None,
        owner_id=None, autonomy=None,
    )  # fmt: skip
    w = only(store.apply_participant_joined, joined)
    assert w.values["role"] == "member" and w.values["owner_id"] is None


def test_a_deactivation_writes_what_changed_and_hands_the_rooms_on() -> None:
    """docs/adr/0125, 0144: the role, ``active`` false (written, though false), the name and
    time zone; then in the rooms handed on the person is a member and the heir the owner.
    What the person was called before is not a column."""
    heir = "usr_01J0000000000000000000002"
    person, members, heirs = writes(store.apply_person_updated, sample("person.updated", PERSON))
    assert (person.verb, person.table) == ("update", "rm_participants")
    assert person.values == {
        "role": "guest",
        "active": False,
        "name": "Dana Ruiz",
        "time_zone": "Europe/Lisbon",
    }
    assert person.where == {"id_1": USR}
    assert (members.table, members.values) == ("rm_members", {"standing": "member"})
    assert members.where == {"space_id_1": [SPC], "participant_id_1": USR}
    assert (heirs.table, heirs.values) == ("rm_members", {"standing": "owner"})
    assert heirs.where == {"space_id_1": [SPC], "participant_id_1": heir}


def test_a_rename_alone_writes_the_name_alone() -> None:
    renamed = sample(
        "person.updated", PERSON, role=None, active=None, time_zone=None, previous_name=None,
        disconnected=None, rooms_to=None, rooms_handed=None,
    )  # fmt: skip
    w = only(store.apply_person_updated, renamed)
    assert w.values == {"name": "Dana Ruiz"}


def test_a_harness_s_capabilities_are_written_on_its_row() -> None:
    w = only(store.apply_harness_declared, sample("harness.declared", HARNESS))
    assert (w.verb, w.table, w.where) == ("update", "rm_participants", {"id_1": HRN})
    assert w.values == {"capabilities": ["new_spaces", "follows_rooms", "agents", "forks"]}


# --- rooms --------------------------------------------------------------------------------


def test_a_room_opened_with_a_key_writes_the_room_its_members_and_its_opener() -> None:
    room, *members, opener = writes(store.apply_space_created, sample("space.created", HARNESS))
    assert (room.verb, room.table) == ("insert", "rm_spaces")
    assert room.values == {
        "id": SPC,
        "workspace_id": WS,
        "kind": "direct",
        "title": "Scout",
        "created_by": HRN,
        "created_seq": 7,
        "created_at": WHEN,
        "last_seq": 7,
        "message_count": 0,
        "home_of": HRN,
        "key": "chips-main",
        "key_shared": True,
        "asked_of": HRN,
    }
    assert [(m.table, m.values["participant_id"], m.values["standing"]) for m in members] == [
        ("rm_members", USR, "owner"),
        ("rm_members", HRN, "member"),
        ("rm_members", HRN, "member"),
    ]
    assert all("ON CONFLICT DO NOTHING" in m.sql for m in members)  # the first standing stands
    assert (opener.table, opener.values["harness_id"], opener.values["since_seq"]) == (
        "rm_openers",
        HRN,
        7,
    )


def test_a_room_opened_without_a_key_has_no_opener_and_is_not_shared() -> None:
    created = sample(
        "space.created", PERSON, kind="group", key=None, shared=None, home_of=None,
        opened_for=None, asked_of=None, members=None, parent_space_id=None, root_message_id=None,
    )  # fmt: skip
    room, owner = writes(store.apply_space_created, created)
    assert room.values["key"] is None and room.values["key_shared"] is False
    assert (owner.table, owner.values["participant_id"]) == ("rm_members", USR)


def test_a_thread_is_a_room_of_its_room_with_no_members_of_its_own() -> None:
    """docs/product/messages.md, Threads: whoever is in the room is in its threads."""
    created = sample(
        "space.created", PERSON, kind="thread", title="Re: the PO", members=None, key=None,
        shared=None, home_of=None, opened_for=None, asked_of=None,
    )  # fmt: skip
    w = only(store.apply_space_created, created)
    assert (w.verb, w.table) == ("insert", "rm_spaces")
    assert w.values["kind"] == "thread"
    assert w.values["parent_space_id"] == "spc_01J8Z3PARENT0000000000000"
    assert w.values["root_message_id"] == "msg_01J8Z3R00T00000000000000"
    assert w.values["created_at"] == WHEN and w.values["message_count"] == 0
    assert only(threads.apply_thread_created, created).values == w.values


def test_a_claim_takes_a_keyless_room_and_brings_it_forward() -> None:
    claim, opener, touch = writes(store.apply_space_claimed, sample("space.claimed", HARNESS))
    assert (claim.table, claim.values) == ("rm_spaces", {"key": "jspace-42", "key_shared": False})
    assert "rm_spaces.key IS NULL" in claim.sql  # a room with a key keeps it
    assert (opener.verb, opener.table, opener.values["harness_id"]) == ("insert", "rm_openers", HRN)
    assert (touch.table, touch.values["last_seq"]) == ("rm_spaces", 7)


def test_an_erasure_takes_every_row_of_the_room_and_its_threads() -> None:
    """docs/adr/0010: what the room spent stays on its harnesses' accounts; a lane that went
    into the room goes, one that came out of it stays the other room's."""
    erased = [SPC, "spc_01J8Z3THREAD0000000000000"]
    sent = writes(erase.apply_space_erased, sample("space.erased", PERSON))
    assert all(w.verb == "delete" for w in sent)
    assert [w.table for w in sent] == [
        "rm_hidden",
        "rm_steps",
        "rm_messages",
        "rm_members",
        "rm_openers",
        "rm_feedback",
        "rm_runs",
        "rm_cards",
        "rm_spaces",
        "rm_usage",
        "rm_lanes",
    ]
    for w in sent:
        assert erased in w.where.values(), (w.table, w.where)
    usage = sent[-2]
    assert "space" in usage.where.values()
    assert "rm_lanes.to_space_id IN" in sent[-1].sql


# --- what is done to messages -------------------------------------------------------------


def test_an_edit_writes_the_new_words_and_marks_them_edited() -> None:
    w = only(words.apply_message_edited, sample("message.edited", PERSON))
    assert (w.verb, w.table, w.where) == ("update", "rm_messages", {"id_1": MSG})
    assert w.values == {"text": "Their slot holds until Friday noon.", "edited": True}


def test_a_message_taken_back_is_a_tombstone_with_no_pin_and_no_feedback() -> None:
    tomb, feedback = writes(words.apply_message_deleted, sample("message.deleted", PERSON))
    assert (tomb.table, tomb.where) == ("rm_messages", {"id_1": MSG})
    assert tomb.values == {"text": "", "card": None, "deleted": True, "pinned": False}
    assert (feedback.verb, feedback.table, feedback.where) == (
        "delete",
        "rm_feedback",
        {"message_id_1": MSG},
    )


@pytest.mark.parametrize(
    ("name", "pinned"), [("message.pinned", True), ("message.unpinned", False)]
)
def test_a_pin_and_an_unpin_write_the_mark(name: str, pinned: bool) -> None:
    w = only(words.apply_message_pinned, sample(name, PERSON))
    assert (w.table, w.values, w.where) == ("rm_messages", {"pinned": pinned}, {"id_1": MSG})


def test_delete_for_me_hides_it_from_that_person_once() -> None:
    w = only(words.apply_message_hidden, sample("message.hidden", PERSON))
    assert (w.verb, w.table) == ("insert", "rm_hidden")
    assert w.values == {"participant_id": USR, "message_id": MSG, "workspace_id": WS}
    assert "ON CONFLICT DO NOTHING" in w.sql


def test_showing_it_again_takes_only_that_person_s_hide() -> None:
    w = only(words.apply_message_hidden, sample("message.shown", PERSON))
    assert (w.verb, w.table) == ("delete", "rm_hidden")
    assert w.where == {"participant_id_1": USR, "message_id_1": MSG}


def test_a_turn_that_heard_a_message_is_added_once() -> None:
    """The test of whether it is there already is a boolean: a ``NOT`` of a JSONB-typed
    ``@>`` is deprecated by SQLAlchemy, to be refused by a later release."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = only(words.apply_message_heard, sample("message.heard", AGENT))
    assert (w.verb, w.table) == ("update", "rm_messages")
    assert AGT in w.where.values() and MSG in w.where.values()
    assert "@>" in w.sql and "||" in w.sql  # not added when already there


def test_a_reaction_taken_back_takes_that_emoji_of_that_person() -> None:
    w = only(words.apply_feedback, sample("feedback", PERSON))
    assert (w.verb, w.table) == ("delete", "rm_feedback")
    assert sorted(w.where.values()) == sorted([MSG, USR, "reaction", "👍"])


def test_a_reaction_is_a_row_under_the_line() -> None:
    w = only(words.apply_feedback, sample("feedback", PERSON, withdrawn=None))
    assert (w.verb, w.table) == ("insert", "rm_feedback")
    assert w.values == {
        "id": L.EVENT_ID,
        "workspace_id": WS,
        "space_id": SPC,
        "message_id": MSG,
        "from_id": USR,
        "kind": "reaction",
        "emoji": "👍",
        "note": None,
        "reasons": None,
        "seq": 7,
    }


def test_a_correction_keeps_its_note_and_reasons() -> None:
    w = only(words.apply_feedback, logged(MORE["feedback"][0], PERSON))
    assert w.values["kind"] == "correction" and w.values["emoji"] is None
    assert w.values["note"] == "The total is off"
    assert w.values["reasons"] == ["wrong_facts", "too_long"]


# --- runs, steps, cards, lanes ------------------------------------------------------------


def test_a_job_taking_over_its_lane_starts_a_run_of_its_agent() -> None:
    """ADR 0017: the lane is worked by the run; the run is the agent's, on its harness."""
    lane, run = writes(runs.apply_run_started, sample("run.started", AGENT))
    assert (lane.table, lane.values) == ("rm_lanes", {"working_run_id": RUN})
    assert sorted(lane.where.values()) == sorted([WS, "lane_jacobian-5.1"])
    assert (run.verb, run.table) == ("insert", "rm_runs")
    assert run.values == {
        "id": RUN,
        "workspace_id": WS,
        "space_id": SPC,
        "harness_id": HRN,
        "agent_id": AGT,
        "goal": "Order the PO for Northwind",
        "session_id": "sess-42",
        "message_id": MSG,
        "chips": True,
        "state": "running",
        "started_seq": 7,
        "started_at": WHEN,
    }


def test_a_harness_s_own_run_has_no_agent_and_no_lane() -> None:
    started = sample(
        "run.started", HARNESS, lane_id=None, chips=None, session_id=None, message_id=None
    )
    run = only(runs.apply_run_started, started)
    assert run.values["agent_id"] is None and run.values["harness_id"] == HRN
    assert run.values["chips"] is False and run.values["session_id"] is None


def test_a_status_replaces_the_last_one_whole() -> None:
    w = only(runs.apply_run_status, sample("run.status", HARNESS))
    assert w.values == {
        "phase": "working",
        "verb": "reading",
        "progress": 0.5,
        "status_text": "Reading the PO",
    }
    bare = sample("run.status", HARNESS, verb=None, progress=None, text=None)
    assert only(runs.apply_run_status, bare).values["progress"] is None


@pytest.mark.parametrize("name", ["run.paused", "run.resumed", "run.completed", "run.failed"])
def test_a_run_s_state_is_written_on_its_row_in_its_workspace(name: str) -> None:
    w = only(runs.apply_state, sample(name, HARNESS))
    assert w.table == "rm_runs" and sorted(w.where.values()) == sorted([WS, RUN])
    assert w.values["state"] in ("paused", "running", "completed", "failed")


def test_a_step_reported_again_replaces_what_it_says_now() -> None:
    full = only(runs.apply_step_log, sample("step.log", HARNESS))
    assert full.values["title"] == "jacobian.read_file" and full.values["status"] == "done"
    assert "ON CONFLICT (workspace_id, run_id, step_id) DO UPDATE SET" in full.sql
    assert "title = excluded.title" in full.sql and "summary = excluded.summary" in full.sql
    again = only(runs.apply_step_log, sample("step.log", HARNESS, title=None, summary=None))
    assert "status = excluded.status" in again.sql and "last_seq = excluded.last_seq" in again.sql
    assert "title = excluded" not in again.sql and "summary = excluded" not in again.sql
    assert "started_seq = excluded" not in again.sql  # when it started stays


@pytest.mark.parametrize(("name", "kind", "card"), [
    ("approval.request", "approval", "perm-17"), ("question.ask", "question", "q-3"),
])  # fmt: skip
def test_an_ask_is_a_card_that_keeps_the_event_and_when_it_expires(
    name: str, kind: str, card: str
) -> None:
    event = sample(name, AGENT)
    w = only(runs.apply_card, event)
    assert (w.verb, w.table) == ("insert", "rm_cards")
    assert (w.values["kind"], w.values["id"], w.values["run_id"]) == (kind, card, RUN)
    assert w.values["harness_id"] == HRN and w.values["asked_seq"] == 7
    assert w.values["expires_at"] == datetime(2026, 9, 2, 14, 30, tzinfo=UTC)
    body = w.values["body"]
    assert "v" not in body and "workspace_id" not in body
    assert body == {k: v for k, v in event.items() if k not in ("v", "workspace_id")}


def test_an_ask_that_never_expires_has_no_expiry() -> None:
    w = only(runs.apply_card, sample("question.ask", HARNESS, expires_at=None))
    assert w.values["expires_at"] is None


def test_an_answer_is_written_on_its_card() -> None:
    w = only(runs.apply_answer, sample("approval.resolved", PERSON, seq=9))
    assert (w.verb, w.table) == ("update", "rm_cards")
    assert sorted(w.where.values()) == sorted([WS, "approval", "perm-17"])
    assert w.values == {
        "answered_by": USR,
        "answer": {"decision": "edit", "edited": "rm -rf build/tmp", "note": "only tmp"},
        "answered_seq": 9,
    }


def test_a_lane_opened_at_home_is_a_row_and_its_other_copy_writes_nothing() -> None:
    opened = sample("lane.opened", AGENT)
    w = only(runs.apply_lane_opened, opened)
    assert (w.verb, w.table) == ("insert", "rm_lanes")
    assert w.values["to_space_id"] == SPC2 and w.values["from_space_id"] == SPC
    assert w.values["state"] == "open" and w.values["opener_id"] == AGT
    assert w.values["task"]["goal"] == "Find a cheaper carrier for the PO"
    assert w.values["worker"] == "Analyst" and w.values["opened_at"] == WHEN
    assert writes(runs.apply_lane_opened, sample("lane.opened", AGENT, space_id=SPC)) == []


def test_a_lane_s_end_is_written_from_its_copy_at_home_only() -> None:
    assert writes(runs.apply_lane_ended, sample("lane.completed", AGENT)) == []  # from-room copy
    w = only(runs.apply_lane_ended, sample("lane.completed", AGENT, space_id=SPC2))
    assert w.values["state"] == "completed" and w.values["summary"] == "DHL at $31"
    assert sorted(w.where.values()) == sorted([WS, "lane_jacobian-5.1"])
