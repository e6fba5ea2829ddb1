"""Message headers read as nats-py reads them, with fewer calls."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client as NatsClient

from chips_common.nats.connect import Client, header_lines

# What header blocks are made of, the awkward parts often: whitespace of every kind
# (``str.isspace`` counts \x1c-\x1f, which ``bytes.strip`` leaves), colons, line ends,
# bytes that are not ASCII or not UTF-8.
_pieces = st.sampled_from(
    [b"Nats-Msg-Id", b"traceparent", b":", b": ", b"\r\n", b" ", b"\t", b"\x1c", b"\x1f",
     b"\x0b", b"a b", b"\xc3\xa9", b"\xff", b"00-abc-01", b"", b"x"]
)  # fmt: skip
_blocks = st.lists(st.one_of(_pieces, st.binary(max_size=6)), max_size=14).map(b"".join)


@given(_blocks)
def test_a_header_block_reads_as_nats_py_reads_it(raw: bytes) -> None:
    assert header_lines(raw) == NatsClient._parse_header_lines(raw)


def test_the_services_client_reads_headers_so() -> None:
    raw = b"Nats-Msg-Id: evt_1\r\ntraceparent: 00-a-b-01\r\nbad name: x\r\n\r\n"
    assert Client._parse_header_lines(raw) == {
        "Nats-Msg-Id": "evt_1",
        "traceparent": "00-a-b-01",
    }
