"""The product's rendering helpers say what Chips says (docs/product/websocket.md, What you're
told)."""

from __future__ import annotations

import pytest

from chips_common.rules import room as chips_room
from chips_common.rules.handles import Member
from chips_sdk import note_without_rules, render_context, render_room_note
from chips_sdk import render as sdk
from chips_sdk.speaking import speaker_for

pytestmark = pytest.mark.unit

PEOPLE = [
    Member("usr_a", "person", "Arjun"),
    Member("hrn_s", "harness", "Scout"),
    Member("hrn_l", "harness", "Ledger"),
]


def test_the_rules_are_worded_as_the_gateway_words_them() -> None:
    assert (sdk.RULE_READ, sdk.RULE_ACT, sdk.RULE_PASS) == (
        chips_room.RULE_READ,
        chips_room.RULE_ACT,
        chips_room.RULE_PASS,
    )


@pytest.mark.parametrize("members", [PEOPLE, PEOPLE[:2], PEOPLE[1:2], PEOPLE[:1]])
def test_a_note_written_again_from_members_is_the_one_chips_sends(members) -> None:
    room = chips_room.room_for(["hrn_s"], members)
    from_members = {"members": room["members"]}  # no notes: written again from members
    assert render_room_note(from_members, "hrn_s") == room["notes"]["hrn_s"]
    assert render_room_note(room, "hrn_s") == room["notes"]["hrn_s"]


@pytest.mark.parametrize("taker", ["hrn_s", "hrn_l"])
def test_a_note_written_again_says_who_leads_as_chips_does(taker: str) -> None:
    room = chips_room.room_for([taker], PEOPLE, led=chips_room.Led(lead="hrn_l"))
    from_members = {"members": room["members"]}
    assert render_room_note(from_members, taker) == room["notes"][taker]


def test_a_note_without_its_rules_is_who_is_here() -> None:
    room = chips_room.room_for(["hrn_s"], PEOPLE)
    short = note_without_rules(room, "hrn_s")
    assert short.startswith("In this space: Arjun (person, @Arjun)")
    assert "@-mention" not in short
    assert room["notes"]["hrn_s"] == f"{short} {room['rules']['hrn_s']}"
    assert note_without_rules({"members": room["members"]}, "hrn_s") == short


def test_render_context_puts_each_line_as_name_and_words_then_the_files() -> None:
    context = {
        "lines": [
            {"seq": 62, "kind": "said", "from": {"name": "Priya"}, "text": "Send the PO."},
            {"seq": 63, "kind": "joined", "from": {"name": "Ledger"}},
            {"seq": 64, "kind": "said", "from": {"name": "Ledger"}, "text": "Fri", "edited": True},
            {"seq": 65, "kind": "renamed", "from": {"name": "Priya"}, "title": "POs"},
        ],
        "truncated": True,
        "files": [{"name": "po.pdf", "version": 2, "url": "https://x/att"}],
    }
    assert render_context(context).splitlines() == [
        "Said in this space since you last spoke:",
        "(Only the newest 4 lines of what was said here since your last turn come with this "
        "one: older lines were left out.)",
        "Priya: Send the PO.",
        "Ledger joined",
        "Ledger: Fri (edited)",
        "Priya renamed the room to “POs”",
        "Files in this space:",
        "- po.pdf (v2): https://x/att",
    ]
    assert render_context({"lines": []}) == "" and render_context(None) == ""


def test_a_reply_speaks_as_the_one_agent_the_message_is_for() -> None:
    """docs/product/websocket.md, Speaking as one: name the agent as the envelope's actor."""
    assert speaker_for({"for": ["agt_1"]}) == {"kind": "agent", "id": "agt_1"}
    assert speaker_for({"for": ["hrn_1"]}) is None  # the harness itself: as itself
    assert speaker_for({"for": ["agt_1", "agt_2"]}) is None  # each answers, naming itself
    assert speaker_for({}) is None  # a harness that did not declare agents


def test_a_voice_notes_words_are_said_as_heard() -> None:
    line = {
        "kind": "said",
        "from": {"name": "Arjun Rao"},
        "text": "",
        "files": ["voice-note.wav"],
        "transcript": "the quick brown fox",
    }
    assert sdk.render_line(line) == "Arjun Rao: [voice note, as heard: “the quick brown fox”]"
