"""Who is in the room, and the note for each harness taking a turn (rules/room.py).

docs/product/websocket.md, Who is in the room: "People come first, then agents, each by name … A
member no handle reaches, such as a one-letter name, has no handle. With no other agent in
the room, the rules are only “Everyone here reads what you write.”" The product's sentences are
reference, and Chips words its own: these tests check what a note says, not its wording.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.rules.handles import Member
from chips_common.rules.room import note_for, ordered, room_for, room_members, rules_for

pytestmark = pytest.mark.unit

ARJUN = Member("usr_arjun", "person", "Arjun")
BEA = Member("usr_bea", "person", "bea")
J = Member("usr_j", "person", "J")
ASCII_ART = Member("hrn_ascii", "harness", "ASCII Art")
OPENCLAW = Member("hrn_openclaw", "harness", "OpenClaw")
OPENCLAW_2 = Member("hrn_openclaw2", "harness", "OpenClaw 2")
JACOBIAN = Member("hrn_jacobian", "harness", "Jacobian · mini")
ROOM = [OPENCLAW_2, BEA, ASCII_ART, ARJUN, OPENCLAW]

READS = re.compile(r"\bEveryone\b.*\bread(s)?\b.*\bwhat you write\b", re.IGNORECASE)


def says_reading(rules: str) -> bool:
    return READS.search(rules) is not None


# room_members


def test_people_come_first_then_harnesses_each_by_name_case_aside() -> None:
    """docs/product/websocket.md, Who is in the room: "People come first, then agents, each by
    name"."""
    names = [m["name"] for m in room_members(ROOM)]
    assert names == ["Arjun", "bea", "ASCII Art", "OpenClaw", "OpenClaw 2"]
    assert [m.id for m in ordered(ROOM)] == [m["participant_id"] for m in room_members(ROOM)]


def test_ordering_ignores_case() -> None:
    """docs/product/websocket.md, Who is in the room: by name, so "bea" comes before "Carl"."""
    carl = Member("usr_carl", "person", "Carl")
    zed = Member("hrn_zed", "harness", "zed")
    alpha = Member("hrn_alpha", "harness", "ALPHA")
    names = [m["name"] for m in room_members([zed, carl, alpha, BEA])]
    assert names == ["bea", "Carl", "ALPHA", "zed"]


def test_each_member_says_who_they_are_and_the_handle_that_reaches_them() -> None:
    """docs/product/websocket.md, Who is in the room: participant_id, kind, name and handle."""
    by_id = {m["participant_id"]: m for m in room_members([ARJUN, ASCII_ART, JACOBIAN])}
    assert by_id[ARJUN.id] == {
        "participant_id": ARJUN.id,
        "kind": "person",
        "name": "Arjun",
        "handle": "@Arjun",
    }
    assert by_id[ASCII_ART.id]["handle"] == "@ASCIIArt"
    assert by_id[ASCII_ART.id]["kind"] == "harness"
    assert by_id[JACOBIAN.id]["handle"] == "@Jacobian·mini"


def test_a_member_without_a_handle_has_no_handle_key() -> None:
    """docs/product/websocket.md, Who is in the room: "A member no handle reaches, such as a
    one-letter name, has no handle."
    """
    (entry,) = [m for m in room_members([J, ARJUN]) if m["participant_id"] == J.id]
    assert "handle" not in entry
    assert entry["name"] == "J"


def test_an_empty_room_has_no_members() -> None:
    """docs/product/websocket.md, Who is in the room: members lists who is there, nobody here."""
    assert room_members([]) == []


# rules_for


def test_with_no_other_harness_the_rules_are_only_that_everyone_reads() -> None:
    """docs/product/websocket.md, Who is in the room: "With no other agent in the room, the rules
    are only “Everyone here reads what you write.”"
    """
    for members in ([ARJUN, OPENCLAW], [ARJUN, BEA, OPENCLAW], [OPENCLAW]):
        rules = rules_for(OPENCLAW.id, members)
        assert says_reading(rules), rules
        assert "NO_REPLY" not in rules
        assert "@-mention" not in rules
        assert rules.count(".") == 1, "one sentence"


def test_with_another_harness_only_those_mentioned_act_and_one_may_pass() -> None:
    """docs/product/websocket.md, Who is in the room: "Everyone here reads what you write; only
    those you @-mention act on it. … answer NO_REPLY and nothing else".
    """
    rules = rules_for(OPENCLAW.id, ROOM)
    assert says_reading(rules)
    assert "@-mention" in rules
    assert re.search(r"only\b.*@-mention.*\bact", rules, re.IGNORECASE)
    assert "NO_REPLY" in rules
    assert rules.index("Everyone") < rules.index("@-mention") < rules.index("NO_REPLY")


def test_the_rules_count_harnesses_other_than_the_taker() -> None:
    """docs/product/websocket.md, Who is in the room: "With no other agent in the room"."""
    assert "NO_REPLY" not in rules_for(OPENCLAW.id, [ARJUN, OPENCLAW])
    assert "NO_REPLY" in rules_for(OPENCLAW.id, [ARJUN, OPENCLAW, OPENCLAW_2])
    assert "NO_REPLY" in rules_for(OPENCLAW_2.id, [ARJUN, OPENCLAW, OPENCLAW_2])


def test_the_rules_are_the_same_while_the_rooms_agents_are() -> None:
    """docs/product/websocket.md, Who is in the room: rules are "the same from turn to turn while
    the space’s agents are": people coming and going change nothing.
    """
    assert rules_for(OPENCLAW.id, [ARJUN, OPENCLAW, ASCII_ART]) == rules_for(
        OPENCLAW.id, [BEA, J, ASCII_ART, OPENCLAW]
    )


# note_for


