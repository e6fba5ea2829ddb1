"""The checks at the edge: request targets, Origin, event size (pure functions)."""

from __future__ import annotations

import pytest

from chips_gateway.edge import MAX_INT, origin_allowed, origin_of, target_problem
from chips_gateway.errors import ChipsError
from chips_gateway.ws import check_writable, is_count

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/v1/events", b"since=100000000000000000000"),
        ("/v1/events", b"since=9223372036854775808"),
        ("/v1/events", b"space_id=%00"),
        ("/v1/spaces/%00", b""),
        ("/v1/spaces/\x00", b""),
    ],
)
def test_targets_postgres_cannot_take_are_refused(path: str, query: bytes) -> None:
    assert target_problem(path, query) is not None


@pytest.mark.parametrize(
    "query", [b"", b"since=0", b"since=9223372036854775807", b"space_id=spc_1&limit=5", b"x="]
)
def test_ordinary_targets_pass(query: bytes) -> None:
    assert target_problem("/v1/events", query) is None


def test_origin_absent_is_a_client_that_is_not_a_browser() -> None:
    assert origin_allowed(None, "chips.example:8080", False, [])


def test_same_origin_is_the_app_the_gateway_serves() -> None:
    assert origin_allowed("http://chips.example:8080", "chips.example:8080", False, [])
    assert origin_allowed("https://chips.example", "chips.example", True, [])
    assert not origin_allowed("http://chips.example", "chips.example", True, [])


def test_foreign_origins_are_refused_unless_listed() -> None:
    assert not origin_allowed("https://evil.example", "chips.example", True, [])
    assert not origin_allowed("null", "chips.example", True, [])
    assert origin_allowed("https://App.Example:443", "chips.example", True, ["https://app.example"])
    assert not origin_allowed(
        "https://app.example:8443", "chips.example", True, ["https://app.example"]
    )
    assert origin_allowed("https://anything.example", "chips.example", True, ["*"])


def test_origin_of_drops_default_ports() -> None:
    assert origin_of("HTTPS://Chips.Example:443/") == "https://chips.example"
    assert origin_of("http://127.0.0.1:8080") == "http://127.0.0.1:8080"


def test_counts_are_whole_numbers_a_bigint_holds() -> None:
    assert is_count(0) and is_count(MAX_INT)
    for bad in (-1, MAX_INT + 1, 1.0, True, "1", None, float("inf")):
        assert not is_count(bad)


def post(text: str) -> dict[str, object]:
    return {"type": "message.post", "space_id": "spc_1", "text": text}


def test_an_event_over_the_limit_is_refused_as_too_large() -> None:
    with pytest.raises(ChipsError) as refused:
        check_writable({**post("x"), "text": "x" * 600_000}, 256 * 1024)
    assert refused.value.code == "too_large"
    assert refused.value.extra["limit"] == 256 * 1024


def test_the_largest_legal_text_fits_the_event_limit() -> None:
    # 32,000 characters, each the widest UTF-8 there is.
    check_writable(post("\U0001f600" * 32_000), 256 * 1024)


def test_a_nul_character_is_refused_before_it_reaches_postgres() -> None:
    with pytest.raises(ChipsError) as refused:
        check_writable(post("a\x00b"), 256 * 1024)
    assert refused.value.code == "invalid_event"
