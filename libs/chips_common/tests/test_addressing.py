"""Who a message is for: ``address`` (docs/product/spaces.md, Several harnesses and people in one
space).

"For a person’s message the first of these that applies decides: 1. An @ … 2. The composer’s
choice … 3. A reply to a harness’s message … 4. The only harness in a room … 5. Where your
last message here went." and "A harness’s message is for the harnesses it names, chose with
to, or answers, and otherwise for the people."
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.rules.addressing import EVERYONE, Addressed, Choice, address
from chips_common.rules.handles import Member, handles_of

pytestmark = pytest.mark.unit

PRIYA = Member("usr_priya", "person", "Priya")
MAYA = Member("usr_maya", "person", "Maya Chen")
SCOUT = Member("hrn_scout", "harness", "Scout")
LEDGER = Member("hrn_ledger", "harness", "Ledger")
ORACLE = Member("hrn_oracle", "harness", "Oracle")
ROOM = [PRIYA, MAYA, SCOUT, LEDGER, ORACLE]
EVERY_HARNESS = [SCOUT.id, LEDGER.id, ORACLE.id]


def said(
    text: str = "How is the PO going?",
    *,
    sender: Member = PRIYA,
    members: Sequence[Member] = ROOM,
    to: Sequence[str] | None = None,
    reply_author: Member | None = None,
    last_choice: Choice | None = None,
) -> Addressed:
    return address(
        sender=sender,
        text=text,
        members=members,
        to=to,
        reply_author=reply_author,
        last_choice=last_choice,
    )


# Rule 1: an @


def test_rule_1_an_at_mention_makes_it_that_harnesss() -> None:
    """docs/product/spaces.md, rule 1: "@Ledger in the text makes it Ledger’s"."""
    decided = said("@Ledger what about the PO?")
    assert decided.addressed_to == [LEDGER.id]
    assert decided.mentions == [LEDGER.id]
    assert decided.choice == Choice("named", (LEDGER.id,))
    assert decided.rule.startswith("1")


def test_rule_1_several_mentions_make_it_each_of_theirs() -> None:
    """docs/product/spaces.md, rule 1: every harness the text names."""
    decided = said("@Scout and @oracle, compare notes")
    assert set(decided.addressed_to) == {SCOUT.id, ORACLE.id}
    assert decided.choice is not None and decided.choice.kind == "named"
    assert set(decided.choice.ids) == {SCOUT.id, ORACLE.id}


def test_rule_1_at_all_makes_it_every_harnesss() -> None:
    """docs/product/spaces.md, rule 1: "@all makes it every harness’s"."""
    decided = said("@all stand-up in five")
    assert sorted(decided.addressed_to) == sorted(EVERY_HARNESS)
    assert decided.mentions == []
    assert decided.choice == Choice("everyone")
    assert decided.rule.startswith("1")


def test_rule_1_an_at_naming_only_people_makes_it_no_harnesss() -> None:
    """docs/product/spaces.md, rule 1: "an @ that names only people makes it no harness’s"."""
    decided = said("@Maya can you check this?")
    assert decided.addressed_to == []
    assert decided.mentions == [MAYA.id]
    assert decided.choice == Choice("nobody")
    assert decided.rule.startswith("1")


def test_rule_1_people_and_a_harness_named_make_it_the_harnesss() -> None:
    """docs/product/spaces.md, rule 1: the harnesses an @ names; the people are mentioned too."""
    decided = said("@Maya and @Ledger, the PO")
    assert decided.addressed_to == [LEDGER.id]
    assert set(decided.mentions) == {MAYA.id, LEDGER.id}


def test_rule_1_an_at_nobody_has_does_not_decide() -> None:
    """docs/product/spaces.md, rule 1: an @ that reaches no member names nobody, so a later rule
    decides."""
    decided = said("@Nobody here?", to=[SCOUT.id])
    assert decided.addressed_to == [SCOUT.id]
    assert decided.mentions == []


# Rule 2: the composer's `to`


def test_rule_2_to_with_harness_ids() -> None:
    """docs/product/spaces.md, rule 2: the pick "goes with the message as to"."""
    decided = said(to=[SCOUT.id, ORACLE.id])
    assert decided.addressed_to == [SCOUT.id, ORACLE.id]
    assert decided.choice == Choice("named", (SCOUT.id, ORACLE.id))
    assert decided.rule.startswith("2")


def test_rule_2_to_everyone() -> None:
    """docs/product/spaces.md, rule 2: the list "picks a harness or Everyone"."""
    decided = said(to=[EVERYONE])
    assert sorted(decided.addressed_to) == sorted(EVERY_HARNESS)
    assert decided.choice == Choice("everyone")
    assert decided.rule.startswith("2")


def test_rule_2_a_picked_id_not_a_harness_of_the_room_is_left_out() -> None:
    """docs/product/spaces.md, Chips says who each message is for: only the room's harnesses."""
    decided = said(to=[SCOUT.id, "hrn_gone", MAYA.id])
    assert decided.addressed_to == [SCOUT.id]


