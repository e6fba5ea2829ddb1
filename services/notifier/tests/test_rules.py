"""Who is notified of what, and what marks it done (chips_notifier.rules; docs/adr/0132)."""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.ids import message_id_for
from chips_common.rules.deciders import approval_deciders, may_decide
from chips_notifier import rules

pytestmark = pytest.mark.unit

OWNER, ANA, BEN, OUT = "usr_owner", "usr_ana", "usr_ben", "usr_out"
HARNESS = "hrn_jacobian"
ROOM = rules.Room("spc_1", "spc_1", "Launch", "group", frozenset({OWNER, ANA, BEN}))
NAMES = {HARNESS: "Jacobian", ANA: "Ana"}
EVENT_ID = "evt_01JAAAAAAAAAAAAAAAAAAAAAAA"


def event(type_: str, actor: str = HARNESS, **fields: Any) -> dict[str, Any]:
    kind = "harness" if actor.startswith("hrn_") else "person"
    return {
        "id": EVENT_ID,
        "seq": 7,
        "ts": "2026-12-04T05:00:00Z",
        "workspace_id": "wsp_1",
        "actor": {"kind": kind, "id": actor},
        "type": type_,
        "space_id": "spc_1",
        **fields,
    }


def told(found: list[rules.Notice]) -> dict[str, str]:
    return {n.participant_id: n.kind for n in found}


def test_an_approval_tells_the_owner_and_the_people_it_names_in_the_room() -> None:
    asked = event(
        "approval.request",
        approval_id="apv_1",
        run_id="run_1",
        action="shell",
        answerers=[BEN, OUT],
    )
    found = rules.notices(asked, ROOM, OWNER, NAMES)
    assert told(found) == {OWNER: "approval", BEN: "approval"}  # OUT is not in the room
    assert all(n.ref_id == "apv_1" and n.run_id == "run_1" and not n.sole for n in found)
    assert "Jacobian" in found[0].title and "Launch" in found[0].title


def test_an_approval_only_the_owner_decides_is_theirs_alone() -> None:
    asked = event("approval.request", approval_id="apv_1", run_id="run_1", action="shell")
    (only,) = rules.notices(asked, ROOM, OWNER, NAMES)
    assert only.participant_id == OWNER and only.sole


def test_the_notifier_tells_exactly_whom_the_door_lets_decide() -> None:
    for person in (OWNER, ANA, BEN, OUT):
        assert may_decide(person, OWNER, [BEN]) == (person in approval_deciders(OWNER, [BEN]))
    assert approval_deciders(OWNER, [BEN, OWNER]) == [OWNER, BEN]


def test_a_question_tells_everyone_in_the_room_but_whoever_asked() -> None:
    asked = event("question.ask", actor=ANA, question_id="q_1", run_id="run_1", prompt="Ship it?")
    found = rules.notices(asked, ROOM, None, NAMES)
    assert told(found) == {OWNER: "question", BEN: "question"}
    alone = rules.Room("spc_1", "spc_1", "Launch", "group", frozenset({OWNER}))
    (only,) = rules.notices(event("question.ask", question_id="q_1", run_id="r", prompt="?"), alone)
    assert only.sole and only.body == "?"


def test_a_message_is_one_notice_per_person_handoff_first() -> None:
    post = event(
        "message.post",
        actor=ANA,
        kind="handoff",
        handoff={"recipient": BEN, "summary": "Carry on with the launch"},
        mentions=[BEN, OWNER, OUT],
    )
    found = rules.notices(post, ROOM, None, NAMES)
    assert told(found) == {BEN: "handoff", OWNER: "mention"}
    assert all(n.ref_id == message_id_for(EVENT_ID) for n in found)


def test_nobody_is_told_of_their_own_words_nor_outside_the_room() -> None:
    post = event("message.post", actor=ANA, kind="text", text="@ana @out hi", mentions=[ANA, OUT])
    assert rules.notices(post, ROOM, None, NAMES) == []


def test_a_direct_room_tells_the_other_person_and_a_held_message_nobody() -> None:
    direct = rules.Room("spc_d", "spc_d", "a direct conversation", "direct", frozenset({ANA, BEN}))
    post = event("message.post", actor=ANA, kind="text", text="lunch?")
    (only,) = rules.notices(post, direct, None, NAMES)
    assert (only.participant_id, only.kind, only.body) == (BEN, "direct", "lunch?")
    assert rules.notices({**post, "held": True}, direct, None, NAMES) == []


def test_a_budget_warning_tells_everyone_in_the_room() -> None:
    warned = event(
        "budget.warning",
        actor="system",
        budget={"limit_usd": 3.0, "spent_usd": 3.1},
        threshold=100,
        action="pause",
    )
    found = rules.notices(warned, ROOM, None, NAMES)
    assert told(found) == {OWNER: "budget", ANA: "budget", BEN: "budget"}
    assert "held" in found[0].title and "$3.10 of $3.00" in found[0].body


def test_what_marks_done() -> None:
    assert rules.settles(event("approval.resolved", approval_id="apv_1", decision="deny")) == (
        rules.Settle("answered", ref_id="apv_1")
    )
    assert rules.settles(event("question.answered", question_id="q_1", value="y")) == (
        rules.Settle("answered", ref_id="q_1")
    )
    assert rules.settles(event("question.expired", question_id="q_1")) == (
        rules.Settle("expired", ref_id="q_1")
    )
    assert rules.settles(event("message.deleted", message_id="msg_1")) == (
        rules.Settle("withdrawn", ref_id="msg_1")
    )
    for end in ("run.completed", "run.failed", "run.cancel"):
        assert rules.settles(event(end, run_id="run_1")) == rules.Settle(
            "run_ended", run_id="run_1"
        )
    assert rules.settles(event("message.post", kind="text", text="hi")) is None


