"""The projector's rules on events as the log holds them (chips_projector.rules).

``test_rules.py`` states each rule on a hand-made event. Here every rule is run on the
catalogue's own samples (``libs/chips_common/tests/test_catalogue.py``), logged the way the
door logs them: parsed into their model, dumped as JSON without the fields left out, and
given an envelope. So a field the catalogue renames, drops or stops sending is a failure
here, not a row the read models quietly lose. The edge cases (an optional field missing, an
empty face, a copy of a lane event away from home, a post in a thread) and a few properties
(hypothesis) follow each rule.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.events import CATALOGUE, canonical, parse_event
from chips_common.events.messages import CARD_FIELDS
from chips_common.events.wire import EventJson, event_json
from chips_common.ids import message_id_for
from chips_projector import rules
from chips_projector.runs import RUN_APPLY
from chips_projector.store import _NO_END, APPLY, _wanted, posts_only

pytestmark = pytest.mark.unit


def _catalogue_samples() -> ModuleType:
    path = Path(__file__).parents[3] / "libs/chips_common/tests/test_catalogue.py"
    spec = importlib.util.spec_from_file_location("catalogue_samples", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CAT = _catalogue_samples()
SAMPLES: dict[str, dict[str, Any]] = CAT.SAMPLES
MORE: dict[str, list[dict[str, Any]]] = CAT.MORE_SAMPLES
USR, HRN, AGT, SPC, SPC2, MSG, RUN = CAT.USR, CAT.HRN, CAT.AGT, CAT.SPC, CAT.SPC2, CAT.MSG, CAT.RUN

TS = "2026-09-02T14:20:02.004000Z"
WHEN = datetime(2026, 9, 2, 14, 20, 2, 4000, tzinfo=UTC)
PERSON = {"kind": "person", "id": USR}
HARNESS = {"kind": "harness", "id": HRN}
AGENT = {"kind": "agent", "id": AGT, "harness_id": HRN}
EVENT_ID = "evt_01J9ZQ5V1M3X8K2R7T4W6Y0EVT"


def logged(
    body: dict[str, Any],
    actor: dict[str, str] | None = None,
    /,
    seq: int = 7,
    ts: str = TS,
    **changes: Any,
) -> EventJson:
    """``body`` (with ``changes``; a change to None leaves the field out) as the door logs
    it: validated by its model, dumped without its absent fields, in its envelope."""
    given_ = {k: v for k, v in {**body, **changes}.items() if v is not None}
    fields = parse_event(given_).model_dump(mode="json", exclude_none=True)
    event: dict[str, object] = {
        "v": 1,
        "id": EVENT_ID,
        "seq": seq,
        "ts": ts,
        "workspace_id": "ws_01J9ZQ5V1M3X8K2R7T4W6Y0WSP",
        "actor": actor or PERSON,
        **fields,
    }
    if fields["type"] == "message.post":
        event["message_id"] = message_id_for(EVENT_ID)
    return event_json(canonical(event))


def sample(type_: str, actor: dict[str, str] | None = None, /, **changes: Any) -> EventJson:
    return logged(SAMPLES[type_], actor, **changes)


FOLDED = sorted(set(APPLY) | set(RUN_APPLY))


# --- what the projector folds -------------------------------------------------------------


@pytest.mark.parametrize("name", FOLDED)
def test_every_folded_type_has_a_sample_the_door_would_log(name: str) -> None:
    assert sample(name)["type"] == name


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_batch_folds_on_psycopg_unless_it_holds_a_room_operation(name: str) -> None:
    """docs/adr/0120: one event the engine must fold sends the whole batch to it."""
    post = (logged(SAMPLES["message.post"]), None)
    batch = [post, (sample(name), None), post]
    assert posts_only(batch) is (name == "message.post" or name not in FOLDED)


def test_the_read_asks_for_each_workspace_once_in_id_order() -> None:
    """Checkpoints are locked in the order of their ids, so two folds never wait on each
    other in a circle; no ``upto`` reads to the head."""
    wanted = _wanted({"ws_b": 9, "ws_a": None}, 1000)
    assert orjson.loads(wanted["wanted"]) == [
        {"w": "ws_a", "upto": _NO_END},
        {"w": "ws_b", "upto": 9},
    ]
    assert wanted["limit"] == 1000
    assert _NO_END == 2**63 - 1  # Postgres's bigint holds it


# --- rooms --------------------------------------------------------------------------------


def test_a_room_a_harness_opens_for_its_owner_from_the_catalogue() -> None:
    """The sample: Scout opens a direct room for its owner, with itself among the members.
    Each row is inserted with ``on conflict do nothing``: the first standing stands."""
    members = rules.first_members(sample("space.created", HARNESS))
    assert members[0] == (USR, "owner")
    first: dict[str, str] = {}
    for who, standing in members:
        first.setdefault(who, standing)
    assert first == {USR: "owner", HRN: "member"}


def test_an_owner_listed_among_the_members_stays_the_owner() -> None:
    created = sample("space.created", PERSON, kind="group", members=[USR, HRN], opened_for=None)
    members = rules.first_members(created)
    assert members[0] == (USR, "owner")
    assert dict(reversed(members))[USR] == "owner"


def test_a_room_opened_with_nobody_holds_its_opener_alone() -> None:
    created = sample("space.created", PERSON, kind="group", members=None, opened_for=None)
    assert not created.get("members") and "opened_for" not in created
    assert rules.first_members(created) == [(USR, "owner")]


ids = st.from_regex(r"(usr|hrn|agt)_[a-z0-9]{1,4}", fullmatch=True)


@given(actor=ids, opened_for=st.none() | ids, members=st.lists(ids, max_size=5))
def test_a_new_room_has_one_owner_and_everybody_named_is_in_it(
    actor: str, opened_for: str | None, members: list[str]
) -> None:
    event: dict[str, Any] = {"actor": {"kind": "person", "id": actor}, "members": members}
    if opened_for is not None:
        event["opened_for"] = opened_for
    rows = rules.first_members(event_json(event))
    first: dict[str, str] = {}
    for who, standing in rows:
        first.setdefault(who, standing)
    owner = opened_for or actor
    assert [who for who, standing in first.items() if standing == "owner"] == [owner]
    assert set(first) == {actor, owner, *members}
    assert all(standing in ("owner", "member") for _, standing in rows)


def test_a_retitle_and_archive_from_the_catalogue() -> None:
    changes = rules.space_changes(sample("space.updated", HARNESS, seq=12))
    assert changes == {
        "last_seq": 12,
        "title": "India trip 2026",
        "state": "closed",
        "moved_by": HRN,
        "moved_seq": 12,
    }


def test_an_unarchive_alone_leaves_the_title() -> None:
    changes = rules.space_changes(sample("space.updated", title=None, state="open"))
    assert "title" not in changes
    assert changes["state"] == "open" and changes["moved_by"] == USR


@given(
    title=st.none() | st.text(max_size=20),
    state=st.none() | st.sampled_from(["open", "closed"]),
    seq=st.integers(1, 2**40),
)
def test_a_space_update_changes_only_what_it_gives(
    title: str | None, state: str | None, seq: int
) -> None:
    event: dict[str, Any] = {"seq": seq, "actor": PERSON}
    if title is not None:
        event["title"] = title
    if state is not None:
        event["state"] = state
    changes = rules.space_changes(event_json(event))
    assert changes["last_seq"] == seq
    assert ("title" in changes) is (title is not None)
    assert ("moved_by" in changes) is ("moved_seq" in changes) is (state is not None)
    assert changes.get("title") == title and changes.get("state") == state


def test_the_room_an_erasure_takes_from_the_catalogue() -> None:
    erased = sample("space.erased")
    assert rules.erased_spaces(erased) == [SPC, "spc_01J8Z3THREAD0000000000000"]
    assert rules.erased_spaces(sample("space.erased", threads=None)) == [SPC]


@pytest.mark.parametrize(
    ("replaced", "behind"), [(HRN, True), ("agt_01J9ZQ5V1M3X8K2R7T4W6Y0OLD", False)]
)
def test_a_replacement_from_the_catalogue(replaced: str, behind: bool) -> None:
    event = sample("membership.replaced", replaced=replaced)
    assert rules.moves_behind_agents(event) is behind


@pytest.mark.parametrize(("standing", "line"), [("guest", True), ("agents", False)])
def test_a_membership_from_the_catalogue_draws_a_line_by_its_standing(
    standing: str, line: bool
) -> None:
    added = sample("membership.added", standing=standing)
    assert rules.draws_a_line(added.get("standing", "member")) is line


# --- agents -------------------------------------------------------------------------------


def test_a_fork_s_row_keeps_every_fact_its_registration_gave() -> None:
    """The sample is a fork made for an ask, with a face: all of it is kept, and a false
    ``main`` is a fact like any other (only what was not given is left out)."""
    facts = rules.agent_facts(sample("agent.registered", HARNESS))
    assert facts == {
        "key": "space-7",
        "state": "active",
        "main": False,
        "forked_from": AGT,
        "made_for": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0ASK",
        "face": "🦊",
    }


def test_a_main_agent_without_a_face_keeps_no_face() -> None:
    registered = sample(
        "agent.registered", HARNESS, main=True, forked_from=None, made_for=None, fork_of=None,
        face=None,
    )  # fmt: skip
    assert rules.agent_facts(registered) == {"key": "space-7", "state": "active", "main": True}


def test_the_catalogue_s_update_renames_archives_and_pictures() -> None:
    facts = rules.agent_facts(sample("agent.registered", HARNESS))
    changes = rules.agent_changes(facts, sample("agent.updated", PERSON))
    assert changes["name"] == "Openings Prep"
    assert changes["agent"] == {
        **facts,
        "state": "archived",
        "name_by": USR,
        "face": "att_01J9ZQ5V1M3X8K2R7T4W6Y0FACE",
    }


def test_a_rename_by_the_harness_keeps_who_named_it_before() -> None:
    """A person's rename holds over the harness's: a later rename without ``name_by``
    leaves the one recorded."""
    facts = {"key": "k1", "state": "active", "name_by": USR}
    renamed = sample("agent.updated", HARNESS, state=None, name_by=None, face=None, name="Oc")
    assert rules.agent_changes(facts, renamed) == {"name": "Oc"}


def test_an_empty_face_on_an_agent_without_one_changes_nothing() -> None:
    facts = {"key": "k1", "state": "active"}
    bare = sample("agent.updated", name=None, state=None, name_by=None, face="")
    assert rules.agent_changes(facts, bare) == {}
    assert rules.agent_changes(None, bare) == {}


def test_the_facts_given_are_not_changed_in_place() -> None:
    facts = {"key": "k1", "state": "active", "face": "🦊"}
    rules.agent_changes(facts, sample("agent.updated", face=""))
    assert facts == {"key": "k1", "state": "active", "face": "🦊"}


faces = st.none() | st.just("") | st.sampled_from(["🦊", "att_1", "att_2"])
fact_values = st.dictionaries(
    st.sampled_from(["key", "state", "main", "name_by", "face"]),
    st.sampled_from(["k1", "active", "archived", "usr_1", "🦊", True]),
    max_size=5,
)


@given(
    facts=st.none() | fact_values,
    state=st.none() | st.sampled_from(["active", "archived"]),
    name_by=st.none() | st.sampled_from(["usr_1", "usr_2"]),
    face=faces,
)
def test_an_agent_update_folded_twice_changes_nothing_the_second_time(
    facts: dict[str, Any] | None, state: str | None, name_by: str | None, face: str | None
) -> None:
    """The facts an update leaves are a fixed point of it: a message delivered twice, or
    folded again, writes nothing more; and what it says is what the facts then say."""
    event: dict[str, Any] = {"type": "agent.updated", "agent_id": "agt_1"}
    for name, value in (("state", state), ("name_by", name_by), ("face", face)):
        if value is not None:
            event[name] = value
    once = rules.agent_changes(facts, event_json(event))
    after = once.get("agent", facts)
    assert "agent" not in rules.agent_changes(after, event_json(event))
    now = dict(after or {})
    if state is not None:
        assert now["state"] == state
    if name_by is not None:
        assert now["name_by"] == name_by
    if face == "":
        assert "face" not in now
    elif face is not None:
        assert now["face"] == face


# --- posts --------------------------------------------------------------------------------

POSTS = [SAMPLES["message.post"], *MORE["message.post"]]
HEADLINE = {
    "status": "verb",
    "approval": "action",
    "question": "prompt",
    "artifact": "name",
    "task": "goal",
    "handoff": "summary",
    "checkpoint": "milestone",
    "summary": "outcome",
}


@pytest.mark.parametrize("body", POSTS, ids=lambda b: str(b.get("kind")))
def test_every_catalogue_post_has_a_row_the_flush_can_send(body: dict[str, Any]) -> None:
    """The fold sends its rows to Postgres as one JSON document: each row is JSON, and
    says the post's words, its card (or null) and its run."""
    post = logged(body, AGENT, seq=9)
    row = rules.post_row(post)
    assert orjson.loads(orjson.dumps(row)) == row
    assert row["id"] == post["message_id"] and row["seq"] == 9 and row["author_id"] == AGT
    assert row["ts"] == TS and row["space_id"] == SPC
    kind = body["kind"]
    assert row["kind"] == kind
    if kind in CARD_FIELDS:
        assert row["card"] == post[kind]  # type: ignore[literal-required]
        assert row["text"] == str(body[kind].get(HEADLINE.get(kind, ""), ""))
    else:
        assert row["card"] is None
        assert row["text"] == body.get("text", "")
    assert row["run_id"] == body.get("run_id")
    assert row["reply_to"] == body.get("reply_to")


