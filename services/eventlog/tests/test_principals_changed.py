"""Which batches change who a credential is, so that the gateways are told (docs/adr/0169)."""

from __future__ import annotations

from chips_eventlog.state import DoorState
from chips_eventlog.state_changes import (
    AddCredential,
    PutParticipant,
    PutSpace,
    RevokeCredentials,
    RevokeDevice,
)
from chips_eventlog.state_rows import Participant, Space


def state() -> DoorState:
    s = DoorState("ws_1", 0, "W")
    s.apply([AddCredential("dev_1", "usr_1", None, kind="browser")])
    s.settle(1, [])
    return s


def test_a_participant_put_a_credential_or_a_device_revoked_changes_who() -> None:
    for change in (
        PutParticipant(Participant("usr_1", "person", "guest", None, "Dana")),
        RevokeCredentials("har_1"),
        RevokeDevice("dev_1"),
    ):
        s = state()
        s.apply([change])
        assert s.principals_changed(), change
        s.settle(2, [])
        assert not s.principals_changed(), change  # told once, with its batch


def test_a_new_credential_or_a_room_changes_nobody() -> None:
    """A token nobody had was never remembered: nothing to forget."""
    s = state()
    s.apply([AddCredential("dev_2", "usr_1", None, kind="browser")])
    s.apply([PutSpace(Space("spc_1", "group", "Launch", "usr_1", 2))])
    assert not s.principals_changed()


def test_revoking_an_unknown_device_changes_nobody() -> None:
    s = state()
    s.apply([RevokeDevice("dev_unknown")])
    assert not s.principals_changed()
