"""Delivery shaping for runs: receipt frames and ``resolved_elsewhere``.

docs/product/websocket.md, Receipts: a person's words into a room with a live run are answered by
the ack and then a ``receipt`` frame; the run's harness is sent the same frame beside the
event, keyed the same way. The door decided the disposition and wrote it into the event
(``receipt``), so a live delivery and a replay send the same receipt.

First answer wins: an ``approval.resolved`` on a person's socket that did not send it
carries ``resolved_elsewhere: true``. Which socket sent it is the socket's own knowledge
(the keys it wrote), so this is the one per-socket mark of an event.
"""

from __future__ import annotations

from chips_common.append import AppendAnswer
from chips_common.events.wire import DeliveredJson, EventJson, ReceiptJson, event_json
from chips_gateway.auth import Principal
from chips_gateway.frames import ReceiptFrame

# Event types whose decider's key is remembered by the socket that sent them.
DECISIONS = frozenset({"approval.resolved"})


def receipt_frame(receipt: ReceiptJson) -> ReceiptFrame:
    return ReceiptFrame(
        frame="receipt",
        idempotency_key=receipt["idempotency_key"],
        disposition=receipt["disposition"],
        run_ids=receipt["run_ids"],
    )


def receipt_after_ack(answer: AppendAnswer, key: str) -> ReceiptFrame | None:
    """The receipt that follows the sender's ack, when the door wrote one."""
    if not answer.ok or not answer.events:
        return None
    receipt = event_json(answer.events[-1]).get("run_receipt")
    if receipt is None or receipt.get("idempotency_key") != key:
        return None
    return receipt_frame(receipt)


def receipt_beside(principal: Principal, event: EventJson) -> ReceiptFrame | None:
    """The receipt a run's harness is sent beside the event it is about."""
    receipt = event.get("run_receipt")
    if (
        principal.kind != "harness"
        or receipt is None
        or principal.participant_id not in receipt.get("harness_ids", ())
    ):
        return None
    return receipt_frame(receipt)


def mark_elsewhere(
    principal: Principal, event: DeliveredJson, sent_keys: set[str]
) -> DeliveredJson:
    """An approval decided by another socket says so on a person's socket."""
    if event.get("type") not in DECISIONS or principal.kind != "person":
        return event
    mine = (
        event["actor"]["id"] == principal.participant_id
        and event.get("idempotency_key") in sent_keys
    )
    return event if mine else {**event, "resolved_elsewhere": True}