def test_a_receipt_has_no_headline_and_keeps_its_card() -> None:
    receipt = next(b for b in POSTS if b["kind"] == "receipt")
    row = rules.post_row(logged(receipt))
    assert row["text"] == "" and row["card"] == receipt["receipt"]


def test_a_file_posted_without_words_has_an_empty_line() -> None:
    files = next(b for b in POSTS if "attachments" in b)
    row = rules.post_row(logged(files))
    assert row["text"] == "" and row["kind"] == "text" and row["card"] is None


def test_a_post_with_no_kind_is_a_text() -> None:
    post = logged(SAMPLES["message.post"])
    bare = event_json({k: v for k, v in post.items() if k != "kind"})
    assert rules.post_row(bare)["kind"] == "text"


def test_a_post_in_a_thread_is_a_row_of_the_thread() -> None:
    """A message in a thread is folded into the thread's own room; the thread's room is
    brought forward by the flush, not by the row."""
    thread = "spc_01J8Z3THREAD0000000000000"
    row = rules.post_row(sample("message.post", space_id=thread, reply_to=None))
    assert row["space_id"] == thread and row["reply_to"] is None


def test_a_post_s_author_is_whoever_logged_it_not_its_harness() -> None:
    assert rules.post_row(sample("message.post", AGENT))["author_id"] == AGT
    assert rules.harness_of(sample("message.post", AGENT)) == HRN
    assert rules.harness_of(sample("message.post", PERSON)) == USR


