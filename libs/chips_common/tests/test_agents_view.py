"""The pre-agents view: what a harness that has not declared ``agents`` is shown.

docs/product/websocket.md, Saying you speak agents: "your own agents are your own id wherever an
id is written, any other agent is a participant of kind harness, and you are never sent
agent.registered, agent.updated, membership.replaced, agent.attached, agent.released,
agent.fork, agent.asked or message.held."
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chips_common.rules import agents_view
from chips_common.rules.agents_view import as_seen_by

pytestmark = pytest.mark.unit

ME = "hrn_jacobian"
MINE = {"agt_j1", "agt_j2"}
OTHER_AGENT = "agt_oc"


def seen(event: dict[str, Any]) -> dict[str, Any] | None:
    return as_seen_by(event, ME, MINE)


@pytest.mark.parametrize(
    "kind",
    [
        "agent.registered",
        "agent.updated",
        "membership.replaced",
        "agent.attached",
        "agent.released",
        "agent.fork",
        "agent.asked",
        "message.held",
    ],
)
def test_agent_events_are_never_sent(kind: str) -> None:
    assert seen({"type": kind, "agent_id": "agt_j1", "harness_id": ME}) is None


def test_an_event_with_no_agent_in_it_is_the_very_same_object() -> None:
    event = {
        "type": "message.post",
        "space_id": "spc_a",
        "actor": {"kind": "person", "id": "usr_arjun"},
        "addressed_to": [ME],
        "text": "hello",
    }
    assert seen(event) is event


def test_own_agents_are_the_harness_itself_wherever_an_id_is_written() -> None:
    event = {
        "type": "message.new",
        "space_id": "spc_a",
        "actor": {"kind": "agent", "id": "agt_j1", "harness_id": ME},
        "addressed_to": ["agt_j1", "agt_j2", "usr_arjun"],
        "mentions": ["agt_j2"],
        "for": ["agt_j1", "agt_j2"],
        "working_turns": [{"agent_id": "agt_j2", "run_id": "run_1"}],
        "from": {"id": "agt_j1", "kind": "agent", "name": "J1", "harness": "Jacobian"},
        "room": {
            "members": [
                {"participant_id": "usr_arjun", "kind": "person", "name": "Arjun"},
                {"participant_id": "agt_j1", "kind": "agent", "name": "J1", "harness": "Jacobian"},
                {"participant_id": "agt_j2", "kind": "agent", "name": "J2", "harness": "Jacobian"},
            ],
            "notes": {"agt_j1": "note one", "agt_j2": "note two"},
        },
    }
    shown = seen(event)
    assert shown is not None
    assert shown["actor"] == {"kind": "harness", "id": ME}
    assert shown["addressed_to"] == [ME, "usr_arjun"]
    assert shown["mentions"] == [ME]
    assert shown["for"] == [ME]
    assert shown["working_turns"] == [{"agent_id": ME, "run_id": "run_1"}]
    assert shown["from"] == {"id": ME, "kind": "harness", "name": "J1"}
    assert shown["room"]["members"] == [
        {"participant_id": "usr_arjun", "kind": "person", "name": "Arjun"},
        {"participant_id": ME, "kind": "harness", "name": "J1"},
    ]
    assert shown["room"]["notes"] == {ME: "note one"}
    # The event as logged is left as it was.
    assert event["actor"]["id"] == "agt_j1"


def test_another_harness_agent_is_a_participant_of_kind_harness() -> None:
    event = {
        "type": "message.post",
        "space_id": "spc_a",
        "actor": {"kind": "agent", "id": OTHER_AGENT, "harness_id": "hrn_openclaw"},
        "text": "hi",
    }
    shown = seen(event)
    assert shown is not None
    assert shown["actor"] == {"kind": "harness", "id": OTHER_AGENT}


def test_own_agents_coming_and_going_is_not_news_the_harness_row_is() -> None:
    for kind in ("membership.added", "membership.removed"):
        assert seen({"type": kind, "space_id": "spc_a", "participant_id": "agt_j1"}) is None
    row = {
        "type": "membership.added",
        "space_id": "spc_a",
        "participant_id": ME,
        "standing": "agents",
    }
    assert seen(row) == {**row, "standing": "member"}
    left = {"type": "membership.removed", "space_id": "spc_a", "participant_id": ME}
    assert seen(left) is left
    other = {"type": "membership.added", "space_id": "spc_a", "participant_id": OTHER_AGENT}
    assert seen(other) is other
    behind = {**row, "participant_id": "hrn_openclaw"}
    assert seen(behind) == {**behind, "standing": "member"}
    gone = {**left, "standing": "agents"}
    assert seen(gone) == left


def test_a_context_line_by_an_own_agent_reads_as_the_harness() -> None:
    event = {
        "lines": [
            {"seq": 4, "kind": "said", "from": {"id": "agt_j2", "kind": "agent", "name": "J2"}},
            {"seq": 5, "kind": "said", "from": {"id": "usr_a", "kind": "person", "name": "A"}},
        ]
    }
    shown = seen(event)
    assert shown is not None
    assert shown["lines"][0]["from"] == {"id": ME, "kind": "harness", "name": "J2"}
    assert shown["lines"][1] is event["lines"][1]


# -- the shortcut: an event the translation cannot change is not walked -------------------

_words = st.sampled_from(
    ["agt_j1", "agt_j2", "agt_oc", ME, "agent", "harness", "person", "kind", "id", "hello"]
)
_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _words, st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(_words, st.text(max_size=6)), inner, max_size=4),
    ),
    max_leaves=20,
)
_bodies = st.dictionaries(st.one_of(_words, st.text(max_size=6)), _json, max_size=6)
_owns = st.sets(st.sampled_from(["agt_j1", "agt_j2", "agt_zz"]), max_size=3)


@given(_bodies, _owns)
def test_the_shortcut_changes_nothing_the_walk_would_change(
    body: dict[str, Any], own: set[str]
) -> None:
    event = {"type": "message.new", **body}
    mine = frozenset(own)
    walked = agents_view._translate(event, ME, dict.fromkeys(mine, ME), {})
    if agents_view.untouched(event, mine):
        assert walked is event
    assert as_seen_by(event, ME, mine) == walked


@given(_bodies, _owns)
def test_the_feed_s_encoding_of_the_frame_decides_as_the_event_s_own(
    body: dict[str, Any], own: set[str]
) -> None:
    event = {"type": "message.new", **body}
    mine = frozenset(own)
    try:
        frame = orjson.dumps({"frame": "event", "event": event}).decode()
    except TypeError:  # what JSON cannot say (an integer past 64 bits) the feed never has
        assume(False)
    assert agents_view.untouched(event, mine, frame) == agents_view.untouched(event, mine)
    assert as_seen_by(event, ME, mine, frame) == as_seen_by(event, ME, mine)


def test_a_harness_event_with_its_room_s_lines_and_no_agent_is_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walks: list[object] = []
    walk = agents_view._translate
    monkeypatch.setattr(agents_view, "_translate", lambda *a: walks.append(a[0]) or walk(*a))
    event = {
        "type": "message.new",
        "actor": {"kind": "person", "id": "usr_arjun"},
        "context": [
            {"actor": {"kind": "person", "id": f"usr_{i}"}, "text": "hi"} for i in range(40)
        ],
    }
    assert seen(event) is event and not walks
    event["context"].append({"actor": {"kind": "agent", "id": "agt_j1", "harness_id": ME}})
    changed = seen(event)
    assert walks and changed is not None and changed["context"][-1]["actor"]["id"] == ME


# --- given agents (docs/adr/0154) ----------------------------------------------------------

SCOUT, SCOUT_GIVEN = "hrn_scout", "agt_scout_here"


def test_another_harness_s_given_agent_reads_as_that_harness() -> None:
    shown = agents_view.stand_ins(ME, MINE, {SCOUT_GIVEN: SCOUT, "agt_j1": ME})
    assert shown == {SCOUT_GIVEN: SCOUT, "agt_j1": ME, "agt_j2": ME}
    said = {
        "type": "message.new",
        "actor": {"kind": "agent", "id": SCOUT_GIVEN, "harness_id": SCOUT},
        "addressed_to": ["agt_j1", OTHER_AGENT],
        "members": [{"participant_id": SCOUT, "kind": "harness"}, {"participant_id": SCOUT_GIVEN}],
    }
    assert as_seen_by(said, ME, shown) == {
        "type": "message.new",
        "actor": {"kind": "harness", "id": SCOUT},
        "addressed_to": [ME, OTHER_AGENT],
        "members": [{"participant_id": SCOUT, "kind": "harness"}],
    }
    # Its coming and going is its harness's row's, which the harness is sent.
    added = {"type": "membership.added", "space_id": "spc_1", "participant_id": SCOUT_GIVEN}
    assert as_seen_by(added, ME, shown) is None


def test_many_stand_ins_decide_on_the_encoding_alike() -> None:
    shown = {f"agt_{i}": f"hrn_{i}" for i in range(50)}
    quiet = {"type": "message.new", "text": "agt_3 is not an id here", "from": "agt_99"}
    assert as_seen_by(quiet, ME, shown) is quiet
    loud = {"type": "message.new", "from": "agt_3"}
    assert as_seen_by(loud, ME, shown) == {"type": "message.new", "from": "hrn_3"}


def test_an_agent_shown_as_its_harness_bears_the_harness_s_name_in_members_lines_and_notes() -> (
    None
):
    shown = agents_view.stand_ins(ME, {"agt_mine"}, {SCOUT_GIVEN: SCOUT})
    names = {ME: "Jade", SCOUT: "Scout"}
    turn = {
        "type": "message.new",
        "from": {"id": "agt_mine", "kind": "agent", "name": "Jade 2"},
        "context": {"lines": [{"from": {"id": SCOUT_GIVEN, "kind": "agent", "name": "Scout 3"}}]},
        "room": {
            "members": [
                {"participant_id": "usr_a", "kind": "person", "name": "Arjun"},
                {
                    "participant_id": SCOUT_GIVEN,
                    "kind": "agent",
                    "name": "Scout 3",
                    "harness": "Scout",
                    "handle": "@Scout3",
                },
                {
                    "participant_id": "agt_mine",
                    "kind": "agent",
                    "name": "Jade 2",
                    "harness": "Jade",
                    "handle": "@Jade2",
                },
            ],
            "notes": {
                "agt_mine": "In this space: Arjun (person), Scout 3 (Scout agent, @Scout3), and "
                "you, Jade 2 (Jade agent, @Jade2). Scout 3 leads this space. Scout 30 stays."
            },
        },
    }
    seen = as_seen_by(turn, ME, shown, names=names)
    assert seen is not None
    assert seen["from"] == {"id": ME, "kind": "harness", "name": "Jade"}
    assert seen["context"]["lines"][0]["from"] == {"id": SCOUT, "kind": "harness", "name": "Scout"}
    assert [(m["participant_id"], m["name"], m.get("handle")) for m in seen["room"]["members"]] == [
        ("usr_a", "Arjun", None),
        (SCOUT, "Scout", "@Scout"),
        (ME, "Jade", "@Jade"),
    ]
    assert seen["room"]["notes"] == {
        ME: "In this space: Arjun (person), Scout (agent, @Scout), and you, Jade (agent, @Jade)."
        " Scout leads this space. Scout 30 stays."
    }
    # Without names, the ids alone are shown as before.
    assert as_seen_by(turn, ME, shown)["room"]["members"][2]["name"] == "Jade 2"  # type: ignore[index]


def test_a_stand_in_s_joined_and_left_lines_are_not_in_a_context() -> None:
    # As its membership events are not sent, the lines they make are not either: the
    # harness's own row (joined before, or staying through an archive) says it all.
    shown = agents_view.stand_ins(ME, MINE, {SCOUT_GIVEN: SCOUT})
    person = {"seq": 3, "kind": "joined", "from": {"id": "usr_a", "kind": "person", "name": "A"}}
    lines = [
        person,
        {"seq": 4, "kind": "left", "from": {"id": "agt_j1", "kind": "agent", "name": "J"}},
        {"seq": 5, "kind": "joined", "from": {"id": SCOUT_GIVEN, "kind": "agent", "name": "S"}},
        {"seq": 6, "kind": "said", "from": {"id": SCOUT_GIVEN, "kind": "agent", "name": "S"}},
    ]
    context = as_seen_by({"type": "message.new", "context": {"lines": lines}}, ME, shown)
    assert context is not None
    assert context["context"]["lines"] == [
        person,
        {"seq": 6, "kind": "said", "from": {"id": SCOUT, "kind": "harness", "name": "S"}},
    ]


# -- skimming: only what holds an agent is walked ----------------------------------------

_people = st.sampled_from(["usr_a", "usr_b", ME, "agt_j1", "agt_j2", OTHER_AGENT, SCOUT_GIVEN])


def _who(pid: str) -> dict[str, Any]:
    kind = "agent" if pid.startswith("agt_") else "harness" if pid == ME else "person"
    found: dict[str, Any] = {"id": pid, "kind": kind, "name": f"Name {pid}"}
    if kind == "agent":
        found["harness_id"] = SCOUT if pid == SCOUT_GIVEN else ME
    return found


@st.composite
def _harness_events(draw: st.DrawFn) -> dict[str, Any]:
    """A harness's message.new as the feed shapes it: the speaker, the room's members and
    notes, and its context's lines (said, joined, left)."""
    members = draw(st.lists(_people, max_size=5, unique=True))
    lines = [
        {
            "seq": i,
            "kind": draw(st.sampled_from(["said", "joined", "left"])),
            "from": _who(draw(_people)),
            "text": draw(st.sampled_from(["hi", "agt_j1", "Name agt_j1 said so"])),
            "addressed_to": draw(st.lists(_people, max_size=2)),
        }
        for i in range(draw(st.integers(0, 6)))
    ]
    return {
        "type": "message.new",
        "actor": {k: v for k, v in _who(draw(_people)).items() if k in ("id", "kind")},
        "from": _who(draw(_people)),
        "addressed_to": draw(st.lists(_people, max_size=3)),
        "context": {"lines": lines, "since_seq": 1},
        "room": {
            "members": [
                {"participant_id": m, **{k: v for k, v in _who(m).items() if k != "id"}}
                | {"handle": f"@N{m}"}
                for m in members
            ],
            "notes": {ME: "In this space: " + ", ".join(f"Name {m}" for m in members)},
        },
    }


