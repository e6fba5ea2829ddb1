"""Who a write is sent as (ws.actor_for): a harness's token may name one of its agents as
the event's actor; nobody else names anybody (docs/product/websocket.md, Speaking as one)."""

from __future__ import annotations

from typing import Any

import pytest

from chips_gateway.auth import Principal
from chips_gateway.errors import ChipsError
from chips_gateway.ws import actor_for

pytestmark = pytest.mark.unit

HARNESS = Principal("crd_1", "ws_1", "hrn_scout", "harness", "Scout", "member", "usr_a")
PERSON = Principal("crd_2", "ws_1", "usr_a", "person", "Arjun", "owner", None)


def test_a_harness_names_an_agent_and_the_token_says_whose() -> None:
    event: dict[str, Any] = {"type": "message.post", "actor": {"kind": "agent", "id": "agt_1"}}
    assert actor_for(HARNESS, event) == {
        "kind": "agent",
        "id": "agt_1",
        "harness_id": "hrn_scout",
    }
    assert "actor" not in event, "the actor is taken out of the event"


def test_without_actor_the_token_s_participant_speaks() -> None:
    assert actor_for(HARNESS, {"type": "message.post"}) == {"kind": "harness", "id": "hrn_scout"}


@pytest.mark.parametrize(
    "named",
    [
        {"kind": "harness", "id": "hrn_scout"},
        {"kind": "person", "id": "usr_a"},
        {"kind": "agent"},
        {"kind": "agent", "id": "hrn_scout"},
        {"kind": "agent", "id": "agt_1", "harness_id": "hrn_other"},
        {"kind": "agent", "id": "agt_1", "name": "J1"},
        "agt_1",
    ],
)
def test_a_harness_names_only_an_agent(named: Any) -> None:
    with pytest.raises(ChipsError) as caught:
        actor_for(HARNESS, {"type": "message.post", "actor": named})
    assert (caught.value.code, caught.value.extra.get("field")) == ("invalid_event", "actor")


def test_a_person_names_nobody() -> None:
    with pytest.raises(ChipsError) as caught:
        actor_for(PERSON, {"type": "message.post", "actor": {"kind": "agent", "id": "agt_1"}})
    assert caught.value.code == "invalid_event"