# --- what is done to messages -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hidden", "pinned"),
    [
        ("message.hidden", True, None),
        ("message.shown", False, None),
        ("message.pinned", None, True),
        ("message.unpinned", None, False),
    ],
)
def test_the_catalogue_s_hides_and_pins(
    name: str, hidden: bool | None, pinned: bool | None
) -> None:
    event = sample(name)
    if hidden is not None:
        assert rules.hides(event) is hidden
    if pinned is not None:
        assert rules.pins(event) is pinned


# --- runs ---------------------------------------------------------------------------------


def test_a_run_s_harness_from_the_catalogue() -> None:
    assert rules.harness_of(sample("run.started", AGENT)) == HRN
    assert rules.harness_of(sample("run.started", HARNESS)) == HRN


def test_a_pause_records_no_why() -> None:
    """``rm_runs`` has no column for why a run paused: the pause changes the state alone."""
    paused = sample("run.paused", HARNESS)
    assert paused["why"] == "approval"
    assert rules.run_state_changes(paused) == {"state": "paused"}
    assert rules.run_state_changes(sample("run.resumed", HARNESS)) == {"state": "running"}


@pytest.mark.parametrize(
    ("name", "state", "said"),
    [
        ("run.completed", "completed", {"summary": "Sent"}),
        ("run.failed", "failed", {"why": "timed out"}),
        ("run.cancel", "cancelled", {"why": "/stop"}),
    ],
)
def test_the_catalogue_s_ends(name: str, state: str, said: dict[str, str]) -> None:
    assert rules.run_state_changes(sample(name, HARNESS, seq=30)) == {
        "state": state,
        "ended_seq": 30,
        "ended_at": WHEN,
        **said,
    }


