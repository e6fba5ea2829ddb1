"""Signed attachment URLs: bound to one file, one credential, one way of serving, ten minutes.

docs/product/websocket.md: each attachment reaches a harness "with a signed URL the harness may
fetch for ten minutes"; docs/architecture/design.md §6: HMAC over (attachment, expiry, token id).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from chips_common.rules.signed_urls import check_signature, signed_path, url_key

pytestmark = pytest.mark.unit

KEY = url_key("current")
OLD = url_key("previous")
NOW = 1_800_000_000.0


def parts(path: str) -> tuple[str, dict[str, str]]:
    split = urlsplit(path)
    return split.path, {k: v[0] for k, v in parse_qs(split.query).items()}


def check(
    path: str, keys: list[bytes], disposition: str = "inline", now: float = NOW
) -> str | None:
    route, q = parts(path)
    attachment_id = route.split("/")[3]
    return check_signature(
        keys, attachment_id, q.get("exp"), q.get("tok"), disposition, q.get("sig"), now
    )


def test_a_fresh_url_is_good_for_ten_minutes() -> None:
    path, exp = signed_path(KEY, "att_1", "crd_1", "inline", NOW)
    assert exp == int(NOW) + 600
    assert path.startswith("/v1/attachments/att_1?exp=")
    assert check(path, [KEY]) is None
    assert check(path, [KEY], now=NOW + 599) is None
    assert "expired" in (check(path, [KEY], now=NOW + 600) or "")


def test_a_previous_key_is_still_accepted_while_keys_rotate() -> None:
    path, _ = signed_path(OLD, "att_1", "crd_1", "inline", NOW)
    assert check(path, [KEY]) is not None
    assert check(path, [KEY, OLD]) is None


def test_the_signature_binds_the_way_the_file_is_served() -> None:
    path, _ = signed_path(KEY, "att_1", "crd_1", "attachment", NOW)
    assert check(path, [KEY], disposition="attachment") is None
    assert check(path, [KEY], disposition="inline") is not None
    thumb, _ = signed_path(KEY, "att_1", "crd_1", "thumbnail", NOW)
    assert thumb.startswith("/v1/attachments/att_1/thumbnail?")


@pytest.mark.parametrize(
    ("field", "value"),
    [("exp", "1800000900"), ("tok", "crd_2"), ("sig", "0" * 64), ("exp", "1e9"), ("sig", "é")],
)
def test_any_changed_part_is_refused(field: str, value: str) -> None:
    path, _ = signed_path(KEY, "att_1", "crd_1", "inline", NOW)
    _, q = parts(path)
    q[field] = value
    assert check_signature([KEY], "att_1", q["exp"], q["tok"], "inline", q["sig"], NOW)
    assert check_signature(
        [KEY],
        "att_2",
        *(parts(path)[1][k] for k in ("exp", "tok")),
        "inline",
        parts(path)[1]["sig"],
        NOW,
    )


def test_a_missing_part_is_refused() -> None:
    assert check_signature([KEY], "att_1", None, "crd_1", "inline", "00", NOW)
    assert check_signature([KEY], "att_1", "1", None, "inline", "00", NOW)
    assert check_signature([KEY], "att_1", "1", "crd_1", "inline", None, NOW)