def test_the_note_names_every_other_member_with_kind_and_handle() -> None:
    """docs/product/websocket.md, Who is in the room: "Arjun (person, @Arjun), … OpenClaw (agent,
    @OpenClaw)".
    """
    note = note_for(OPENCLAW_2.id, ROOM)
    assert "Arjun (person, @Arjun)" in note
    assert "bea (person, @bea)" in note
    assert re.search(r"ASCII Art \([^)]*agent, @ASCIIArt\)", note)
    assert re.search(r"OpenClaw \([^)]*agent, @OpenClaw\)", note)


def test_the_note_names_the_taker_as_you_last() -> None:
    """docs/product/websocket.md, Who is in the room: "… and you, OpenClaw 2 (OpenClaw agent,
    @OpenClaw2)".
    """
    note = note_for(OPENCLAW_2.id, ROOM)
    you = re.search(r"\byou, OpenClaw 2 \([^)]*agent, @OpenClaw2\)", note)
    assert you
    for other in ["Arjun (", "bea (", "ASCII Art (", "OpenClaw ("]:
        assert note.index(other) < you.start(), other
    assert note.count("OpenClaw 2") == 1


def test_the_note_lists_people_first_then_harnesses() -> None:
    """docs/product/websocket.md, Who is in the room: "People come first, then agents, each by
    name"."""
    note = note_for(OPENCLAW_2.id, ROOM)
    places = [note.index(f"{name} (") for name in ["Arjun", "bea", "ASCII Art", "OpenClaw"]]
    assert places == sorted(places)


def test_the_note_ends_with_the_rules() -> None:
    """docs/product/websocket.md, Who is in the room: "Each note ends with its rules"."""
    for taker in (OPENCLAW.id, OPENCLAW_2.id):
        note = note_for(taker, ROOM)
        assert note.endswith(rules_for(taker, ROOM))
    alone = note_for(OPENCLAW.id, [ARJUN, OPENCLAW])
    assert alone.endswith(rules_for(OPENCLAW.id, [ARJUN, OPENCLAW]))
    assert "NO_REPLY" not in alone


def test_the_note_names_a_member_without_a_handle_without_one() -> None:
    """docs/product/websocket.md, Who is in the room: a one-letter name has no handle."""
    note = note_for(OPENCLAW.id, [J, OPENCLAW])
    assert "J (person)" in note
    assert "@J" not in note


def test_the_note_says_a_person_is_a_person_and_a_harness_an_agent() -> None:
    """docs/product/websocket.md, Who is in the room: each member is named with their kind."""
    note = note_for(ASCII_ART.id, [ARJUN, ASCII_ART, JACOBIAN])
    assert re.search(r"Arjun \(person\b", note)
    assert re.search(r"Jacobian · mini \([^)]*agent, @Jacobian·mini\)", note)


def test_the_note_of_a_harness_alone_names_it_as_you() -> None:
    """docs/product/websocket.md, Who is in the room: the taker is named as you."""
    note = note_for(OPENCLAW.id, [OPENCLAW])
    assert "you, OpenClaw" in note
    assert says_reading(note)


# room_for


def test_the_room_carries_members_and_a_note_and_rules_per_taker() -> None:
    """docs/product/websocket.md, Who is in the room: "a note for each agent taking the turn, keyed
    by its id".
    """
    room = room_for([OPENCLAW.id, ASCII_ART.id], ROOM)
    assert room["members"] == room_members(ROOM)
    assert set(room["notes"]) == {OPENCLAW.id, ASCII_ART.id}
    assert set(room["rules"]) == {OPENCLAW.id, ASCII_ART.id}
    for taker in (OPENCLAW.id, ASCII_ART.id):
        assert room["notes"][taker] == note_for(taker, ROOM)
        assert room["rules"][taker] == rules_for(taker, ROOM)
        assert room["notes"][taker].endswith(room["rules"][taker])
    assert "you, OpenClaw (" in room["notes"][OPENCLAW.id]
    assert "you, ASCII Art (" in room["notes"][ASCII_ART.id]


# Properties

NAMES = st.text(alphabet="abcdefghijXYZ ·2", min_size=1, max_size=10).filter(lambda n: n.strip())


@st.composite
def rooms(draw: st.DrawFn) -> list[Member]:
    names = draw(st.lists(NAMES, min_size=1, max_size=7))
    kinds = draw(
        st.lists(st.sampled_from(["person", "harness"]), min_size=len(names), max_size=len(names))
    )
    return [
        Member(f"p{i}", kind, name) for i, (kind, name) in enumerate(zip(kinds, names, strict=True))
    ]


@given(rooms())
def test_members_are_people_then_harnesses_each_sorted(room: list[Member]) -> None:
    """docs/product/websocket.md, Who is in the room: "People come first, then agents, each by
    name"."""
    listed = room_members(room)
    assert sorted(m["participant_id"] for m in listed) == sorted(m.id for m in room)
    kinds = [m["kind"] for m in listed]
    assert kinds == sorted(kinds, key=lambda kind: kind != "person")
    for kind in ("person", "harness"):
        group = [m["name"].casefold() for m in listed if m["kind"] == kind]
        assert group == sorted(group)


@given(rooms(), st.data())
def test_rules_grow_exactly_when_another_harness_is_here(
    room: list[Member], data: st.DataObject
) -> None:
    """docs/product/websocket.md, Who is in the room: the NO_REPLY rule is for a room with other
    agents."""
    taker = data.draw(st.sampled_from(room))
    rules = rules_for(taker.id, room)
    others = [m for m in room if m.kind == "harness" and m.id != taker.id]
    assert says_reading(rules)
    assert ("NO_REPLY" in rules) == bool(others)
    assert ("@-mention" in rules) == bool(others)
    assert note_for(taker.id, room).endswith(rules)