def test_a_completion_that_says_nothing_writes_none() -> None:
    """A run completed without a summary writes none over whatever the row had."""
    ended = rules.run_state_changes(sample("run.completed", HARNESS, summary=None))
    assert "summary" in ended and ended["summary"] is None and "why" not in ended


def test_a_step_that_gives_its_title_and_summary_replaces_both() -> None:
    assert rules.step_replaces(sample("step.log", HARNESS)) == [
        "status",
        "last_seq",
        "title",
        "summary",
    ]
    again = sample("step.log", HARNESS, title=None, summary=None, status="started")
    assert rules.step_replaces(again) == ["status", "last_seq"]


def test_the_catalogue_s_usage() -> None:
    assert rules.usage_of(sample("usage", HARNESS)) == {
        "tokens_in": 1200,
        "tokens_out": 300,
        "cost_usd": 0.42,
        "uncosted": 0,
    }


def test_a_usage_logged_without_a_cost_is_uncosted() -> None:
    """The door leaves a cost it was not given out of the event: absent is unknown."""
    usage = sample("usage", HARNESS, cost_usd=None)
    assert "cost_usd" not in usage
    assert rules.usage_of(usage) == {
        "tokens_in": 1200,
        "tokens_out": 300,
        "cost_usd": 0,
        "uncosted": 1,
    }


