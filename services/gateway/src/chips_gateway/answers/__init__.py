"""What the gateway's routes answer, as types: one model per success body.

The routes build their answers as they always have; these models say what those answers
hold, so the OpenAPI document types every success response (``openapi.document`` sets
each operation's schema from :data:`ANSWERS`) and a generated client reads them by name.
They are built from the catalogue's own types where it has them (an attachment, a card,
an autonomy level, a capability, a policy rule). Schemathesis checks every answer it
gets against them (tests/e2e/test_openapi.py), and a test walks the document for a
success response left untyped.

A field the route leaves out when it does not apply (a line's ``card``, an agent's
``harness_id``) has a default here, so the document does not call it required; a
``None`` default says nothing about the wire, where the field is then absent.

The models are by topic, one module each (docs/adr/0141): ``events``, ``rooms``, ``runs``,
``harnesses`` and ``people``, over ``base``. A new route's model goes in its topic's
module and its entry in :data:`ANSWERS` here.
"""

from __future__ import annotations

from pydantic import BaseModel

from chips_gateway.answers.base import ABSENT
from chips_gateway.answers.events import ContextPage, EventPage
from chips_gateway.answers.harnesses import (
    Declared,
    Directory,
    Disconnected,
    HarnessSpaces,
    HarnessStatus,
    OpenedSpace,
    Policy,
    PolicySet,
    RestartAsked,
)
from chips_gateway.answers.people import (
    ApiKey,
    DeviceRevoked,
    Devices,
    InviteAccepted,
    InviteMade,
    InvitePreview,
    Invites,
    InviteWithdrawn,
    Me,
    MeChanged,
    PairingCode,
    PasskeyAdded,
    PasskeyOptions,
    PasskeySession,
    PersonChanged,
    ProviderSignIn,
    ProviderStart,
    RefereeSettings,
    Session,
)
from chips_gateway.answers.rooms import LinePage, RoomFiles, Sheet, SpaceList, Spend
from chips_gateway.answers.runs import Approvals, HarnessUsage, Run, SpaceLanes, SpaceRuns

__all__ = ["ABSENT", "ANSWERS"]

# Each operation (by its id, the route's name) and the model of its success body.
ANSWERS: dict[str, type[BaseModel]] = {
    "get_me": Me,
    "change_me": MeChanged,
    "oidc_info": ProviderSignIn,
    "oidc_start": ProviderStart,
    "referee": RefereeSettings,
    "read_events": EventPage,
    "read_context": ContextPage,
    "list_spaces": SpaceList,
    "room_sheet": Sheet,
    "room_lines": LinePage,
    "room_spend": Spend,
    "files": RoomFiles,
    "read_run": Run,
    "space_runs": SpaceRuns,
    "harness_usage": HarnessUsage,
    "space_lanes": SpaceLanes,
    "approvals": Approvals,
    "directory": Directory,
    "open_space": OpenedSpace,
    "harness_spaces": HarnessSpaces,
    "declare_capabilities": Declared,
    "disconnect": Disconnected,
    "get_policy": Policy,
    "set_policy": PolicySet,
    "restart": RestartAsked,
    "report_status": HarnessStatus,
    "create_invite": InviteMade,
    "list_invites": Invites,
    "withdraw_invite": InviteWithdrawn,
    "preview_invite": InvitePreview,
    "accept_invite": InviteAccepted,
    "pairing_code": PairingCode,
    "open_session": Session,
    "passkey_options": PasskeyOptions,
    "register_passkey": PasskeyAdded,
    "passkey_challenge": PasskeyOptions,
    "passkey_sign_in": PasskeySession,
    "list_devices": Devices,
    "revoke_device": DeviceRevoked,
    "change_person": PersonChanged,
    "create_api_key": ApiKey,
}
