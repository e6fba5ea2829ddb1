"""Handles and mentions (rules/handles.py): handles_of, display_handle, mentioned_handles and
resolve_mentions.

docs/product/messages.md, Message: "@Ledger in the text is a mention: Chips resolves it against the
space’s members … A handle is a name without its spaces, or its first word, and is not
case-sensitive; @all names every harness in the room." docs/product/spaces.md, Several harnesses and
people in one space, rule 1: "@jacobian for Jacobian · mini — and the same rule draws the chip."
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chips_common.rules.handles import (
    Member,
    display_handle,
    handles_of,
    mentioned_handles,
    resolve_mentions,
)

pytestmark = pytest.mark.unit

PRIYA = Member("usr_priya", "person", "Priya")
MAYA = Member("usr_maya", "person", "Maya Chen")
JACOBIAN = Member("hrn_jacobian", "harness", "Jacobian · mini")
LEDGER = Member("hrn_ledger", "harness", "Ledger")
OPENCLAW = Member("hrn_openclaw", "harness", "OpenClaw")
OPENCLAW_2 = Member("hrn_openclaw2", "harness", "OpenClaw 2")
ROOM = [PRIYA, MAYA, JACOBIAN, LEDGER, OPENCLAW, OPENCLAW_2]


def resolved(text: str, members: list[Member] = ROOM) -> list[str]:
    return resolve_mentions(text, members)[0]


# handles_of / display_handle


def test_a_handle_is_the_name_without_its_spaces_or_its_first_word() -> None:
    """docs/product/spaces.md, rule 1: "@jacobian for Jacobian · mini"; the whole name reaches it
    too."""
    assert handles_of("Jacobian · mini") == {"jacobian·mini", "jacobian"}
    assert handles_of("Maya Chen") == {"mayachen", "maya"}
    assert handles_of("OpenClaw 2") == {"openclaw2", "openclaw"}


def test_a_one_word_name_has_one_handle() -> None:
    """docs/product/messages.md, Message: the name without spaces and its first word are the
    same."""
    assert handles_of("Ledger") == {"ledger"}


def test_handles_are_lower_case() -> None:
    """docs/product/messages.md, Message: a handle "is not case-sensitive"; it is kept lower
    case."""
    assert handles_of("ASCII Art") == {"asciiart", "ascii"}


def test_a_one_letter_name_has_no_handle() -> None:
    """docs/product/websocket.md, Who is in the room: "A member no handle reaches, such as a
    one-letter name, has no handle."
    """
    assert handles_of("J") == set()
    assert display_handle("J") is None
    assert handles_of("") == set()
    assert display_handle("") is None
    assert handles_of("   ") == set()


def test_a_one_letter_first_word_is_no_handle_but_the_whole_name_is() -> None:
    """docs/product/messages.md, Message: a one-letter word is too short to reach anybody alone."""
    assert handles_of("J Bot") == {"jbot"}
    assert handles_of("J K") == {"jk"}


def test_the_displayed_handle_is_the_name_without_spaces_as_written() -> None:
    """docs/product/websocket.md, Who is in the room: "ASCII Art" shows as "@ASCIIArt"."""
    assert display_handle("ASCII Art") == "@ASCIIArt"
    assert display_handle("OpenClaw 2") == "@OpenClaw2"
    assert display_handle("Jacobian · mini") == "@Jacobian·mini"
    assert display_handle("Arjun") == "@Arjun"


# mentioned_handles


def test_mentions_are_read_lower_case_in_order_without_repeats() -> None:
    """docs/product/messages.md, Message: a handle is not case-sensitive; each is named once."""
    assert mentioned_handles("@Ledger and @maya, then @LEDGER again") == ["ledger", "maya"]


def test_no_mention_in_plain_words() -> None:
    """docs/product/messages.md, Message: only an @ makes a mention."""
    assert mentioned_handles("Ledger, what is the PO?") == []
    assert mentioned_handles("") == []
    assert mentioned_handles("@ alone, and a lone @") == []


def test_an_email_address_is_not_a_mention() -> None:
    """docs/product/messages.md, Message: "@Ledger in the text is a mention", an address is not."""
    assert mentioned_handles("write to a@b.com") == []
    assert mentioned_handles("ledger@example.org") == []
    assert resolved("mail ops@ledger.io about it") == []


def test_punctuation_after_a_handle_is_not_part_of_it() -> None:
    """docs/product/messages.md, Message: "@Ledger," and "@Ledger." at the end of a clause still
    reach Ledger.
    """
    for text in [
        "@Ledger, look",
        "ask @Ledger.",
        "ask @Ledger!",
        "(@Ledger)",
        "@Ledger?",
        "@Ledger:",
    ]:
        assert mentioned_handles(text) == ["ledger"], text
        assert resolved(text) == [LEDGER.id], text


def test_a_mention_may_follow_punctuation() -> None:
    """docs/product/messages.md, Message: an @ at the start of a bracket or a quote is a mention."""
    assert mentioned_handles("(@Ledger) and “@Maya”") == ["ledger", "maya"]


def test_the_joiners_a_name_uses_stay_in_the_handle() -> None:
    """docs/product/spaces.md, rule 1: "@Jacobian·mini" is a handle of Jacobian · mini, whole."""
    assert mentioned_handles("@Jacobian·mini go") == ["jacobian·mini"]
    assert mentioned_handles("@R2-D2 go") == ["r2-d2"]
    assert mentioned_handles("@O'Neil go") == ["o'neil"]


# resolve_mentions


def test_jacobian_mini_is_reached_by_its_first_word_and_its_whole_name() -> None:
    """docs/product/spaces.md, rule 1: "@jacobian for Jacobian · mini"."""
    assert resolved("@jacobian please") == [JACOBIAN.id]
    assert resolved("@Jacobian·mini please") == [JACOBIAN.id]


def test_resolving_is_case_insensitive() -> None:
    """docs/product/messages.md, Message: a handle "is not case-sensitive"."""
    for text in ["@ledger", "@LEDGER", "@Ledger", "@lEdGeR"]:
        assert resolved(text) == [LEDGER.id], text
    assert resolved("@MAYACHEN") == [MAYA.id]
    assert resolved("@JACOBIAN·MINI") == [JACOBIAN.id]


def test_people_are_mentioned_too() -> None:
    """docs/product/messages.md, Message: mentions name participants, people as well as
    harnesses."""
    assert resolved("@Priya and @maya") == [PRIYA.id, MAYA.id]


def test_all_is_flagged_and_names_no_member() -> None:
    """docs/product/messages.md, Message: "@all names every harness in the room" (rule 1 decides
    who)."""
    assert resolve_mentions("@all stand up", ROOM) == ([], True)
    assert resolve_mentions("@ALL.", ROOM) == ([], True)
    assert resolve_mentions("@Ledger and @all", ROOM) == ([LEDGER.id], True)
    assert resolve_mentions("@Ledger only", ROOM) == ([LEDGER.id], False)


def test_all_is_not_a_member_named_all() -> None:
    """docs/product/messages.md, Message: @all is the room's keyword, even beside a member called
    All."""
    all_hands = Member("usr_all", "person", "All Hands")
    assert resolve_mentions("@all", [all_hands, LEDGER]) == ([], True)
    assert resolve_mentions("@AllHands", [all_hands, LEDGER]) == ([all_hands.id], False)


def test_a_handle_that_reaches_two_members_names_both() -> None:
    """docs/product/messages.md, Message: a first word shared by two names reaches both of them."""
    assert resolved("@OpenClaw look") == [OPENCLAW.id, OPENCLAW_2.id]
    assert resolved("@OpenClaw2 look") == [OPENCLAW_2.id]


def test_each_member_is_named_once() -> None:
    """docs/product/messages.md, Message: mentions lists participant ids, each once."""
    assert resolved("@Jacobian @jacobian·mini @JACOBIAN") == [JACOBIAN.id]
    assert resolved("@OpenClaw @OpenClaw2 @openclaw") == [OPENCLAW.id, OPENCLAW_2.id]


def test_a_handle_nobody_has_names_nobody() -> None:
    """docs/product/messages.md, Message: mentions are resolved against the space's members only."""
    assert resolve_mentions("@Scout are you there?", ROOM) == ([], False)
    assert resolve_mentions("@Ledger", []) == ([], False)