@given(_harness_events(), st.booleans())
def test_skimming_gives_what_the_whole_walk_gives(event: dict[str, Any], named: bool) -> None:
    shown = agents_view.stand_ins(ME, MINE, {SCOUT_GIVEN: SCOUT})
    names = {ME: "Jacobian", SCOUT: "Scout"} if named else {}
    whole = agents_view._translate(event, ME, shown, names)
    assert agents_view._translate(event, ME, shown, names, agents_view.SKIM) == whole
    if not agents_view.hidden_from(event, shown):
        assert as_seen_by(event, ME, shown, names=names) == whole


def test_a_room_with_a_given_agent_is_walked_and_its_lines_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[object] = []
    walk = agents_view._translate
    monkeypatch.setattr(agents_view, "_translate", lambda *a: walked.append(a[0]) or walk(*a))
    lines = [{"seq": i, "kind": "said", "from": _who("usr_a"), "text": "hi"} for i in range(40)]
    event = {
        "type": "message.new",
        "from": _who("usr_a"),
        "context": {"lines": lines},
        "room": {"members": [{"participant_id": SCOUT_GIVEN, "kind": "agent", "name": "S"}]},
    }
    shown = agents_view.stand_ins(ME, MINE, {SCOUT_GIVEN: SCOUT})
    changed = as_seen_by(event, ME, shown)
    assert changed is not None
    assert changed["room"]["members"] == [{"participant_id": SCOUT, "kind": "harness", "name": "S"}]
    assert changed["context"] is event["context"]
    assert not any(w is event["context"] or w in lines for w in walked)
    assert len(walked) < 10