@given(
    costs=st.lists(
        st.none() | st.floats(0, 10, allow_nan=False, allow_infinity=False), max_size=30
    ),
)
def test_usage_adds_up_to_what_was_priced_and_how_many_were_not(costs: list[float | None]) -> None:
    """Summed as ``rm_usage`` sums them: the cost is the priced costs' sum, and the
    uncosted count is how many reports Chips could not price."""
    total, uncosted = 0.0, 0
    for cost in costs:
        event: dict[str, Any] = {"tokens_in": 1, "tokens_out": 1}
        if cost is not None:
            event["cost_usd"] = cost
        counts = rules.usage_of(event_json(event))
        total += counts["cost_usd"]
        uncosted += counts["uncosted"]
    assert uncosted == costs.count(None)
    assert total == pytest.approx(sum(c for c in costs if c is not None))


@given(moment=st.datetimes(datetime(2020, 1, 1), datetime(2030, 1, 1)))
def test_usage_counts_on_the_utc_day_it_was_logged(moment: datetime) -> None:
    """The door writes ``ts`` in UTC with a Z (chips_common.clock.iso): the harness's day
    is that UTC day, even a microsecond before midnight."""
    at = moment.replace(tzinfo=UTC)
    ts = at.isoformat().replace("+00:00", "Z")
    usage = sample("usage", AGENT, ts=ts)
    scopes = dict(rules.usage_scopes(usage, room_stands=True))
    assert scopes == {
        "space": SPC,
        "harness": HRN,
        "harness_day": f"{HRN}/{at.date().isoformat()}",
    }
    assert rules.ts_of(usage) == at


def test_the_last_microsecond_of_a_day_is_that_day() -> None:
    last = datetime(2026, 12, 3, tzinfo=UTC) + timedelta(days=1, microseconds=-1)
    usage = sample("usage", HARNESS, ts=last.isoformat().replace("+00:00", "Z"))
    assert ("harness_day", f"{HRN}/2026-12-03") in rules.usage_scopes(usage, room_stands=False)