def test_rule_2_a_harness_picked_twice_is_addressed_once() -> None:
    """docs/product/spaces.md, Chips says who each message is for: each harness the message is for
    takes a turn on it, once (MessagePost.to lets a client send a repeat).
    """
    decided = said(to=[SCOUT.id, SCOUT.id])
    assert decided.addressed_to == [SCOUT.id]
    assert decided.choice == Choice("named", (SCOUT.id,))


# Rule 3: a reply to a harness's message


def test_rule_3_a_reply_to_a_harnesss_message_is_that_harnesss() -> None:
    """docs/product/spaces.md, rule 3: "A reply to a harness’s message is that harness’s"."""
    decided = said("Yes, go ahead.", reply_author=LEDGER)
    assert decided.addressed_to == [LEDGER.id]
    assert decided.choice == Choice("named", (LEDGER.id,))
    assert decided.rule.startswith("3")


def test_rule_3_a_reply_to_a_persons_message_does_not_decide() -> None:
    """docs/product/spaces.md, rule 3 is about a harness's message; a person's falls to rule 5."""
    decided = said("Agreed.", reply_author=MAYA)
    assert decided.rule.startswith("5")
    assert sorted(decided.addressed_to) == sorted(EVERY_HARNESS)


def test_rule_3_a_reply_to_a_harness_that_left_does_not_decide() -> None:
    """docs/product/spaces.md, rule 3: only a harness in the room takes a turn."""
    gone = Member("hrn_gone", "harness", "Gone")
    decided = said("Thanks", reply_author=gone, last_choice=Choice("named", (SCOUT.id,)))
    assert decided.addressed_to == [SCOUT.id]
    assert decided.rule.startswith("5")


# Rule 4: the only harness in the room


def test_rule_4_the_only_harness_in_the_room() -> None:
    """docs/product/spaces.md, rule 4: "The only harness in a room with one … is who every message
    is for".
    """
    decided = said(members=[PRIYA, LEDGER])
    assert decided.addressed_to == [LEDGER.id]
    assert decided.rule.startswith("4")


def test_rule_4_the_only_harness_beside_several_people() -> None:
    """docs/product/spaces.md, rule 4: people in the room do not change who the one harness is."""
    decided = said(members=[PRIYA, MAYA, LEDGER])
    assert decided.addressed_to == [LEDGER.id]


def test_a_room_without_harnesses_addresses_nobody() -> None:
    """docs/product/spaces.md, Chips says who each message is for: only harnesses are addressed."""
    decided = said(members=[PRIYA, MAYA])
    assert decided.addressed_to == []
    assert said("@all hi", members=[PRIYA, MAYA]).addressed_to == []


# Rule 5: where your last message went


def test_rule_5_before_the_first_message_every_harness() -> None:
    """docs/product/spaces.md, rule 5: "Before your first, every harness."."""
    decided = said(last_choice=None)
    assert sorted(decided.addressed_to) == sorted(EVERY_HARNESS)
    assert decided.rule.startswith("5")
    assert decided.choice is None


def test_rule_5_everyone_stays_everyone_when_a_harness_joins_later() -> None:
    """docs/product/spaces.md, rule 5: "a harness that joins after a message for everyone is in the
    next one too".
    """
    first = said("@all morning", members=[PRIYA, SCOUT, LEDGER])
    assert first.choice == Choice("everyone")
    later = said("Where are we?", members=ROOM, last_choice=first.choice)
    assert sorted(later.addressed_to) == sorted(EVERY_HARNESS)
    assert ORACLE.id in later.addressed_to


def test_rule_5_harnesses_picked_by_name_stay_those_harnesses() -> None:
    """docs/product/spaces.md, rule 5: "harnesses picked by name stay those harnesses"."""
    first = said(to=[SCOUT.id], members=[PRIYA, SCOUT, LEDGER])
    later = said("And then?", members=ROOM, last_choice=first.choice)
    assert later.addressed_to == [SCOUT.id]
    assert later.rule.startswith("5")


def test_rule_5_a_named_harness_that_left_is_dropped() -> None:
    """docs/product/spaces.md, rule 5: only harnesses in the room take a turn."""
    last = Choice("named", (SCOUT.id, LEDGER.id))
    decided = said(members=[PRIYA, LEDGER, ORACLE], last_choice=last)
    assert decided.addressed_to == [LEDGER.id]


def test_rule_5_after_an_at_to_people_only_no_harness() -> None:
    """docs/product/spaces.md, rule 5: "Where your last message here went": a message for no
    harness."""
    first = said("@Maya over to you")
    later = said("Anything else?", last_choice=first.choice)
    assert later.addressed_to == []


