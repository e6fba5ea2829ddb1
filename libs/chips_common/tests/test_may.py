"""What a person may do in a room and on its cards (chips_common.rules.may): one case per
rule the door decides an act by."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chips_common.rules import may
from chips_common.rules.may import Candidate, Card, Member, Room, card_state, room_acts

GROUP = Room("group", "open", False)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_nobody_outside_the_room_may_do_anything() -> None:
    assert room_acts(GROUP, "per_a", None, "owner") == may.NOTHING


def test_the_owner_of_a_group_may_do_every_room_act() -> None:
    acts = room_acts(GROUP, "per_a", "owner", "member")
    assert (acts.rename, acts.archive, acts.unarchive) == (True, True, False)
    assert (acts.lock, acts.unlock, acts.delete) == (True, False, "erase")
    assert (acts.pause, acts.pin, acts.take_back) == (True, True, True)


def test_a_member_changes_the_room_but_neither_locks_nor_deletes_it() -> None:
    acts = room_acts(GROUP, "per_b", "member", "member")
    assert acts.rename and acts.archive and not acts.lock and acts.delete is None
    assert not acts.take_back


def test_a_workspace_admin_locks_and_deletes_a_room_they_only_belong_to() -> None:
    acts = room_acts(GROUP, "per_b", "member", "admin")
    assert acts.lock and acts.delete == "erase" and acts.take_back


def test_a_guest_talks_pauses_and_leaves_only() -> None:
    members = [Member("per_a", "owner"), Member("per_g", "guest")]
    acts = room_acts(GROUP, "per_g", "guest", "guest", members, [Candidate("per_c", "person")])
    assert not (acts.rename or acts.archive or acts.lock or acts.pin or acts.take_back)
    assert acts.delete is None and acts.pause
    assert acts.remove == ("per_g",) and acts.add == ()


def test_a_locked_room_is_neither_renamed_archived_nor_deleted_but_unlocked() -> None:
    locked = Room("group", "open", True)
    acts = room_acts(locked, "per_a", "owner", "member")
    assert not (acts.rename or acts.archive or acts.lock) and acts.delete is None
    assert acts.unlock and acts.pin


def test_an_archived_room_is_unarchived_and_not_archived_again() -> None:
    acts = room_acts(Room("group", "closed", False), "per_a", "owner", "member")
    assert acts.unarchive and not acts.archive


def test_a_thread_offers_only_pausing_its_agents_and_its_lines() -> None:
    members = [Member("per_a", "owner")]
    acts = room_acts(Room("thread", "open", False), "per_a", "owner", "owner", members)
    assert not (acts.rename or acts.archive or acts.lock or acts.unlock)
    assert acts.delete is None and acts.remove == () and acts.add == ()
    assert acts.pause and acts.pin


def test_a_home_is_never_archived_nor_deleted() -> None:
    home = Room("direct", "open", False, home_of="hrn_1")
    acts = room_acts(home, "per_a", "owner", "owner")
    assert acts.rename and not acts.archive and acts.delete is None


def test_deleting_a_direct_room_nobody_could_open_again_archives_it() -> None:
    direct = Room("direct", "open", False)
    assert room_acts(direct, "per_a", "owner", "member").delete == "archive"
    closed = Room("direct", "closed", False)
    assert room_acts(closed, "per_a", "owner", "member").delete is None
    keyed = Room("direct", "open", False, key="k")
    assert room_acts(keyed, "per_a", "owner", "member").delete == "erase"


def test_only_the_owner_takes_others_out_and_nobody_a_main_agent_or_a_harness_behind() -> None:
    members = [
        Member("per_a", "owner"),
        Member("per_b", "member"),
        Member("hrn_1", "agents"),
        Member("agt_1", "member", "Lead", main_agent=True),
    ]
    assert room_acts(GROUP, "per_a", "owner", "member", members).remove == ("per_a", "per_b")
    assert room_acts(GROUP, "per_b", "member", "admin", members).remove == ("per_b",)


def test_who_may_be_added() -> None:
    others = [
        Candidate("per_c", "person"),
        Candidate("hrn_2", "harness"),
        Candidate("agt_2", "agent", "Helper"),
        Candidate("agt_3", "agent", "Gone", active=False),
        Candidate("agt_4", "agent", "Lead", main=True),
    ]
    assert room_acts(GROUP, "per_a", "member", None, (), others).add == (
        "per_c",
        "hrn_2",
        "agt_2",
    )
    main_room = Room("direct", "open", False, home_of="hrn_2")
    main = [Candidate("agt_4", "agent", "Lead", main=True, main_home_here=True), *others]
    added = room_acts(main_room, "per_a", "owner", None, (), main, main_room=True).add
    assert added == ("agt_4", "per_c")
    closed = room_acts(Room("group", "closed", False), "per_a", "owner", None, (), others).add
    assert closed == ("per_c", "hrn_2")


def test_an_approval_is_open_to_its_deciders_in_the_room() -> None:
    card = Card("approval", False, None, "running", owner_id="per_a", answerers=("per_b",))
    assert card_state(card, "per_a", True, NOW) == "open"
    assert card_state(card, "per_b", True, NOW) == "open"
    assert card_state(card, "per_c", True, NOW) == "theirs"
    assert card_state(card, "per_a", False, NOW) == "theirs"


def test_a_question_is_anybodys_in_the_room() -> None:
    card = Card("question", False, None, "paused")
    assert card_state(card, "per_c", True, NOW) == "open"


def test_a_card_answered_expired_or_of_an_ended_run_takes_no_answer() -> None:
    assert card_state(Card("question", True, None, None), "per_a", True, NOW) == "answered"
    soon = Card("approval", False, NOW, "running", owner_id="per_a")
    assert card_state(soon, "per_a", True, NOW) == "expired"
    later = Card("approval", False, NOW + timedelta(seconds=1), "running", owner_id="per_a")
    assert card_state(later, "per_a", True, NOW) == "open"
    assert card_state(Card("question", False, None, "completed"), "per_a", True, NOW) == "ended"
    assert card_state(Card("question", False, None, None), "per_a", True, NOW) == "open"
