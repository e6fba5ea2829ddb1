"""What the people routes answer: invites, pairing, sessions, devices, a person's
changes, API keys, who the caller is, sign-in through the provider, the referee."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from chips_common.events import JsonObject
from chips_gateway.answers.base import Answer, absent


class InviteMade(Answer):
    invite_id: str
    name: str | None
    role: str
    expires_at: str
    url: str
    seq: int


class Invite(Answer):
    id: str
    name: str | None
    email: str | None
    role: str
    invited_by: str | None
    created_at: str
    expires_at: str


class Invites(Answer):
    invites: list[Invite]


class InviteWithdrawn(Answer):
    invite_id: str
    seq: int


class InvitePreview(Answer):
    workspace_name: str
    name: str | None
    role: str
    expires_at: str
    pairing: bool


class InviteAccepted(Answer):
    workspace_id: str
    workspace_name: str
    participant_id: str
    name: str | None
    device_id: str


class PairingCode(Answer):
    code: str
    url: str
    expires_at: str


class Session(Answer):
    token: str
    expires_at: int = Field(description="when the session ends, in Unix seconds")
    expires_in: int


class PasskeyOptions(Answer):
    # The WebAuthn options to hand navigator.credentials.create() or .get(), their
    # buffers base64url (docs/adr/0145).
    options: JsonObject


class PasskeyAdded(Answer):
    device_id: str
    name: str
    credential_id: str


class PasskeySession(Session):
    device_id: str
    participant_id: str
    workspace_id: str
    workspace_name: str


class Device(Answer):
    id: str
    kind: str
    name: str | None
    user_agent: str | None
    created_at: str
    expires_at: str | None
    last_seen: str | None
    current: bool


class Devices(Answer):
    participant_id: str
    devices: list[Device]


class DeviceRevoked(Answer):
    device_id: str
    seq: int


class PersonChanged(Answer):
    participant_id: str
    disconnected: list[str]
    # The group rooms a deactivation handed to ``rooms_to`` (docs/adr/0144).
    rooms_handed: list[str]
    rooms_to: str | None
    seq: int


class ApiKey(Answer):
    id: str
    name: str | None
    token: str
    expires_at: str


class Me(BaseModel):
    """Who the caller is: their name, role and time zone (none until they say one)."""

    participant_id: str
    workspace_id: str
    kind: str
    name: str
    role: str | None
    time_zone: str | None


class MeChanged(BaseModel):
    """A person's rename or time zone, as logged: the name it replaced."""

    participant_id: str
    name: str | None
    previous_name: str | None
    time_zone: str | None
    seq: int


class ProviderSignIn(BaseModel):
    """Whether this deployment takes sign-ins through the team's identity provider."""

    enabled: bool
    button: str | None = absent("what the app's sign-in button says")


class ProviderStart(BaseModel):
    """Where to send the browser to sign in, and for how long the sign-in waits."""

    url: str
    expires_in: int


class RefereeSettings(BaseModel):
    """The workspace's referee: when agents are told to stop, when their posts are held,
    whether circles are watched; the seq of the setting (none: the defaults)."""

    stop: int | Literal["never"]
    hold: int | Literal["never"]
    circles: bool
    seq: int | None
