"""What the notifier's consumer keeps of spaces to skip events that notify nobody
(``chips_notifier.consumer.Spaces``; docs/adr/0132)."""

from __future__ import annotations

from typing import Any

import pytest

from chips_notifier.consumer import Spaces

pytestmark = pytest.mark.unit

OWNER, BEA, HARNESS = "usr_owner", "usr_bea", "hrn_ledger"
HOME, ROOM = "spc_home", "spc_room"


def event(type_: str, seq: int, actor: str = OWNER, **fields: Any) -> dict[str, Any]:
    return {
        "type": type_,
        "seq": seq,
        "workspace_id": "ws_1",
        "actor": {"id": actor},
        "space_id": HOME,
        **fields,
    }


def post(seq: int, actor: str = OWNER, space_id: str = HOME) -> dict[str, Any]:
    return event("message.post", seq, actor, space_id=space_id, text="hi")


def test_a_space_not_folded_yet_may_notify() -> None:
    known = Spaces()
    assert known.may_act(post(5)) is True
    assert known.may_act(post(6, space_id=ROOM)) is True


def test_a_group_rooms_plain_words_and_a_persons_words_to_her_harness_are_skipped() -> None:
    known = Spaces()
    known.put_kind(ROOM, "group")
    known.put_kind(HOME, "direct")
    known.put_people("ws_1", HOME, frozenset({OWNER}), 4)
    assert known.may_act(post(5, space_id=ROOM)) is False
    assert known.may_act(post(6)) is False
    # The harness's words in its home tell its owner.
    assert known.may_act(post(7, actor=HARNESS)) is True


def test_a_membership_change_after_the_people_were_read_forgets_them() -> None:
    known = Spaces()
    known.put_kind(HOME, "direct")
    known.put_people("ws_1", HOME, frozenset({OWNER}), 4)
    assert known.may_act(event("membership.added", 9, participant_id=BEA)) is False
    assert known.may_act(post(10)) is True  # Bea may be in it now
    # A fold that reads them as of the change or later is believed again.
    known.put_people("ws_1", HOME, frozenset({OWNER, BEA}), 10)
    assert known.may_act(post(11)) is True
    known.put_people("ws_1", HOME, frozenset({OWNER}), 12)
    assert known.may_act(post(13)) is False


def test_a_change_seen_before_an_older_read_is_stored_still_counts() -> None:
    known = Spaces()
    known.put_kind(HOME, "direct")
    assert known.may_act(event("membership.removed", 9, participant_id=BEA)) is False
    known.put_people("ws_1", HOME, frozenset({OWNER, BEA}), 8)  # read as of before it
    assert known.may_act(post(10)) is True


def test_a_participant_change_in_the_workspace_forgets_every_direct_spaces_people() -> None:
    known = Spaces()
    known.put_kind(HOME, "direct")
    known.put_people("ws_1", HOME, frozenset({OWNER}), 4)
    known.may_act({"type": "participant.joined", "seq": 6, "workspace_id": "ws_1"})
    assert known.may_act(post(7)) is True
