"""The door's refusals for the workspace and who is in it (rules/participants.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chips_common.append import AppendRequest

pytestmark = pytest.mark.unit


def joined(pid: str, kind: str = "person", role: str = "member", **more: Any) -> dict[str, Any]:
    return {
        "type": "participant.joined",
        "participant_id": pid,
        "kind": kind,
        "name": "N",
        "role": role,
        **more,
    }


CASES: dict[str, tuple[Callable[[Any], tuple[Any, Any]], str, str]] = {
    "a person creates a workspace": (
        lambda w: (w.p(w.OWN), {"type": "workspace.created", "name": "X"}),
        "forbidden",
        "only an operator creates workspaces",
    ),
    "a workspace created twice": (
        lambda w: (w.operator, {"type": "workspace.created", "name": "X"}),
        "invalid_event",
        "this workspace already exists",
    ),
    "a participant joins twice": (
        lambda w: (w.p(w.OWN), joined(w.MEM)),
        "invalid_event",
        "that participant already exists",
    ),
    "a person's id without usr_": (
        lambda w: (w.p(w.OWN), joined("hrn_x")),
        "invalid_event",
        "a person's id starts with usr_",
    ),
    "a harness's id without hrn_": (
        lambda w: (w.p(w.OWN), joined("usr_x", "harness", owner_id=w.OWN)),
        "invalid_event",
        "a harness's id starts with hrn_",
    ),
    "an operator adds a member": (
        lambda w: (w.operator, joined("usr_new")),
        "forbidden",
        "an operator adds only the workspace's owner",
    ),
    "a member adds a person": (
        lambda w: (w.p(w.MEM), joined("usr_new")),
        "forbidden",
        "only a workspace owner or admin adds people",
    ),
    "a guest connects a harness": (
        lambda w: (w.p(w.GST), joined("hrn_new", "harness", owner_id=w.GST)),
        "forbidden",
        "a guest of the workspace does not connect harnesses",
    ),
    "a harness adds a participant": (
        lambda w: (w.h(w.H1), joined("usr_new")),
        "forbidden",
        "only a person adds participants to a workspace",
    ),
    "a second owner": (
        lambda w: (w.p(w.ADM), joined("usr_new", role="owner")),
        "forbidden",
        "a workspace has one owner",
    ),
    "a harness owned by someone else": (
        lambda w: (w.p(w.ADM), joined("hrn_new", "harness", owner_id=w.OWN)),
        "invalid_event",
        "a harness is owned by who connects it",
    ),
    "capabilities of a harness that is not": (
        lambda w: (
            w.p(w.OWN),
            {"type": "harness.declared", "harness_id": w.MEM, "capabilities": ["new_spaces"]},
        ),
        "not_found",
        "no such harness in this workspace",
    ),
    "capabilities declared by a stranger": (
        lambda w: (
            w.p(w.MEM),
            {"type": "harness.declared", "harness_id": w.H1, "capabilities": ["new_spaces"]},
        ),
        "forbidden",
        "declared by it or its owner",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_refusal(w: Any, case: str) -> None:
    build, code, fragment = CASES[case]
    actor, event = build(w)
    w.says_no(actor, event, code, fragment)


def test_participant_joined_only_with_its_request(w: Any) -> None:
    """A participant.joined the door derives itself (no request) has no rule."""
    from chips_common.events import ParticipantJoined
    from chips_eventlog.door import Door
    from chips_eventlog.refused import Refused

    door = Door(w.state, w.state.__class__ and __import__("datetime").datetime.now())
    body = ParticipantJoined(participant_id="usr_new", kind="person", name="N")
    with pytest.raises(Refused) as caught:
        door.check(body, w.p(w.OWN), None)
    assert caught.value.message == "participant.joined has no rule at the door"


def test_a_harness_joins_with_its_credential(w: Any) -> None:
    from chips_common.append import IssuedCredential

    req = AppendRequest(
        request_id="r",
        workspace_id="ws_test",
        credential_id="c",
        actor=w.p(w.OWN),
        idempotency_key="join-x",
        events=[joined("hrn_new", "harness", owner_id=w.OWN)],
        credentials=[
            IssuedCredential(credential_id="crd_new", participant_id="hrn_new", token_hash="h")
        ],
    )
    w.send(w.p(w.OWN), request=req)
    assert w.state.participant("hrn_new").owner_id == w.OWN
    assert [c.id for c in w.state.credentials] == []  # settled: written with the batch


def test_a_harness_s_name_taken_is_numbered(w: Any) -> None:
    """A harness's name is its own, case and spaces aside (docs/adr/0031)."""
    for pid, asked, given in (
        ("hrn_a", "scout", "scout 2"),
        ("hrn_b", "Scout", "Scout 3"),
        ("hrn_c", "Fresh", None),
    ):
        req = AppendRequest(
            request_id="r",
            workspace_id="ws_test",
            credential_id="c",
            actor=w.p(w.OWN),
            idempotency_key=f"join-{pid}",
            events=[{**joined(pid, "harness", owner_id=w.OWN), "name": asked}],
        )
        [logged] = w.send(w.p(w.OWN), request=req)
        assert logged["name"] == (given or asked)
        assert w.state.participant(pid).name == (given or asked)


