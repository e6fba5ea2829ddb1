"""The projector's folding rules, with no database (chips_projector.rules).

Each ``apply_*`` writes what one of these pure functions decides, so every rule of the
read models is tested here on the event alone; the tables they fill are proven equal to
a rebuild from seq 0 by the end-to-end rebuild tests (docs/architecture/design.md §5).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chips_common.events import CATALOGUE
from chips_projector import rules
from chips_projector.runs import RUN_APPLY
from chips_projector.store import APPLY, posts_only

pytestmark = pytest.mark.unit

TS = "2026-12-03T08:00:00Z"
PERSON = {"kind": "person", "id": "usr_ann"}
HARNESS = {"kind": "harness", "id": "hrn_scout"}
AGENT = {"kind": "agent", "id": "agt_j1", "harness_id": "hrn_jac"}


def event(type_: str, actor: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "id": "01JEVENT0000000000000000000",
        "type": type_,
        "ts": TS,
        "seq": 42,
        "workspace_id": "ws_1",
        "actor": actor or PERSON,
        **fields,
    }


# --- the dispatch tables ------------------------------------------------------------------


def test_the_tables_name_only_catalogue_types() -> None:
    """Every type the projector folds is a type of the catalogue."""
    assert set(APPLY) | set(RUN_APPLY) <= set(CATALOGUE)


def test_no_type_is_folded_twice() -> None:
    assert set(APPLY) & set(RUN_APPLY) == set()


def test_posts_alone_fold_on_psycopg_and_anything_else_does_not() -> None:
    """docs/adr/0120: a batch of posts (and events the projector ignores) folds without
    the engine; one room operation in it sends the batch to the engine."""
    post = event("message.post", message_id="msg_1", space_id="spc_1", text="hi")
    ignored = event("room.working", space_id="spc_1")
    assert "room.working" not in APPLY and "room.working" not in RUN_APPLY
    assert posts_only([(post, None), (ignored, None)])
    assert posts_only([])
    assert not posts_only([(post, None), (event("space.updated", space_id="spc_1"), None)])
    assert not posts_only([(event("usage", run_id="run_1"), None)])


# --- rooms and who is in them -----------------------------------------------------------


def test_a_person_s_new_room_is_theirs() -> None:
    created = event("space.created", space_id="spc_1", kind="group")
    assert rules.first_members(created) == [("usr_ann", "owner")]


def test_a_room_a_harness_opens_for_its_owner_holds_both() -> None:
    """docs/product/spaces.md, How one is opened: opened for the owner, who owns it; the
    harness is a member beside them."""
    created = event("space.created", HARNESS, space_id="spc_1", kind="direct", opened_for="usr_ann")
    assert rules.first_members(created) == [("usr_ann", "owner"), ("hrn_scout", "member")]


def test_the_members_a_room_is_opened_with_follow_its_owner() -> None:
    """Every face picked from the + is put in the room (docs/product/spaces.md)."""
    created = event(
        "space.created",
        space_id="spc_1",
        kind="group",
        members=["hrn_a", "hrn_b"],
        asked_of="hrn_a",
    )
    assert rules.first_members(created) == [
        ("usr_ann", "owner"),
        ("hrn_a", "member"),
        ("hrn_b", "member"),
    ]


def test_opened_for_oneself_is_one_owner_row() -> None:
    created = event("space.created", space_id="spc_1", kind="group", opened_for="usr_ann")
    assert rules.first_members(created) == [("usr_ann", "owner")]


def test_a_harness_behind_its_agents_draws_no_line() -> None:
    """docs/adr/0070: a harness in a room only behind its agents is kept, never shown."""
    assert rules.draws_a_line("member")
    assert rules.draws_a_line("owner")
    assert rules.draws_a_line(None)  # a removal of somebody no longer listed
    assert not rules.draws_a_line(rules.BEHIND_AGENTS)


def test_only_a_harness_replaced_by_its_agent_stays_behind_it() -> None:
    """docs/adr/0071: an agent that replaced another leaves by its own removal."""
    assert rules.moves_behind_agents(event("membership.replaced", replaced="hrn_jac"))
    assert not rules.moves_behind_agents(event("membership.replaced", replaced="agt_j2"))


def test_a_retitle_changes_the_title_and_not_the_state() -> None:
    updated = event("space.updated", space_id="spc_1", title="India trip")
    assert rules.space_changes(updated) == {"last_seq": 42, "title": "India trip"}


def test_an_archive_says_who_moved_it_and_when() -> None:
    """docs/product/spaces.md, Retitling and archiving: a harness reads who last moved it."""
    updated = event("space.updated", HARNESS, space_id="spc_1", state="closed")
    assert rules.space_changes(updated) == {
        "last_seq": 42,
        "state": "closed",
        "moved_by": "hrn_scout",
        "moved_seq": 42,
    }


def test_a_title_cleared_is_written_as_none() -> None:
    updated = event("space.updated", space_id="spc_1", title=None, state="open")
    changes = rules.space_changes(updated)
    assert changes["title"] is None and changes["state"] == "open"


# --- agents -------------------------------------------------------------------------------


def test_an_agent_row_keeps_the_facts_its_registration_gave() -> None:
    registered = event(
        "agent.registered", HARNESS, agent_id="agt_1", harness_id="hrn_scout", name="Oc",
        key="k1", state="active", main=True, forked_from=None, made_for=None,
    )  # fmt: skip
    assert rules.agent_facts(registered) == {"key": "k1", "state": "active", "main": True}


def test_a_rename_changes_the_name_and_leaves_the_facts() -> None:
    facts = {"key": "k1", "state": "active"}
    renamed = event("agent.updated", agent_id="agt_1", name="Oc 2")
    assert rules.agent_changes(facts, renamed) == {"name": "Oc 2"}


def test_a_person_s_rename_is_remembered_in_the_facts() -> None:
    """docs/product/websocket.md, Agents: a person's rename holds over the harness's."""
    facts = {"key": "k1", "state": "active"}
    renamed = event("agent.updated", agent_id="agt_1", name="Ledger", name_by="usr_ann")
    assert rules.agent_changes(facts, renamed) == {
        "agent": {"key": "k1", "state": "active", "name_by": "usr_ann"},
        "name": "Ledger",
    }


def test_an_archive_merges_the_state_into_the_facts() -> None:
    facts = {"key": "k1", "state": "active", "main": False}
    archived = event("agent.updated", agent_id="agt_1", state="archived")
    assert rules.agent_changes(facts, archived) == {
        "agent": {"key": "k1", "state": "archived", "main": False}
    }


def test_an_update_that_changes_nothing_writes_nothing() -> None:
    facts = {"key": "k1", "state": "active"}
    assert (
        rules.agent_changes(facts, event("agent.updated", agent_id="agt_1", state="active")) == {}
    )
    assert rules.agent_changes(None, event("agent.updated", agent_id="agt_1")) == {}


def test_a_face_is_kept_changed_and_taken_off_in_the_facts() -> None:
    """docs/adr/0153: the face an agent was registered with, changed, and taken off."""
    registered = event(
        "agent.registered", HARNESS, agent_id="agt_1", harness_id="hrn_scout", name="Oc",
        key="k1", state="active", face="🦊",
    )  # fmt: skip
    facts = rules.agent_facts(registered)
    assert facts == {"key": "k1", "state": "active", "face": "🦊"}
    pictured = event("agent.updated", agent_id="agt_1", face="att_1")
    assert rules.agent_changes(facts, pictured) == {
        "agent": {"key": "k1", "state": "active", "face": "att_1"}
    }
    taken_off = event("agent.updated", agent_id="agt_1", face="")
    assert rules.agent_changes(facts, taken_off) == {"agent": {"key": "k1", "state": "active"}}
    assert rules.agent_changes(facts, event("agent.updated", agent_id="agt_1", face="🦊")) == {}


def test_an_agent_with_no_facts_yet_gets_them() -> None:
    changed = rules.agent_changes(None, event("agent.updated", agent_id="agt_1", state="archived"))
    assert changed == {"agent": {"state": "archived"}}


# --- posts --------------------------------------------------------------------------------


def test_a_text_s_row_is_its_words() -> None:
    post = event(
        "message.post", message_id="msg_1", space_id="spc_1", text="Hello", reply_to="msg_0"
    )
    assert rules.post_row(post) == {
        "id": "msg_1",
        "workspace_id": "ws_1",
        "space_id": "spc_1",
        "seq": 42,
        "author_id": "usr_ann",
        "kind": "text",
        "text": "Hello",
        "reply_to": "msg_0",
        "ts": TS,
        "card": None,
        "run_id": None,
    }


def test_a_card_s_row_keeps_its_card_and_its_headline() -> None:
    """A message kind with a card keeps the card; the row's words are its headline
    (docs/product/messages.md, Message; docs/adr/0020)."""
    card = {"goal": "Book the hotel"}
    post = event(
        "message.post", AGENT, message_id="msg_2", space_id="spc_1", kind="task", task=card,
        run_id="run_1",
    )  # fmt: skip
    row = rules.post_row(post)
    assert row["kind"] == "task" and row["card"] == card and row["run_id"] == "run_1"
    assert row["author_id"] == "agt_j1"
    assert row["text"] == "Book the hotel"


def test_a_kind_without_a_card_keeps_none_even_when_a_field_has_its_name() -> None:
    post = event("message.post", message_id="msg_3", space_id="spc_1", kind="text", text="x")
    assert rules.post_row(post)["card"] is None


# --- runs, steps, usage, cards ------------------------------------------------------------


def test_a_run_s_harness_is_its_agent_s() -> None:
    assert rules.harness_of(event("run.started", AGENT)) == "hrn_jac"
    assert rules.harness_of(event("run.started", HARNESS)) == "hrn_scout"


@pytest.mark.parametrize(("kind", "state"), [("run.paused", "paused"), ("run.resumed", "running")])
def test_a_pause_and_a_resume_change_only_the_state(kind: str, state: str) -> None:
    assert rules.run_state_changes(event(kind, HARNESS, run_id="run_1")) == {"state": state}


def test_a_completion_records_its_summary_and_when() -> None:
    done = event("run.completed", HARNESS, run_id="run_1", summary="Booked", why="ignored")
    assert rules.run_state_changes(done) == {
        "state": "completed",
        "ended_seq": 42,
        "ended_at": datetime(2026, 12, 3, 8, 0, tzinfo=UTC),
        "summary": "Booked",
    }


@pytest.mark.parametrize(("kind", "state"), [("run.failed", "failed"), ("run.cancel", "cancelled")])
def test_a_failure_and_a_cancel_record_why(kind: str, state: str) -> None:
    ended = rules.run_state_changes(event(kind, PERSON, run_id="run_1", why="stopped"))
    assert ended["state"] == state and ended["why"] == "stopped" and "summary" not in ended


def test_a_step_reported_again_keeps_the_title_it_does_not_repeat() -> None:
    """A step is reported again as it moves on: what it says now replaces what it said,
    and what it leaves out stays."""
    again = event("step.log", HARNESS, run_id="run_1", step_id="s1", status="done")
    assert rules.step_replaces(again) == ["status", "last_seq"]
    titled = event("step.log", HARNESS, run_id="r", step_id="s1", status="done", summary="ok")
    assert rules.step_replaces(titled) == ["status", "last_seq", "summary"]


def test_a_costed_usage_counts_its_cost() -> None:
    usage = event("usage", HARNESS, run_id="run_1", tokens_in=10, tokens_out=5, cost_usd=0.25)
    assert rules.usage_of(usage) == {
        "tokens_in": 10,
        "tokens_out": 5,
        "cost_usd": 0.25,
        "uncosted": 0,
    }


def test_a_usage_without_a_cost_counts_nothing_and_is_counted_as_uncosted() -> None:
    """docs/product/websocket.md, What the job has spent: a run Chips could not price
    counts nothing, and the note says how many did."""
    usage = event("usage", HARNESS, run_id="run_1", tokens_in=10, tokens_out=5, cost_usd=None)
    assert rules.usage_of(usage)["cost_usd"] == 0
    assert rules.usage_of(usage)["uncosted"] == 1


def test_a_zero_cost_is_a_cost() -> None:
    usage = event("usage", HARNESS, run_id="run_1", tokens_in=1, tokens_out=1, cost_usd=0.0)
    assert rules.usage_of(usage)["uncosted"] == 0


def test_usage_counts_in_its_room_and_on_its_harness() -> None:
    usage = event("usage", AGENT, run_id="run_1", space_id="spc_1", tokens_in=1, tokens_out=1)
    assert rules.usage_scopes(usage, room_stands=True) == [
        ("space", "spc_1"),
        ("harness", "hrn_jac"),
        ("harness_day", "hrn_jac/2026-12-03"),
    ]


def test_usage_in_an_erased_room_stays_on_the_harness_alone() -> None:
    """docs/product/spaces.md, Deleting one: what the room cost stays on the harness's
    account."""
    usage = event("usage", HARNESS, run_id="run_1", space_id="spc_1", tokens_in=1, tokens_out=1)
    assert rules.usage_scopes(usage, room_stands=False) == [
        ("harness", "hrn_scout"),
        ("harness_day", "hrn_scout/2026-12-03"),
    ]


@pytest.mark.parametrize(
    ("kind", "card"),
    [
        ("approval.request", "approval"),
        ("approval.resolved", "approval"),
        ("question.ask", "question"),
        ("question.answered", "question"),
    ],
)
def test_an_ask_and_its_answer_name_the_same_card(kind: str, card: str) -> None:
    assert rules.card_kind(event(kind)) == card


def test_an_answer_records_only_what_says_the_answer() -> None:
    resolved = event(
        "approval.resolved", approval_id="apr_1", decision="approve", note="fine",
        run_id="run_1", space_id="spc_1",
    )  # fmt: skip
    assert rules.answer_of(resolved) == {"decision": "approve", "note": "fine"}
    answered = event("question.answered", question_id="q_1", value="b", text=None)
    assert rules.answer_of(answered) == {"value": "b", "text": None}


# --- lanes --------------------------------------------------------------------------------


def test_a_lane_is_folded_from_its_copy_at_home() -> None:
    """ADR 0017: a lane event is logged in both its rooms; the copy in the room the lane
    went to is folded, the other is not, so the lane has one row."""
    home = event("lane.opened", space_id="spc_to", from_space_id="spc_from", to_space_id="spc_to")
    away = event("lane.opened", space_id="spc_from", from_space_id="spc_from", to_space_id="spc_to")
    assert rules.at_home(home)
    assert not rules.at_home(away)


@pytest.mark.parametrize(
    ("kind", "state"),
    [("lane.completed", "completed"), ("lane.failed", "failed"), ("lane.cancelled", "cancelled")],
)
def test_a_lane_s_end_records_how_who_and_when(kind: str, state: str) -> None:
    ended = event(kind, AGENT, lane_id="ln_1", summary="done", cost_usd=0.5)
    assert rules.lane_end_changes(ended) == {
        "state": state,
        "summary": "done",
        "why": None,
        "cost_usd": 0.5,
        "ended_by": "agt_j1",
        "ended_seq": 42,
        "ended_at": datetime(2026, 12, 3, 8, 0, tzinfo=UTC),
    }


# --- what is done to messages, and erasure ------------------------------------------------


def test_hide_and_show_are_one_fold_told_apart_by_type() -> None:
    assert rules.hides(event("message.hidden", message_id="msg_1"))
    assert not rules.hides(event("message.shown", message_id="msg_1"))


def test_pin_and_unpin_are_one_fold_told_apart_by_type() -> None:
    assert rules.pins(event("message.pinned", message_id="msg_1"))
    assert not rules.pins(event("message.unpinned", message_id="msg_1"))


def test_an_erasure_takes_the_room_and_its_threads() -> None:
    """docs/product/spaces.md, Deleting one: a thread goes with its room."""
    erased = event("space.erased", space_id="spc_1", threads=["spc_t1", "spc_t2"])
    assert rules.erased_spaces(erased) == ["spc_1", "spc_t1", "spc_t2"]
    assert rules.erased_spaces(event("space.erased", space_id="spc_1")) == ["spc_1"]
    assert rules.erased_spaces(event("space.erased", space_id="spc_1", threads=None)) == ["spc_1"]


def test_times_are_read_as_utc() -> None:
    assert rules.ts_of(event("x")) == datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
    assert rules.ts_of({"ts": "2026-12-03T08:00:00.250+00:00"}).microsecond == 250000
