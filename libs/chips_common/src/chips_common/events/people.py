"""How people come in and what they sign in with: invites and paired devices.

An invite's secret and a device's public key never enter the log: the request that logs
the event carries them beside it, and the door keeps them in its own tables (a hash of
the secret; the key itself, which is public). See docs/adr/0125.
"""

from __future__ import annotations

import zoneinfo
from functools import lru_cache
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from chips_common.events.base import EventBody, register

Role = Literal["owner", "admin", "member", "guest"]
DeviceKind = Literal["browser", "cli", "api_key", "passkey"]


@register
class InviteCreated(EventBody):
    """An owner or admin invited somebody by name, with a role, until ``expires_at``.

    With ``participant_id`` it is a pairing code instead: a person already here asked for
    a short-lived code to pair a further device of their own.
    """

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["invite.created"] = "invite.created"
    invite_id: str = Field(max_length=100)
    name: str = Field(min_length=1, max_length=80)
    role: Role = "member"
    expires_at: str = Field(max_length=40)
    participant_id: str | None = Field(default=None, max_length=100)


@register
class InviteWithdrawn(EventBody):
    """An invite was withdrawn before anybody used it; its link is refused from now on."""

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["invite.withdrawn"] = "invite.withdrawn"
    invite_id: str = Field(max_length=100)


@register
class DevicePaired(EventBody):
    """A device of a person's was paired (through an invite or a pairing code), or the
    person made a named API key for a script (``kind`` ``api_key``), or registered a
    passkey from a device already paired (``kind`` ``passkey``, docs/adr/0145)."""

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["device.paired"] = "device.paired"
    device_id: str = Field(max_length=100)
    participant_id: str = Field(max_length=100)
    kind: DeviceKind = "browser"
    invite_id: str | None = Field(default=None, max_length=100)


@register
class PersonUpdated(EventBody):
    """An owner or admin changed a person's role, or deactivated or reactivated them; or
    a person changed their own name or time zone.

    Deactivating revokes every device and key of theirs and disconnects their harnesses
    (the door fills in ``disconnected``) in the same transaction; what they said stays.
    The group rooms they own go to the active person ``rooms_to`` names, who is their
    owner from then on (the door fills in ``rooms_handed``; docs/adr/0144).
    A new name comes with the one it replaces (``previous_name``, filled in by the door);
    a time zone is an IANA name (``Europe/Lisbon``), read by the room note's "time now"
    and by notifications' quiet hours.
    """

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["person.updated"] = "person.updated"
    participant_id: str = Field(max_length=100)
    role: Literal["admin", "member", "guest"] | None = None
    active: bool | None = None
    name: str | None = Field(default=None, min_length=1, max_length=80)
    time_zone: str | None = Field(default=None, min_length=1, max_length=64)
    previous_name: str | None = Field(default=None, max_length=80)
    disconnected: list[str] = Field(default_factory=list, max_length=1000)
    rooms_to: str | None = Field(default=None, max_length=100)
    rooms_handed: list[str] = Field(default_factory=list, max_length=10000)

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None and not known_time_zone(value):
            raise ValueError(f"{value!r} is not a time zone's IANA name (like Europe/Lisbon)")
        return value

    @field_validator("name")
    @classmethod
    def _trimmed(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a name has a letter at least")
        return value.strip() if value is not None else None


def known_time_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone (``Europe/Lisbon``, ``UTC``) this Python knows."""
    return name in available_time_zones()


@lru_cache(maxsize=1)
def available_time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


@register
class DeviceRevoked(EventBody):
    """A device or an API key was revoked: from this event on it is refused everywhere,
    and every gateway closes its sockets as the event goes by."""

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["device.revoked"] = "device.revoked"
    device_id: str = Field(max_length=100)
    participant_id: str = Field(max_length=100)