def test_a_person_s_name_is_not_numbered(w: Any) -> None:
    req = AppendRequest(
        request_id="r",
        workspace_id="ws_test",
        credential_id="c",
        actor=w.p(w.OWN),
        idempotency_key="join-maya-2",
        events=[{**joined("usr_maya2"), "name": "Maya"}],
    )
    [logged] = w.send(w.p(w.OWN), request=req)
    assert logged["name"] == "Maya"


def test_a_harness_keeps_its_autonomy(w: Any) -> None:
    req = AppendRequest(
        request_id="r",
        workspace_id="ws_test",
        credential_id="c",
        actor=w.p(w.OWN),
        idempotency_key="join-dial",
        events=[joined("hrn_dial", "harness", owner_id=w.OWN, autonomy="off")],
    )
    w.send(w.p(w.OWN), request=req)
    assert w.state.participant("hrn_dial").autonomy == "off"


def disconnect(harness_id: str) -> dict[str, Any]:
    return {"type": "harness.disconnected", "harness_id": harness_id}


def test_disconnecting_what_is_not_a_harness(w: Any) -> None:
    w.says_no(w.p(w.OWN), disconnect("hrn_none"), "not_found", "no such harness")
    w.says_no(w.p(w.OWN), disconnect(w.MEM), "not_found", "no such harness")


def test_disconnecting_another_s_harness(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        disconnect(w.H1),
        "forbidden",
        "a harness is disconnected by its owner, or a workspace owner or admin",
    )
    w.says_no(w.h(w.H2), disconnect(w.H1), "forbidden", "disconnected by its owner")


def test_a_harness_disconnected_by_its_owner_or_an_admin(w: Any) -> None:
    """Its tokens are withdrawn in the batch's transaction (state_store.flush)."""
    from chips_eventlog.door import Door

    for by, harness_id in ((w.p(w.OWN), w.H1), (w.p(w.ADM), w.H2)):
        door = Door(w.state, w.now)
        req = AppendRequest(
            request_id="r",
            workspace_id="ws_test",
            credential_id="c",
            actor=by,
            idempotency_key=f"off-{harness_id}",
            events=[disconnect(harness_id)],
        )
        [logged] = door.append(req)
        assert logged["type"] == "harness.disconnected"
        assert [r.participant_id for r in w.state.revoked] == [harness_id]
        w.state.settle(door.head_seq, [])
        assert w.state.revoked == []


def test_a_refused_request_withdraws_no_token(w: Any) -> None:
    from chips_eventlog.door import Door
    from chips_eventlog.refused import Refused

    door = Door(w.state, w.now)
    mark = door.mark()
    req = AppendRequest(
        request_id="r",
        workspace_id="ws_test",
        credential_id="c",
        actor=w.p(w.OWN),
        idempotency_key="off-and-bad",
        events=[disconnect(w.H1), disconnect("hrn_none")],
    )
    with pytest.raises(Refused):
        door.append(req)
    door.undo(mark)
    assert w.state.revoked == []
