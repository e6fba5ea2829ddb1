"""An agent attached in another's place is the author of what that one said in the room
(docs/product/websocket.md, Agents; docs/adr/0136): the lines read as of a later message."""

from __future__ import annotations

from typing import Any

from chips_common.rules.context_lines import author_now, lines_of

NAMES = {
    "hrn_scout": {"id": "hrn_scout", "kind": "harness", "name": "Scout"},
    "agt_one": {"id": "agt_one", "kind": "agent", "name": "One"},
    "agt_two": {"id": "agt_two", "kind": "agent", "name": "Two"},
    "usr_maya": {"id": "usr_maya", "kind": "person", "name": "Maya Chen"},
}


def who(pid: str) -> dict[str, Any]:
    return NAMES[pid]


def said(seq: int, by: str, text: str) -> dict[str, Any]:
    return {
        "type": "message.post",
        "seq": seq,
        "ts": "2026-12-04T05:00:00Z",
        "actor": {"id": by},
        "message_id": f"msg_{seq}",
        "text": text,
    }


def replaced(seq: int, old: str, new: str) -> dict[str, Any]:
    return {
        "type": "membership.replaced",
        "seq": seq,
        "ts": "2026-12-04T05:00:00Z",
        "actor": {"id": "hrn_scout"},
        "space_id": "spc_1",
        "participant_id": new,
        "replaced": old,
    }


def test_what_the_replaced_one_said_reads_as_the_agent_s() -> None:
    events = [
        said(1, "hrn_scout", "F is drawn."),
        said(2, "usr_maya", "Lovely."),
        replaced(3, "hrn_scout", "agt_one"),
        said(4, "agt_one", "G next."),
    ]
    froms = [line["from"]["name"] for line in lines_of(events, who)]
    assert froms == ["One", "Maya Chen", "One"]


def test_a_chain_of_attaches_ends_at_the_last_agent() -> None:
    events = [
        said(1, "hrn_scout", "F is drawn."),
        replaced(2, "hrn_scout", "agt_one"),
        said(3, "agt_one", "G next."),
        replaced(4, "agt_one", "agt_two"),
    ]
    assert [line["from"]["id"] for line in lines_of(events, who)] == ["agt_two", "agt_two"]


def test_read_back_in_chunks_the_newer_attach_still_counts() -> None:
    """A caller reading the room backwards passes the same changes, newest chunk first."""
    changes: dict[str, str | None] = {}
    newer = lines_of(
        [said(2, "usr_maya", "Lovely."), replaced(3, "hrn_scout", "agt_one")], who, changes
    )
    older = lines_of([said(1, "hrn_scout", "F is drawn.")], who, changes)
    assert [line["from"]["id"] for line in older + newer] == ["agt_one", "usr_maya"]


def test_nobody_replaced_reads_as_themselves_and_a_cycle_ends() -> None:
    assert author_now("usr_maya", {}) == "usr_maya"
    loop = {"taken_by:agt_one": "agt_two", "taken_by:agt_two": "agt_one"}
    assert author_now("agt_one", loop) == "agt_two"