def test_a_one_letter_member_is_not_reached() -> None:
    """docs/product/websocket.md, Who is in the room: no handle reaches a one-letter name."""
    j = Member("usr_j", "person", "J")
    assert resolved("@J hello", [j, LEDGER]) == []


def test_a_shared_handle_names_its_members_in_the_rooms_order() -> None:
    """docs/product/messages.md, Message: one handle may reach several members; they come in the
    room's order (the module's own contract: the product pages do not order mentions).
    """
    reversed_room = [OPENCLAW_2, OPENCLAW, LEDGER]
    assert resolved("@openclaw", reversed_room) == [OPENCLAW_2.id, OPENCLAW.id]
    assert set(resolved("@Ledger @Priya")) == {PRIYA.id, LEDGER.id}


def test_the_handle_a_screen_shows_reaches_its_member() -> None:
    """docs/product/spaces.md, rule 1: a handle "and the same rule draws the chip": what the chip
    shows, typed back, reaches the member.
    """
    scout = Member("hrn_scout", "harness", "Scout!")
    shown = display_handle(scout.name)
    assert shown == "@Scout", "the chip shows only what an @ can carry"
    assert resolved(f"{shown} go", [scout, LEDGER]) == [scout.id]
    assert resolved("@Scout! go", [scout, LEDGER]) == [scout.id]


