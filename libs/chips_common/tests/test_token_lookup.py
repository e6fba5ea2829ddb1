"""How a token's participant is found, and what a replica keeps the answer under."""

from __future__ import annotations

import time

from chips_common.db.principals import token_lookup
from chips_common.rules.devices import issue_session
from chips_common.tokens import hash_token

KEY = "k" * 32


def test_an_api_key_is_found_by_its_hash() -> None:
    lookup = token_lookup("chips_sk_secret", KEY)
    assert lookup is not None
    assert (lookup.key, lookup.device_id) == (hash_token("chips_sk_secret"), None)


def test_a_session_token_is_found_by_its_device_and_kept_under_it() -> None:
    token, _ = issue_session(KEY, "dev_1")
    lookup = token_lookup(token, KEY)
    assert lookup is not None
    assert (lookup.key, lookup.device_id) == ("device:dev_1", "dev_1")
    # Two sessions of one device share the answer.
    again, _ = issue_session(KEY, "dev_1", now=time.time() + 60)
    assert again != token
    assert token_lookup(again, KEY) == lookup


def test_a_session_token_that_does_not_hold_is_nobody() -> None:
    token, _ = issue_session(KEY, "dev_1")
    assert token_lookup(token, "another" * 6) is None
    assert token_lookup(token, "") is None
    expired, _ = issue_session(KEY, "dev_1", now=1_000_000.0)
    assert token_lookup(expired, KEY) is None
