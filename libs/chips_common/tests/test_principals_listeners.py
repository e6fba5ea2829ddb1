"""Which gateways a principals notice waits for (docs/adr/0172)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chips_common.nats.principals import (
    HERE_EVERY,
    HERE_LAPSE,
    Listeners,
    heard_here,
    here,
    unconfirmed,
)


def test_a_gateways_word_reads_back() -> None:
    assert heard_here(here("gw_a")) == ("gw_a", False)
    assert heard_here(here("gw_a", gone=True)) == ("gw_a", True)


def test_a_word_that_names_no_replica_is_none() -> None:
    for data in (b"", b"[]", b"{}", b'{"replica": ""}', b'{"replica": 3}', b"not json"):
        assert heard_here(data) is None


def test_a_gateway_is_waited_for_until_it_lapses_or_goes() -> None:
    heard = Listeners()
    heard.heard("gw_a", 0.0)
    heard.heard("gw_b", 0.0)
    assert heard.expected(HERE_LAPSE) == {"gw_a", "gw_b"}
    heard.gone("gw_b")
    assert heard.expected(1.0) == {"gw_a"}
    assert heard.expected(HERE_LAPSE + 0.1) == frozenset()


def test_a_gateway_saying_it_is_here_on_time_never_lapses() -> None:
    heard = Listeners()
    for beat in range(100):
        heard.heard("gw_a", beat * HERE_EVERY)
        assert heard.expected(beat * HERE_EVERY + HERE_EVERY * 3) == {"gw_a"}


def test_gone_for_a_gateway_never_heard_is_nothing() -> None:
    heard = Listeners()
    heard.gone("gw_x")
    assert heard.expected(0.0) == frozenset()


@given(st.frozensets(st.sampled_from("abcdef")), st.sets(st.sampled_from("abcdefgh")))
def test_a_notice_waits_for_exactly_the_expected_not_yet_confirmed(
    expected: frozenset[str], confirmed: set[str]
) -> None:
    left = unconfirmed(expected, confirmed)
    assert left <= expected
    assert not left & confirmed
    assert left | (expected & confirmed) == expected
