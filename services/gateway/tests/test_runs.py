"""Delivery shaping for runs: receipt frames and resolved_elsewhere (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.append import AppendAnswer
from chips_gateway.auth import Principal
from chips_gateway.runs import mark_elsewhere, receipt_after_ack, receipt_beside

pytestmark = pytest.mark.unit

RECEIPT = {
    "idempotency_key": "arjun-7",
    "disposition": "queued",
    "run_ids": ["run_1"],
    "harness_ids": ["hrn_j"],
}


def who(pid: str, kind: str) -> Principal:
    return Principal("crd", "ws", pid, kind, pid, "member", None)


def decided(by: str, key: str) -> dict[str, Any]:
    return {
        "type": "approval.resolved",
        "actor": {"kind": "person", "id": by},
        "idempotency_key": key,
    }


def test_the_sender_gets_the_receipt_after_its_ack() -> None:
    answer = AppendAnswer(request_id="r", ok=True, seqs=[5], events=[{"run_receipt": RECEIPT}])
    assert receipt_after_ack(answer, "arjun-7") == {
        "frame": "receipt",
        "idempotency_key": "arjun-7",
        "disposition": "queued",
        "run_ids": ["run_1"],
    }
    assert receipt_after_ack(answer, "another-key") is None
    plain = AppendAnswer(request_id="r", ok=True, seqs=[5], events=[{"text": "hi"}])
    assert receipt_after_ack(plain, "arjun-7") is None


def test_only_the_runs_harness_gets_the_receipt_beside_the_event() -> None:
    event = {"type": "message.new", "run_receipt": RECEIPT}
    assert receipt_beside(who("hrn_j", "harness"), event) is not None
    assert receipt_beside(who("hrn_other", "harness"), event) is None
    assert receipt_beside(who("usr_a", "person"), event) is None


def test_resolved_elsewhere_unless_this_socket_decided() -> None:
    me = who("usr_a", "person")
    assert "resolved_elsewhere" not in mark_elsewhere(me, decided("usr_a", "k1"), {"k1"})
    assert mark_elsewhere(me, decided("usr_a", "k1"), set())["resolved_elsewhere"] is True
    assert mark_elsewhere(me, decided("usr_b", "k1"), {"k1"})["resolved_elsewhere"] is True
    harness = who("hrn_j", "harness")
    assert "resolved_elsewhere" not in mark_elsewhere(harness, decided("usr_b", "k"), set())
