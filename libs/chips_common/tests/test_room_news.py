"""What is news to a harness taking a turn, as its note opens with it (rules/room.py).

The sentences are checked word for word: every harness tells its model the same thing, and
these are the words the protocol promises (the room note, docs/protocol.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.rules.handles import Member
from chips_common.rules.room import ago, news_for, note_for, speaker

pytestmark = pytest.mark.unit

ARJUN = Member("usr_arjun", "person", "Arjun", "owner")
MAYA = Member("usr_maya", "person", "Maya", "guest")
SCOUT = Member("hrn_scout", "harness", "Scout", "member")
LEDGER = Member("hrn_ledger", "harness", "Ledger", "member")
NAMES = {m.id: m.name for m in (ARJUN, MAYA, SCOUT, LEDGER)}


def name_of(pid: str) -> str:
    return NAMES.get(pid, pid)


def post(seq: int, text: str, *, by: Member = ARJUN, **more: Any) -> dict[str, Any]:
    return {
        "seq": seq,
        "ts": "2026-10-13T16:12:00Z",
        "type": "message.post",
        "space_id": "spc_1",
        "actor": {"id": by.id, "kind": by.kind},
        "text": text,
        **more,
    }


def added(seq: int, who: Member, by: Member = ARJUN, ts: str = "2026-10-13T16:10:00Z") -> dict:
    return {
        "seq": seq,
        "ts": ts,
        "type": "membership.added",
        "space_id": "spc_1",
        "actor": {"id": by.id, "kind": by.kind},
        "participant_id": who.id,
        "standing": who.standing,
    }


def opening(note: str) -> str:
    """What the note says ahead of who is in the room."""
    return note.split("In this space:")[0].strip()


def test_a_harness_that_joined_a_room_already_talking_is_told_when_and_by_whom() -> None:
    joining = added(7, SCOUT)
    message = post(9, "@Scout can you look?", mentions=[SCOUT.id])
    news = news_for(SCOUT.id, message, [ARJUN, SCOUT], [joining], 7, True, name_of, None)
    assert opening(note_for(SCOUT.id, [ARJUN, SCOUT], news)) == (
        "You joined this space 2 minutes ago, added by Arjun."
    )


def test_joining_a_quiet_room_is_no_news() -> None:
    joining = added(7, SCOUT)
    message = post(9, "@Scout hello", mentions=[SCOUT.id])
    news = news_for(SCOUT.id, message, [ARJUN, SCOUT], [joining], 7, False, name_of, None)
    assert opening(note_for(SCOUT.id, [ARJUN, SCOUT], news)) == ""


def test_who_joined_since_the_last_turn_is_news() -> None:
    message = post(12, "@Scout and now?", mentions=[SCOUT.id])
    members = [ARJUN, SCOUT, LEDGER]
    news = news_for(SCOUT.id, message, members, [added(10, LEDGER)], 8, False, name_of, None)
    assert opening(note_for(SCOUT.id, members, news)) == (
        "New since your last turn: Ledger (agent, @Ledger), added by Arjun."
    )


def test_somebody_who_came_and_went_again_is_no_news() -> None:
    message = post(12, "@Scout and now?", mentions=[SCOUT.id])
    news = news_for(SCOUT.id, message, [ARJUN, SCOUT], [added(10, LEDGER)], 8, False, name_of, None)
    assert news.new == ()


def test_a_message_chosen_for_it_without_an_at_says_it_is_its_to_answer() -> None:
    message = post(12, "what do you think?", to=[SCOUT.id], mentions=[])
    members = [ARJUN, SCOUT, LEDGER]
    news = news_for(SCOUT.id, message, members, [], 8, False, name_of, None)
    assert opening(note_for(SCOUT.id, members, news)) == (
        "Arjun sent this message to you without an @: it is yours to answer."
    )


def test_alone_with_people_every_message_is_its_own_and_the_note_says_nothing() -> None:
    message = post(12, "what do you think?", mentions=[])
    news = news_for(SCOUT.id, message, [ARJUN, SCOUT], [], 8, False, name_of, None)
    assert opening(note_for(SCOUT.id, [ARJUN, SCOUT], news)) == ""


def test_a_message_for_every_agent_says_each_has_it() -> None:
    members = [ARJUN, SCOUT, LEDGER]
    for message in (
        post(12, "status, everyone?", to=["everyone"], mentions=[]),
        post(12, "@all status?", mentions=[]),
    ):
        news = news_for(SCOUT.id, message, members, [], 8, False, name_of, None)
        assert opening(note_for(SCOUT.id, members, news)) == (
            "Arjun sent this message to every agent here, so each of you has it: answer it "
            "yourself, and don\u2019t pass it on with an @."
        )


def test_an_at_of_the_taker_needs_no_reason() -> None:
    members = [ARJUN, SCOUT, LEDGER]
    message = post(12, "@Scout go", mentions=[SCOUT.id])
    news = news_for(SCOUT.id, message, members, [], 8, False, name_of, None)
    assert opening(note_for(SCOUT.id, members, news)) == ""


def test_lines_left_out_of_the_context_are_said() -> None:
    message = post(12, "@Scout go", mentions=[SCOUT.id])
    news = news_for(SCOUT.id, message, [ARJUN, SCOUT], [], 8, False, name_of, 40)
    assert opening(note_for(SCOUT.id, [ARJUN, SCOUT], news)) == (
        "Only the newest 40 lines of what was said here since your last turn come with this "
        "one: older lines were left out."
    )


def test_the_room_itself_is_said_in_the_protocol_s_words() -> None:
    note = note_for(SCOUT.id, [ARJUN, SCOUT, LEDGER])
    assert note == (
        "In this space: Arjun (person, @Arjun), Ledger (agent, @Ledger), and you, Scout "
        "(agent, @Scout). Everyone here reads what you write; only those you @-mention act "
        "on it. To hand work to an agent or ask it something, @-mention it. If a message asks "
        "nothing of you now, as when it names a step that is yours later, answer NO_REPLY and "
        "nothing else: the space shows nothing, and nobody needs to hear that you are ready "
        "or waiting."
    )
    assert note_for(SCOUT.id, [ARJUN, SCOUT]) == (
        "In this space: Arjun (person, @Arjun) and you, Scout (agent, @Scout). "
        "Everyone here reads what you write."
    )


@pytest.mark.parametrize(
    ("then", "now", "said"),
    [
        ("2026-10-13T16:00:00Z", "2026-10-13T16:00:59Z", "less than a minute ago"),
        ("2026-10-13T16:00:00Z", "2026-10-13T16:01:00Z", "1 minute ago"),
        ("2026-10-13T16:00:00Z", "2026-10-13T16:59:00Z", "59 minutes ago"),
        ("2026-10-13T16:00:00Z", "2026-10-13T18:30:00Z", "2 hours ago"),
        ("2026-10-10T16:00:00Z", "2026-10-13T16:00:00Z", "3 days ago"),
        ("nonsense", "2026-10-13T16:00:00Z", "a while ago"),
    ],
)
def test_how_long_ago(then: str, now: str, said: str) -> None:
    assert ago(then, now) == said


def test_the_speaker_comes_with_their_standing_in_the_room() -> None:
    assert speaker(post(3, "hi", by=MAYA), [ARJUN, MAYA, SCOUT]) == {
        "id": MAYA.id,
        "kind": "person",
        "name": "Maya",
        "standing": "guest",
    }
    assert speaker(post(3, "hi", by=SCOUT), [ARJUN, SCOUT])["standing"] == "member"
