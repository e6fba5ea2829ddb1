"""An error body becomes the exception of its code."""

from __future__ import annotations

from chips_sdk import ChipsError, IdempotencyKeyReused


def test_a_reused_key_is_its_own_exception_with_the_first_seq() -> None:
    body = {
        "code": "idempotency_key_reused",
        "message": "this idempotency key was used for another request (seq 7)",
        "idempotency_key": "k-1",
        "field": "idempotency_key",
        "seq": 7,
    }
    error = ChipsError.from_body(body, 422)
    assert isinstance(error, IdempotencyKeyReused)
    assert error.extra == {"seq": 7} and error.idempotency_key == "k-1" and error.status == 422