def test_ids_are_the_same_for_the_same_event_and_person_and_sort_as_the_log() -> None:
    a = rules.notification_id("evt_01JAAAAAAAAAAAAAAAAAAAAAAA", ANA)
    assert a == rules.notification_id("evt_01JAAAAAAAAAAAAAAAAAAAAAAA", ANA)
    assert a != rules.notification_id("evt_01JAAAAAAAAAAAAAAAAAAAAAAA", BEN)
    assert a < rules.notification_id("evt_01JBAAAAAAAAAAAAAAAAAAAAAA", ANA)
    assert a.startswith("ntf_")


# The early filter (``rules.may_act``): what the consumer acks without a transaction.

DIRECT = rules.Room("spc_1", "spc_1", "Ana", "direct", frozenset({ANA, BEN}))
THREAD = rules.Room("spc_1", "spc_0", "a thread in Launch", "thread", frozenset({OWNER, ANA}))
KINDS_OF = {"group": ROOM, "thread": THREAD, "direct": DIRECT}

SAMPLES = [
    event("message.post", actor=ANA, text="plain words"),
    event("message.post", actor=ANA, text="hi @ben", mentions=[BEN]),
    event("message.post", actor=ANA, text="yours", handoff={"recipient": BEN, "summary": "s"}),
    event("message.post", actor=ANA, text="held", held=True, mentions=[BEN]),
    event("approval.request", action="deploy", answerers=[ANA]),
    event("question.ask", prompt="which?"),
    event("budget.warning", budget={"spent_usd": 8, "limit_usd": 10}),
    event("approval.resolved", approval_id="apr_1"),
    event("message.deleted", message_id="msg_1"),
    event("run.completed", run_id="run_1"),
    event("message.edited", text="again", mentions=[BEN]),
    event("space.created", kind="direct"),
    event("participant.joined"),
    event("message.post", actor=ANA, text="@Jacobian go", mentions=[HARNESS, "agt_1"]),
    event("message.post", actor=ANA, text="yours", handoff={"recipient": HARNESS}),
    event("message.post", actor=ANA, text="@Jacobian @Ben", mentions=[HARNESS, BEN]),
    event("message.post", actor=HARNESS, text="done"),
    event("message.post", actor=BEN, text="hello"),
]


@pytest.mark.parametrize(
    ("sample", "kind", "may"),
    [
        (SAMPLES[0], "group", False),  # names nobody, not a direct room
        (SAMPLES[0], "thread", False),
        (SAMPLES[0], "direct", True),
        (SAMPLES[0], None, True),  # the space's kind not known yet: it may
        (SAMPLES[1], "group", True),
        (SAMPLES[2], "group", True),
        (SAMPLES[3], "direct", False),  # held: tells nobody
        (SAMPLES[4], "group", True),
        (SAMPLES[5], "group", True),
        (SAMPLES[6], "group", True),
        (SAMPLES[7], "group", True),
        (SAMPLES[8], "group", True),
        (SAMPLES[9], "group", True),
        (SAMPLES[10], None, False),  # neither notifies nor settles
        (SAMPLES[11], None, False),
        (SAMPLES[12], None, False),
        (SAMPLES[13], "group", False),  # names harnesses and agents only: never told
        (SAMPLES[13], "direct", True),
        (SAMPLES[14], "thread", False),
        (SAMPLES[15], "group", True),  # and a person
    ],
)
def test_the_early_filter_decides_from_the_type_a_few_fields_and_the_spaces_kind(
    sample: dict[str, Any], kind: str | None, may: bool
) -> None:
    assert rules.may_act(sample, kind) is may


def test_in_a_direct_space_it_asks_who_else_is_in_it_when_that_is_known() -> None:
    mine = event("message.post", actor=ANA, text="to my harness")
    assert rules.may_act(mine, "direct", frozenset({ANA})) is False  # nobody else to tell
    assert rules.may_act(mine, "direct", frozenset({ANA, BEN})) is True
    assert rules.may_act(mine, "direct", None) is True  # not known: it may
    theirs = event("message.post", actor=HARNESS, text="done")
    assert rules.may_act(theirs, "direct", frozenset({ANA})) is True
    assert rules.may_act(theirs, "group", frozenset({ANA})) is False


@pytest.mark.parametrize("kind", sorted(KINDS_OF))
@pytest.mark.parametrize("sample", SAMPLES)
def test_what_the_early_filter_passes_over_makes_and_settles_nothing(
    sample: dict[str, Any], kind: str
) -> None:
    room = KINDS_OF[kind]
    if rules.may_act(sample, kind, room.people):
        return
    assert rules.notices(sample, room, OWNER, NAMES) == []
    assert rules.settles(sample) is None


def test_an_agent_s_approval_is_decided_by_its_harness_s_owner() -> None:
    # The door decides by the card's harness (docs/adr/0154: a harness speaking as
    # itself in a room with its given agent is logged as that agent).
    agent = {"actor": {"kind": "agent", "id": "agt_1", "harness_id": "hrn_1"}}
    assert rules.harness_of_actor(agent) == "hrn_1"
    assert rules.harness_of_actor({"actor": {"kind": "harness", "id": "hrn_1"}}) == "hrn_1"
