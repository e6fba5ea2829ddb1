"""What is news to a harness taking a turn, as its note opens with it (rules/room.py).

The sentences are checked word for word: every harness tells its model the same thing, and
these are the words the protocol promises (the room note, docs/protocol.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.rules.handles import Member
from chips_common.rules.room import Comebacks, ago, credited, news_for, note_for, speaker

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


GIVEN = Member("agt_scout2", "agent", "Scout 2", "member")
OWNERS = {GIVEN.id: SCOUT.id}


def test_a_given_agent_s_joining_is_credited_to_who_added_its_harness() -> None:
    # docs/adr/0154: Chips logs the agent's coming as its harness's act, right after the
    # person's adding the harness; the news names the person.
    joinings = [added(7, SCOUT), added(9, GIVEN, by=SCOUT)]
    seen = credited(joinings, OWNERS.get)
    assert seen[0] == joinings[0]
    assert seen[1]["actor"]["id"] == ARJUN.id and joinings[1]["actor"]["id"] == SCOUT.id
    message = post(12, "@Scout 2 hello", mentions=[GIVEN.id])
    news = news_for(GIVEN.id, message, [ARJUN, GIVEN], seen, 9, True, name_of, None)
    assert news.joined is not None and news.joined.added_by == "Arjun"


def test_a_given_agent_of_a_harness_that_came_itself_came_itself() -> None:
    opened = {**post(7, ""), "type": "space.created", "actor": {"id": SCOUT.id, "kind": "harness"}}
    (_, agent) = credited([opened, added(9, GIVEN, by=SCOUT)], OWNERS.get)
    assert agent["actor"]["id"] == GIVEN.id


def test_an_agent_its_harness_brings_in_behind_it_is_left_as_logged() -> None:
    behind = {**added(7, SCOUT, by=SCOUT), "standing": "agents"}
    joinings = [behind, added(8, GIVEN, by=SCOUT)]
    assert credited(joinings, OWNERS.get) == joinings


def test_an_agent_back_with_the_unarchive_is_no_joining_while_one_added_again_is() -> None:
    def event(seq: int, kind: str, **more: Any) -> dict[str, Any]:
        return {"seq": seq, "type": kind, "space_id": "spc_1", **more}

    room = Comebacks()
    archive = [
        event(10, "agent.released", agent_id=GIVEN.id, reason="archived"),
        event(11, "membership.removed", participant_id=GIVEN.id),
        event(12, "space.updated", state="closed"),
        event(13, "space.updated", state="open"),
    ]
    assert not any(room.fold(e) for e in archive)
    assert room.fold(event(14, "membership.added", participant_id=GIVEN.id))
    taken_out = [
        event(15, "agent.released", agent_id=GIVEN.id, reason="removed"),
        event(16, "membership.removed", participant_id=GIVEN.id),
    ]
    assert not any(room.fold(e) for e in taken_out)
    assert not room.fold(event(17, "membership.added", participant_id=GIVEN.id))


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