# -- a socket's lines translated once per view (Walked) ----------------------------------


def _turn(lines: list[dict[str, Any]], text: str) -> dict[str, Any]:
    return {
        "type": "message.new",
        "text": text,
        "addressed_to": ["agt_j1"],
        "context": {"lines": lines},
    }


def _line(seq: int, to: str = "agt_j1") -> dict[str, Any]:
    return {"seq": seq, "kind": "said", "from": _who("usr_a"), "addressed_to": [to]}


def test_a_line_met_again_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[object] = []
    walk = agents_view._translate
    monkeypatch.setattr(agents_view, "_translate", lambda *a: walked.append(a[0]) or walk(*a))
    lines = [_line(i) for i in range(1, 21)]
    memo = agents_view.Walked()
    first = as_seen_by(_turn(lines[:10], "one"), ME, MINE, walked=memo)
    assert first is not None and first["context"]["lines"][0]["addressed_to"] == [ME]
    walked.clear()
    second = as_seen_by(_turn(lines[5:], "two"), ME, MINE, walked=memo)
    again = [w for w in walked if any(w is line for line in lines[5:10])]
    fresh = [w for w in walked if any(w is line for line in lines[10:])]
    assert again == [] and len(fresh) == 10
    assert second == as_seen_by(_turn(lines[5:], "two"), ME, MINE)
    # The very same translation is handed out for a line met again.
    assert second is not None
    assert second["context"]["lines"][0] is first["context"]["lines"][5]


