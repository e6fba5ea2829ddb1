"""A used idempotency key: a re-send is a duplicate, another request is refused."""

from __future__ import annotations

from chips_common.append import fingerprint_of
from chips_eventlog.keys import REUSED, Seen, check_reuse

A = fingerprint_of({"events": [{"type": "message.post", "space_id": "spc_1", "text": "a"}]})
B = fingerprint_of({"events": [{"type": "message.post", "space_id": "spc_1", "text": "b"}]})


def test_the_fingerprint_is_the_request_whatever_the_order_of_its_fields() -> None:
    reordered = {"events": [{"text": "a", "space_id": "spc_1", "type": "message.post"}]}
    assert fingerprint_of(reordered) == A != B


def test_the_same_request_again_is_a_re_send() -> None:
    assert check_reuse(Seen("ws", [4], A), A) is None


def test_another_request_under_a_used_key_is_refused_naming_the_first_seq() -> None:
    refusal = check_reuse(Seen("ws", [3, 4], A), B)
    assert refusal is not None
    assert refusal.code == REUSED == "idempotency_key_reused"
    assert refusal.data == {"seq": 4} and "seq 4" in refusal.message
    assert refusal.field == "idempotency_key"


def test_a_first_request_that_logged_nothing_is_named_without_a_seq() -> None:
    refusal = check_reuse(Seen("ws", [], A), B)
    assert refusal is not None and refusal.data == {"seq": None}


def test_keys_without_a_fingerprint_are_not_compared() -> None:
    """Chips' own writers send none; keys kept before fingerprints were have none."""
    assert check_reuse(Seen("ws", [4], None), B) is None
    assert check_reuse(Seen("ws", [4], A), None) is None