def test_rule_5_leaves_the_memory_as_it_is() -> None:
    """docs/product/spaces.md, rule 5: a message that went where the last did changes nothing."""
    assert said(last_choice=Choice("named", (LEDGER.id,))).choice is None


# Precedence: the first rule that applies decides


def test_an_at_beats_to() -> None:
    """docs/product/spaces.md: rule 1 comes before rule 2."""
    assert said("@Ledger this one", to=[SCOUT.id]).addressed_to == [LEDGER.id]
    assert said("@Ledger this one", to=[EVERYONE]).addressed_to == [LEDGER.id]


def test_an_at_all_beats_to() -> None:
    """docs/product/spaces.md: rule 1 (@all) comes before rule 2."""
    assert sorted(said("@all now", to=[SCOUT.id]).addressed_to) == sorted(EVERY_HARNESS)


def test_an_at_naming_only_people_beats_to() -> None:
    """docs/product/spaces.md: rule 1 ("names only people … no harness’s") comes before rule 2."""
    decided = said("@Maya have a look", to=[SCOUT.id], reply_author=LEDGER)
    assert decided.addressed_to == []


def test_an_at_beats_a_reply() -> None:
    """docs/product/spaces.md: rule 1 comes before rule 3."""
    assert said("@Oracle your view?", reply_author=LEDGER).addressed_to == [ORACLE.id]


def test_to_beats_a_reply() -> None:
    """docs/product/spaces.md: rule 2 comes before rule 3."""
    assert said("Take this", to=[SCOUT.id], reply_author=LEDGER).addressed_to == [SCOUT.id]
    everyone = said("Take this", to=[EVERYONE], reply_author=LEDGER)
    assert sorted(everyone.addressed_to) == sorted(EVERY_HARNESS)


def test_a_reply_beats_the_last_choice() -> None:
    """docs/product/spaces.md: rule 3 comes before rule 5."""
    decided = said(reply_author=LEDGER, last_choice=Choice("named", (SCOUT.id,)))
    assert decided.addressed_to == [LEDGER.id]


def test_the_only_harness_beats_the_last_choice() -> None:
    """docs/product/spaces.md: rule 4 comes before rule 5."""
    decided = said(members=[PRIYA, LEDGER], last_choice=Choice("nobody"))
    assert decided.addressed_to == [LEDGER.id]


def test_to_beats_the_last_choice() -> None:
    """docs/product/spaces.md: rule 2 comes before rule 5."""
    decided = said(to=[ORACLE.id], last_choice=Choice("named", (SCOUT.id,)))
    assert decided.addressed_to == [ORACLE.id]


def test_a_mention_beats_the_only_harness() -> None:
    """docs/product/spaces.md: rule 1 comes before rule 4: an @ to a person in a direct room."""
    assert said("@Maya look", members=[PRIYA, MAYA, LEDGER]).addressed_to == []


# A harness's message


def test_a_harnesss_plain_message_is_for_the_people() -> None:
    """docs/product/spaces.md: a harness's message is "otherwise for the people"."""
    decided = said("The PO is signed.", sender=SCOUT)
    assert decided.addressed_to == []
    assert decided.choice is None


def test_a_harnesss_message_in_a_direct_room_is_for_the_people() -> None:
    """docs/product/websocket.md, What a harness hears when someone speaks: "What a harness posts is
    for the people unless …".
    """
    assert said("Done.", sender=LEDGER, members=[PRIYA, LEDGER]).addressed_to == []
    assert said("Done.", sender=LEDGER, members=[PRIYA, LEDGER, SCOUT]).addressed_to == []


def test_a_harnesss_message_is_for_the_harnesses_it_names() -> None:
    """docs/product/spaces.md: "for the harnesses it names"."""
    decided = said("@Ledger your turn, @Maya FYI", sender=SCOUT)
    assert decided.addressed_to == [LEDGER.id]
    assert set(decided.mentions) == {LEDGER.id, MAYA.id}


def test_a_harnesss_message_is_for_the_harnesses_it_picks_with_to() -> None:
    """docs/product/spaces.md: "chose with to"."""
    assert said("Over to you", sender=SCOUT, to=[ORACLE.id]).addressed_to == [ORACLE.id]


def test_a_harnesss_message_is_for_the_harness_it_answers() -> None:
    """docs/product/spaces.md: "or answers"."""
    assert said("Friday.", sender=SCOUT, reply_author=LEDGER).addressed_to == [LEDGER.id]