def test_another_view_translates_afresh() -> None:
    lines = [{**_line(1, SCOUT_GIVEN), "from": _who(SCOUT_GIVEN)}]
    memo = agents_view.Walked()
    shown = agents_view.stand_ins(ME, MINE, {SCOUT_GIVEN: SCOUT})
    named = as_seen_by(_turn(lines, "x"), ME, shown, names={SCOUT: "Scout"}, walked=memo)
    renamed = as_seen_by(_turn(lines, "x"), ME, shown, names={SCOUT: "Scouty"}, walked=memo)
    assert named is not None and renamed is not None
    assert named["context"]["lines"][0]["from"]["name"] == "Scout"
    assert renamed["context"]["lines"][0]["from"]["name"] == "Scouty"
    # Its own agents changed (one released): the line is its own no more.
    mine_now = as_seen_by(_turn([_line(1)], "y"), ME, {"agt_j2"}, walked=memo)
    assert mine_now is not None and mine_now["context"]["lines"][0]["addressed_to"] == ["agt_j1"]


def test_what_is_remembered_is_bounded() -> None:
    memo = agents_view.Walked()
    for start in range(0, 3 * agents_view.Walked.LIMIT, 50):
        as_seen_by(_turn([_line(i) for i in range(start, start + 50)], "t"), ME, MINE, walked=memo)
        assert len(memo.made) <= agents_view.Walked.LIMIT


@given(st.lists(_harness_events(), min_size=1, max_size=4), st.data())
def test_remembered_lines_give_what_walking_them_gives(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    # The events share lines, as a room's deliveries do.
    pool = [line for e in events for line in e["context"]["lines"]]
    shown = agents_view.stand_ins(ME, MINE, {SCOUT_GIVEN: SCOUT})
    names = {ME: "Jacobian", SCOUT: "Scout"}
    memo = agents_view.Walked()
    for event in events:
        if pool:
            event["context"]["lines"] = data.draw(st.lists(st.sampled_from(pool), max_size=6))
        expected = as_seen_by(event, ME, shown, names=names)
        assert as_seen_by(event, ME, shown, names=names, walked=memo) == expected
