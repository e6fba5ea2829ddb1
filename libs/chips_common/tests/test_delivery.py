"""Per-recipient shaping of a logged event: ``shape_for``.

docs/product/websocket.md, What a harness hears when someone speaks: "A person’s message is logged
as message.post; a harness’s session hears it as message.new … A harness’s own message.post
comes back as it was sent … A person’s session hears every message as posted."
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chips_common.rules.delivery import shape_for

pytestmark = pytest.mark.unit

PERSON = "usr_priya"
HARNESS = "hrn_scout"
OTHER_HARNESS = "hrn_ledger"


def message_post(actor_kind: str, actor_id: str) -> dict[str, Any]:
    return {
        "v": 1,
        "id": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0KMN",
        "seq": 62,
        "ts": "2026-09-02T14:20:02.004Z",
        "workspace_id": "ws_01J9ZQ5V1M3X8K2R7T4W6Y0PQR",
        "actor": {"kind": actor_kind, "id": actor_id},
        "type": "message.post",
        "space_id": "spc_a",
        "kind": "text",
        "text": "Northwind want the PO before they hold the slot.",
        "reply_to": "msg_01J9ZQ5V1M3X8K2R7T4W6Y0ABC",
    }


def test_a_persons_post_reaches_a_harness_as_message_new() -> None:
    """A person's message.post is message.new to a harness, and nothing else changes.

    docs/product/websocket.md, What a harness hears when someone speaks.
    """
    event = message_post("person", PERSON)
    before = copy.deepcopy(event)
    shaped = shape_for(event, HARNESS, "harness")
    assert shaped == {**before, "type": "message.new"}
    assert event == before, "the logged event is not changed in place"


def test_another_harness_post_reaches_a_harness_as_message_new() -> None:
    """Somebody else's words are message.new to a harness, whoever said them."""
    shaped = shape_for(message_post("harness", OTHER_HARNESS), HARNESS, "harness")
    assert shaped["type"] == "message.new"


def test_a_harness_hears_its_own_post_as_sent() -> None:
    """A harness's own message.post comes back unchanged: that is how it knows it landed.

    docs/product/websocket.md, What a harness hears when someone speaks.
    """
    event = message_post("harness", HARNESS)
    assert shape_for(event, HARNESS, "harness") == message_post("harness", HARNESS)


@pytest.mark.parametrize(
    ("actor_kind", "actor_id"),
    [("person", PERSON), ("person", "usr_other"), ("harness", HARNESS)],
)
def test_a_person_hears_every_post_as_posted(actor_kind: str, actor_id: str) -> None:
    """A person's session hears every message as posted, whoever said it.

    docs/product/websocket.md, What a harness hears when someone speaks.
    """
    event = message_post(actor_kind, actor_id)
    assert shape_for(event, PERSON, "person") == message_post(actor_kind, actor_id)


@pytest.mark.parametrize("recipient_kind", ["person", "harness"])
@pytest.mark.parametrize(
    "event",
    [
        {
            "type": "workspace.created",
            "name": "Northwind",
            "actor": {"kind": "operator", "id": "o"},
        },
        {
            "type": "membership.added",
            "space_id": "spc_a",
            "participant_id": HARNESS,
            "actor": {"kind": "person", "id": PERSON},
        },
        {"type": "space.created", "space_id": "spc_a", "actor": {"kind": "person", "id": PERSON}},
    ],
    ids=["workspace.created", "membership.added", "space.created"],
)
def test_other_events_are_delivered_unchanged(event: dict[str, Any], recipient_kind: str) -> None:
    """Only message.post is shaped per recipient; every other event is sent as logged."""
    recipient = HARNESS if recipient_kind == "harness" else PERSON
    assert shape_for(event, recipient, recipient_kind) == event  # type: ignore[arg-type]