def test_a_first_word_ending_in_a_full_stop_reaches_its_member() -> None:
    """docs/product/messages.md, Message: a handle is a name's first word, so "Dr." reaches Dr.
    Who."""
    who = Member("usr_who", "person", "Dr. Who")
    assert "dr" in handles_of(who.name)
    assert resolved("ask @Dr. about it", [who, LEDGER]) == [who.id]


# Properties

WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
# A name's word starts with a letter or digit, as the handles a mention can hold do.
name_words = st.text(alphabet=WORD_CHARS, min_size=1, max_size=8)
names = st.builds(
    lambda words, joiner: joiner.join(words),
    st.lists(name_words, min_size=1, max_size=3),
    st.sampled_from([" ", " · ", "  "]),
)
# Plain words carry no @, so only the tokens made of handles can mention anybody.
plain_words = st.text(
    alphabet=st.characters(blacklist_characters="@", blacklist_categories=("Cs", "Z", "Cc")),
    min_size=1,
    max_size=10,
)


@st.composite
def rooms(draw: st.DrawFn) -> list[Member]:
    room_names = draw(st.lists(names, min_size=1, max_size=6))
    kinds = draw(
        st.lists(
            st.sampled_from(["person", "harness"]),
            min_size=len(room_names),
            max_size=len(room_names),
        )
    )
    return [
        Member(f"p{i}", kind, name)
        for i, (kind, name) in enumerate(zip(kinds, room_names, strict=True))
    ]


def cased(handle: str, how: str) -> str:
    return {"lower": handle.lower(), "upper": handle.upper(), "swap": handle.swapcase()}[how]


@st.composite
def texts_for(draw: st.DrawFn, room: list[Member]) -> tuple[str, set[str]]:
    """A text of plain words and @handle tokens of the room's members, and the handles used."""
    all_handles = sorted({h for m in room for h in handles_of(m.name)} | {"all"})
    tokens: list[str] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        if all_handles and draw(st.booleans()):
            handle = draw(st.sampled_from(all_handles))
            how = draw(st.sampled_from(["lower", "upper", "swap"]))
            after = draw(st.sampled_from(["", ",", ".", "!", "?", ":", ")"]))
            tokens.append(f"@{cased(handle, how)}{after}")
            used.add(handle)
        else:
            tokens.append(draw(plain_words))
    return " ".join(tokens), used


@given(st.data())
def test_exactly_the_members_whose_handles_appear_are_resolved(data: st.DataObject) -> None:
    """docs/product/messages.md, Message: every member a written handle reaches is mentioned, and
    nobody else; @all is said, and names no member.
    """
    room = data.draw(rooms())
    text, used = data.draw(texts_for(room))
    ids, said_all = resolve_mentions(text, room)
    expected = {m.id for m in room if handles_of(m.name) & (used - {"all"})}
    assert set(ids) == expected
    assert said_all == ("all" in used)


@given(rooms(), st.text())
def test_resolve_returns_member_ids_once_each(room: list[Member], text: str) -> None:
    """docs/product/messages.md, Message: mentions are "the participant ids", each named once."""
    ids, _ = resolve_mentions(text, room)
    assert len(ids) == len(set(ids))
    assert set(ids) <= {m.id for m in room}


@given(st.text())
def test_mentioned_handles_are_lower_case_and_never_repeat(text: str) -> None:
    """docs/product/messages.md, Message: handles are compared without regard to case."""
    found = mentioned_handles(text)
    assert len(found) == len(set(found))
    assert all(h == h.lower() and h for h in found)


@given(rooms(), st.data())
def test_the_displayed_handle_of_a_name_reaches_its_member(
    room: list[Member], data: st.DataObject
) -> None:
    """docs/product/spaces.md, rule 1: the same rule draws the chip, so the handle shown reaches."""
    member = data.draw(st.sampled_from(room))
    shown = display_handle(member.name)
    if shown is None:
        assert handles_of(member.name) == set()
        return
    # "@all" is the room's keyword (test_all_is_not_a_member_named_all), never a member.
    assume(shown.lower() != "@all")
    assert shown[1:].lower() in handles_of(member.name)
    assert member.id in resolve_mentions(f"hey {shown}, look", room)[0]
