"""What the edge checks of a client's write before it travels, on the socket and over HTTP."""

from __future__ import annotations

import orjson
from typing_extensions import TypeIs

from chips_common.events import CATALOGUE, InvalidEvent, JsonObject, parse_event, said_on_run
from chips_gateway.auth import Principal
from chips_gateway.edge import MAX_INT, has_nul
from chips_gateway.errors import ChipsError


def is_count(value: object) -> TypeIs[int]:
    """A whole number from 0 to the largest seq Postgres holds (JSON true is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT


def actor_for(principal: Principal, event: JsonObject) -> dict[str, str]:
    """Who an event is sent as: the credential's participant, or, for a harness's token,
    one of its agents the event names as its ``actor`` (taken out of the event here).

    Only an agent may be named, and only by a harness: Chips writes the harness beside it
    from the token, and the door checks the agent is that harness's (docs/adr/0070).
    """
    if "actor" not in event:
        return principal.actor
    named = event.pop("actor")
    if principal.kind != "harness":
        raise ChipsError(
            "invalid_event", "actor is filled in by Chips; leave it out", field="actor"
        )
    agent_id = named.get("id") if isinstance(named, dict) else None
    ok = (
        isinstance(named, dict)
        and named.get("kind") == "agent"
        and isinstance(agent_id, str)
        and agent_id.startswith("agt_")
        and len(agent_id) <= 100
        and set(named) <= {"kind", "id", "harness_id"}
        and named.get("harness_id", principal.participant_id) == principal.participant_id
    )
    if not ok or not isinstance(agent_id, str):
        raise ChipsError(
            "invalid_event",
            'a harness speaks as one of its agents with actor {"kind": "agent", "id": "agt_…"}',
            field="actor",
        )
    return {"kind": "agent", "id": agent_id, "harness_id": principal.participant_id}


def check_writable(event: JsonObject, max_bytes: int) -> None:
    """Refuse what no client may write, before it travels to the eventlog.

    An event over ``max_bytes`` (as compact JSON) is refused here, so that nothing too big
    for the path reaches NATS or the eventlog; so is a NUL character, which Postgres's
    jsonb cannot store.
    """
    try:
        encoded = orjson.dumps(event)
    except (TypeError, orjson.JSONEncodeError):
        raise ChipsError("invalid_event", "an event is a JSON object") from None
    if len(encoded) > max_bytes:
        raise ChipsError(
            "too_large",
            f"this event is {len(encoded)} bytes; an event is at most {max_bytes} bytes",
            size=len(encoded),
            limit=max_bytes,
        )
    if has_nul(encoded):
        raise ChipsError("invalid_event", "an event may not hold the NUL character (\\u0000)")
    # A reply on the run leaves its room to the door, which knows the run's (said_on_run);
    # so does a post naming no room, which the door holds for a free agent and refuses from
    # anybody else (docs/adr/0071). The rest of it is checked here as any post.
    roomless = event.get("type") == "message.post" and "space_id" not in event
    checked = {**event, "space_id": "spc_of_the_run"} if said_on_run(event) or roomless else event
    try:
        body = parse_event(checked)
    except InvalidEvent as exc:
        raise ChipsError("invalid_event", exc.message, field=exc.field) from None
    if not CATALOGUE[body.type].client_writable:
        raise ChipsError("forbidden", f"{body.type} is written by Chips itself", field="type")