def test_a_harnesss_message_names_each_harness_once() -> None:
    """docs/product/spaces.md: the harnesses it names, picks and answers, each once."""
    decided = said("@Ledger yes", sender=SCOUT, to=[LEDGER.id, ORACLE.id], reply_author=LEDGER)
    assert sorted(decided.addressed_to) == sorted([LEDGER.id, ORACLE.id])
    assert len(decided.addressed_to) == 2


def test_a_harnesss_message_is_never_for_itself() -> None:
    """docs/product/spaces.md: addressed_to lists the other harnesses a message is for, never its
    sender."""
    assert said("@Scout note to self", sender=SCOUT).addressed_to == []
    assert said("Me", sender=SCOUT, to=[SCOUT.id]).addressed_to == []
    assert said("Again", sender=SCOUT, reply_author=SCOUT).addressed_to == []


def test_a_harnesss_at_all_is_for_the_other_harnesses() -> None:
    """docs/product/spaces.md, rule 1: "@all makes it every harness’s" — every other one."""
    decided = said("@all I'm done", sender=SCOUT)
    assert sorted(decided.addressed_to) == sorted([LEDGER.id, ORACLE.id])


def test_a_harnesss_message_does_not_follow_the_rules_for_people() -> None:
    """docs/product/spaces.md: rules 4 and 5 are for a person's message; a harness's goes to the
    people."""
    decided = said("Status", sender=SCOUT, last_choice=Choice("everyone"))
    assert decided.addressed_to == []
    assert said("Status", sender=SCOUT, members=[PRIYA, SCOUT, LEDGER]).addressed_to == []


# Properties

PEOPLE = [PRIYA, MAYA, Member("usr_j", "person", "J")]
HARNESSES = [
    SCOUT,
    LEDGER,
    ORACLE,
    Member("hrn_openclaw", "harness", "OpenClaw"),
    Member("hrn_openclaw2", "harness", "OpenClaw 2"),
]
EVERYBODY = PEOPLE + HARNESSES
GONE = Member("hrn_gone", "harness", "Gone")
KNOWN_IDS = [m.id for m in EVERYBODY] + [GONE.id, "usr_stranger"]
HANDLES = sorted({h for m in [*EVERYBODY, GONE] for h in handles_of(m.name)} | {"all", "nobody"})

rooms = st.lists(st.sampled_from(EVERYBODY), min_size=1, max_size=len(EVERYBODY), unique=True)
texts = st.lists(
    st.one_of(
        st.sampled_from(["the", "PO", "is", "due", "Friday,", "a@b.com", "please."]),
        st.sampled_from(HANDLES).map(lambda h: f"@{h}"),
    ),
    max_size=8,
).map(" ".join)
tos = st.one_of(
    st.none(),
    st.lists(st.sampled_from([*KNOWN_IDS, EVERYONE]), max_size=4, unique=True),
)
choices = st.one_of(
    st.none(),
    st.just(Choice("everyone")),
    st.just(Choice("nobody")),
    st.lists(st.sampled_from([m.id for m in HARNESSES] + [GONE.id]), max_size=4, unique=True).map(
        lambda ids: Choice("named", tuple(ids))
    ),
)


@given(st.data(), rooms, texts, tos, choices)
def test_addressed_to_is_the_rooms_other_harnesses_once_each(
    data: st.DataObject,
    room: list[Member],
    text: str,
    to: list[str] | None,
    last_choice: Choice | None,
) -> None:
    """docs/product/spaces.md, Chips says who each message is for: addressed_to lists harness ids of
    the room, each once, never the sender; mentions are the room's participant ids; rule 5's
    memory ("where your last message here went") gives the same answer again.
    """
    sender = data.draw(st.sampled_from(room))
    reply_author = data.draw(st.one_of(st.none(), st.sampled_from([*EVERYBODY, GONE])))
    decided = said(
        text,
        sender=sender,
        members=room,
        to=to,
        reply_author=reply_author,
        last_choice=last_choice,
    )
    room_harnesses = {m.id for m in room if m.kind == "harness"} - {sender.id}
    assert set(decided.addressed_to) <= room_harnesses
    assert len(decided.addressed_to) == len(set(decided.addressed_to))
    assert set(decided.mentions) <= {m.id for m in room}
    assert len(decided.mentions) == len(set(decided.mentions))
    if decided.choice is not None:
        # What rule 5 remembers sends the next message, in the same room, to the same place.
        assert decided.choice.resolve(room, sender.id) == decided.addressed_to


@given(rooms, st.data())
def test_at_all_is_always_every_other_harness(room: list[Member], data: st.DataObject) -> None:
    """docs/product/spaces.md, rule 1: "@all makes it every harness’s", whoever says it."""
    sender = data.draw(st.sampled_from(room))
    decided = said("@all", sender=sender, members=room, to=data.draw(tos))
    expected = [m.id for m in room if m.kind == "harness" and m.id != sender.id]
    assert sorted(decided.addressed_to) == sorted(expected)
