"""The muted line a room operation draws (docs/product/spaces.md, Retitling and archiving).

docs/adr/0006: the line is drawn from the operation's own event, by one pure function.
"""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.rules.lines import system_line

pytestmark = pytest.mark.unit

NAMES = {"usr_a": "Arjun Rao", "usr_m": "Maya Chen", "hrn_s": "Scout"}


def line(**event: Any) -> str | None:
    event.setdefault("actor", {"kind": "person", "id": "usr_a"})
    return system_line(event, lambda pid: NAMES.get(pid, pid))


def test_adding_and_joining() -> None:
    """docs/product/spaces.md, Several harnesses and people in one space: who added whom."""
    assert line(type="membership.added", participant_id="usr_m") == "Arjun Rao added Maya Chen"
    joined = line(
        type="membership.added", participant_id="hrn_s", actor={"kind": "harness", "id": "hrn_s"}
    )
    assert joined == "Scout joined"


def test_removing_and_leaving() -> None:
    """docs/product/spaces.md, Leaving one: a leave is a membership.removed naming yourself."""
    assert line(type="membership.removed", participant_id="usr_m") == "Arjun Rao removed Maya Chen"
    assert line(type="membership.removed", participant_id="usr_a") == "Arjun Rao left"


def test_a_harness_only_behind_its_agents_comes_and_goes_without_a_line() -> None:
    """docs/adr/0070: the harness's own row behind its agents is never listed or drawn."""
    for kind in ("membership.added", "membership.removed"):
        assert line(type=kind, participant_id="hrn_s", standing="agents") is None
        assert line(type=kind, participant_id="hrn_s") is not None


def test_retitling_archiving_and_unarchiving() -> None:
    """docs/product/spaces.md, Retitling and archiving: a muted line saying who did it."""
    assert line(type="space.updated", title="Launch") == "Arjun Rao renamed the room to “Launch”"
    assert line(type="space.updated", state="closed") == "Arjun Rao archived the room"
    assert line(type="space.updated", state="open") == "Arjun Rao unarchived the room"
    assert (
        line(type="space.updated", title="Old", state="closed")
        == "Arjun Rao renamed the room to “Old” and archived it"
    )


def test_chips_itself_is_named_chips() -> None:
    """Whatever Chips does on its own is said in its own name."""
    assert (
        line(type="space.updated", state="closed", actor={"kind": "system", "id": "system"})
        == "Chips archived the room"
    )


def test_other_events_draw_no_line() -> None:
    """Words are messages, not lines; opening a room is the room itself."""
    assert line(type="message.post", text="hi") is None
    assert line(type="space.created") is None


def test_the_lead_and_what_it_took() -> None:
    """docs/product/websocket.md, Who leads: the room shows one quiet line under words nobody
    took."""
    assert (
        line(type="space.lead_set", agent_id="hrn_s") == "Arjun Rao made Scout the room\u2019s lead"
    )
    assert line(type="space.lead_set", agent_id=None) == "Arjun Rao left the room without a lead"
    took = line(
        type="lead.handed",
        agent_id="hrn_s",
        message_id="msg_1",
        said_by="usr_m",
        actor={"kind": "system", "id": "system"},
    )
    assert took == "Scout took it as the lead: it was nobody\u2019s turn"
