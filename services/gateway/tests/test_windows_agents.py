"""A room window hands one turn to several agents of one harness (docs/product/websocket.md, Being
spoken to; docs/adr/0075): one context, the one that has heard least's, and a note for
each; the room shows the agents with their harness, never the harness behind them."""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.rules.context import Budget
from chips_gateway.windows import RoomWindow

pytestmark = pytest.mark.unit

NAMES = {
    "usr_a": {"id": "usr_a", "kind": "person", "name": "Arjun"},
    "hrn_j": {"id": "hrn_j", "kind": "harness", "name": "Jacobian"},
    "agt_1": {"id": "agt_1", "kind": "agent", "name": "ASCII Art"},
    "agt_2": {"id": "agt_2", "kind": "agent", "name": "J2"},
}
OWNERS = {"agt_1": "hrn_j", "agt_2": "hrn_j"}
_seq = iter(range(1, 1000))


def ev(actor: str, type_: str, **fields: Any) -> dict[str, Any]:
    kind = NAMES[actor]["kind"]
    who: dict[str, str] = {"kind": kind, "id": actor}
    if kind == "agent":
        who["harness_id"] = OWNERS[actor]
    seq = next(_seq)
    return {
        "v": 1,
        "id": f"evt_{seq:04d}",
        "seq": seq,
        "ts": "2026-10-02T18:00:00.000Z",
        "workspace_id": "ws_1",
        "actor": who,
        "type": type_,
        "space_id": "spc",
        **fields,
    }


def said(actor: str, text: str, addressed_to: list[str]) -> dict[str, Any]:
    return ev(actor, "message.post", text=text, kind="text", addressed_to=addressed_to)


def test_two_agents_share_one_turn_from_the_window() -> None:
    window = RoomWindow("spc", {}, [], True, {})
    history = [
        ev("usr_a", "space.created", kind="group", members=[]),
        ev("usr_a", "membership.added", participant_id="hrn_j", standing="agents"),
        ev("usr_a", "membership.added", participant_id="agt_1", standing="member"),
        ev("usr_a", "membership.added", participant_id="agt_2", standing="member"),
        said("usr_a", "@ASCIIArt draw the F", ["agt_1"]),
        said("agt_1", "F is drawn.", []),
    ]
    for event in history:
        window.apply(event, NAMES)
    both = said("usr_a", "G and H next", ["agt_1", "agt_2"])
    window.apply(both, NAMES)
    got = window.extras(["agt_1", "agt_2"], both, Budget(), NAMES, OWNERS)
    assert got is not None
    # J2 has heard nothing since it joined: its context, ASCII Art's own words included.
    texts = [line["text"] for line in got["context"]["lines"] if line["kind"] == "said"]
    assert texts == ["@ASCIIArt draw the F", "F is drawn."]
    assert set(got["room"]["notes"]) == {"agt_1", "agt_2"}
    members = {m["participant_id"]: m for m in got["room"]["members"]}
    assert set(members) == {"usr_a", "agt_1", "agt_2"}
    assert members["agt_1"]["harness"] == "Jacobian"
    assert "ASCII Art (Jacobian agent, @ASCIIArt)" in got["room"]["notes"]["agt_2"]