# --- approvals and questions --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "card"),
    [
        ("approval.request", "approval"),
        ("approval.resolved", "approval"),
        ("question.ask", "question"),
        ("question.answered", "question"),
        ("question.expired", "question"),
    ],
)
def test_each_ask_and_answer_names_a_card_it_carries_the_id_of(name: str, card: str) -> None:
    event = sample(name, HARNESS)
    assert rules.card_kind(event) == card
    assert f"{card}_id" in event


def test_an_edit_approved_records_the_edit_and_nothing_of_the_envelope() -> None:
    """The sample: approved with an edit and a note; its run, room and idempotency key are
    not the answer."""
    assert rules.answer_of(sample("approval.resolved", PERSON)) == {
        "decision": "edit",
        "edited": "rm -rf build/tmp",
        "note": "only tmp",
    }


def test_the_dial_s_own_decision_records_its_rule_and_autonomy() -> None:
    """ADR 0130: approved by the dial, by system; what it was bound to is not the answer."""
    answer = rules.answer_of(logged(MORE["approval.resolved"][0], {"kind": "system", "id": "sys"}))
    assert answer == {
        "decision": "approve",
        "autonomy": "L2",
        "rule": {"action": "jacobian.shell.execute", "args": "ls *", "effect": "allow"},
    }


def test_several_choices_are_recorded_in_the_order_asked() -> None:
    answer = rules.answer_of(logged(MORE["question.answered"][0]))
    assert answer == {"values": ["acme", "globex"]}


def test_a_question_answered_from_the_catalogue() -> None:
    assert rules.answer_of(sample("question.answered")) == {"value": "acme", "text": "Acme"}


def test_an_expired_question_says_so_and_what_was_taken() -> None:
    """ADR 0131: the card says it expired, and the default taken."""
    assert rules.answer_of(sample("question.expired", {"kind": "system", "id": "sys"})) == {
        "value": "acme",
        "default_taken": True,
        "note": "Nobody answered in time, so the default was taken: Acme.",
        "expired": True,
    }


def test_an_expiry_with_no_default_still_says_it_expired() -> None:
    bare = sample("question.expired", value=None, default_taken=None, note=None)
    assert rules.answer_of(bare) == {"expired": True}


def test_only_an_expiry_says_expired() -> None:
    for name in ("question.answered", "approval.resolved"):
        assert "expired" not in rules.answer_of(sample(name))


# --- lanes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("lane.opened", True),
        ("lane.completed", False),
        ("lane.failed", True),
        ("lane.cancelled", True),
    ],
)
def test_only_the_copy_in_the_room_a_lane_went_to_is_folded(name: str, home: bool) -> None:
    """The catalogue's ``lane.completed`` is the copy logged in the room it came from."""
    event = sample(name, AGENT)
    assert rules.at_home(event) is home
    if not home:
        assert rules.at_home(sample(name, AGENT, space_id=SPC2))


def test_a_lane_that_failed_records_why_and_no_cost() -> None:
    assert rules.lane_end_changes(sample("lane.failed", AGENT, seq=50)) == {
        "state": "failed",
        "summary": None,
        "why": "no carrier answered",
        "cost_usd": None,
        "ended_by": AGT,
        "ended_seq": 50,
        "ended_at": WHEN,
    }


def test_a_lane_completed_records_its_summary_and_cost() -> None:
    ended = rules.lane_end_changes(sample("lane.completed", AGENT, space_id=SPC2))
    assert ended["state"] == "completed"
    assert ended["summary"] == "DHL at $31" and ended["cost_usd"] == 0.12
    assert ended["why"] is None


def test_a_cancelled_lane_says_who_cancelled_it() -> None:
    ended = rules.lane_end_changes(sample("lane.cancelled", PERSON))
    assert ended["state"] == "cancelled" and ended["ended_by"] == USR
    assert ended["why"] == "not needed"


def test_every_lane_end_the_fold_takes_has_a_state() -> None:
    ends = [name for name, apply in RUN_APPLY.items() if apply.__name__ == "apply_lane_ended"]
    assert sorted(ends) == sorted(rules.LANE_ENDED)
    states = [n for n, apply in RUN_APPLY.items() if apply.__name__ == "apply_state"]
    assert set(rules.ENDED) <= set(states)
