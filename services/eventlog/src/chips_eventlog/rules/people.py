"""How people come in and what they sign in with: ``invite.created``,
``invite.withdrawn``, a person's ``participant.joined`` through an invite,
``device.paired`` and ``device.revoked`` (docs/adr/0125).

An invite's secret never reaches the log: the request carries its SHA-256 beside the
event (:class:`~chips_common.append.InviteSecret`), the door keeps it, and a request that
uses the invite must present the same hash. Every refusal here is logged as nothing.
"""

from __future__ import annotations

import hmac
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import JsonValue

from chips_common.append import Actor, IssuedCredential
from chips_common.events import (
    DevicePaired,
    DeviceRevoked,
    InviteCreated,
    InviteWithdrawn,
    MembershipAdded,
    ParticipantJoined,
    PersonUpdated,
)
from chips_common.events.wire import EventJson
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, Step
from chips_eventlog.state import (
    AddCredential,
    AddMember,
    Decision,
    DoorState,
    Invite,
    Participant,
    PutInvite,
    PutParticipant,
    RevokeCredentials,
    RevokeDevice,
    SetStanding,
)

# An invite lives at most this long; a pairing code at most PAIRING_MAX.
INVITE_MAX = timedelta(days=30)
PAIRING_MAX = timedelta(minutes=15)
ADMINS = ("owner", "admin")


def parse_time(value: str, field: str) -> datetime:
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        refuse("invalid_event", f"{field} is not a time", field)
    if when.tzinfo is None:
        refuse("invalid_event", f"{field} needs its time zone", field)
    return when


def person(s: DoorState, actor: Actor) -> Participant:
    me = s.participant(actor.id) if actor.kind == "person" else None
    if me is None or me.kind != "person":
        refuse("forbidden", "only a person of the workspace does this")
    return me


def check_invite_created(s: DoorState, body: InviteCreated, actor: Actor, ctx: Ctx) -> Decision:
    """An owner or admin invites somebody; a person asks for a pairing code of their own."""
    secret = ctx.request.invite if ctx.request is not None else None
    if secret is None:
        refuse("invalid_event", "an invite is made through POST /v1/invites", "type")
    if actor.kind == "operator":
        # The deployment's own act: a sign-in through the team's identity provider, which
        # the workspace lets in as a member, comes in by an invite like anybody (ADR 0135).
        if body.participant_id is not None or body.role not in ("member", "guest"):
            refuse("forbidden", "the operator invites only new members or guests")
        me = Participant(actor.id, "person", "admin", None, "operator", 0)
    else:
        me = person(s, actor)
    if not body.invite_id.startswith("inv_") or body.invite_id in s.invites:
        refuse("invalid_event", "an invite's id is a fresh inv_ id", "invite_id")
    expires = parse_time(body.expires_at, "expires_at")
    if expires <= ctx.now:
        refuse("invalid_event", "an invite expires in the future", "expires_at")
    if body.participant_id is not None and body.participant_id == actor.id:
        # A pairing code, for a further device of the person's own.
        if expires > ctx.now + PAIRING_MAX:
            refuse("invalid_event", "a pairing code lives 15 minutes at most", "expires_at")
        name, role = me.name, me.role
    elif body.participant_id is not None:
        # An owner or admin invites a person already here back in (after a reactivation).
        who = s.participant(body.participant_id)
        if me.role not in ADMINS:
            refuse("forbidden", "a pairing code is for a further device of your own")
        if who is None or who.kind != "person":
            refuse("not_found", "no such person in this workspace", "participant_id")
        if expires > ctx.now + INVITE_MAX:
            refuse("invalid_event", "an invite lives 30 days at most", "expires_at")
        name, role = who.name, who.role
    else:
        if me.role not in ADMINS:
            refuse("forbidden", "only a workspace owner or admin invites people")
        if body.role == "owner":
            refuse("forbidden", "a workspace has one owner: invite as admin", "role")
        if expires > ctx.now + INVITE_MAX:
            refuse("invalid_event", "an invite lives 30 days at most", "expires_at")
        name, role = body.name, body.role
    invite = Invite(
        body.invite_id,
        secret.secret_hash,
        name,
        role,
        actor.id,
        ctx.now,
        expires,
        email=secret.email,
        participant_id=body.participant_id,
    )
    return Decision({"name": name, "role": role}, [PutInvite(invite)])


def check_invite_withdrawn(s: DoorState, body: InviteWithdrawn, actor: Actor, ctx: Ctx) -> Decision:
    me = person(s, actor)
    invite = s.invites.get(body.invite_id)
    if invite is None:
        refuse("not_found", "no such invite in this workspace", "invite_id")
    if actor.id != invite.invited_by and me.role not in ADMINS:
        refuse("forbidden", "an invite is withdrawn by who made it, or an owner or admin")
    if invite.state != "pending":
        refuse("invalid_event", f"that invite was {invite.state} already", "invite_id")
    return Decision(changes=[PutInvite(replace(invite, state="withdrawn"))])


def usable_invite(s: DoorState, invite_id: str, ctx: Ctx) -> Invite:
    """The pending, unexpired invite whose secret the request presents; else refused with
    what is wrong, in words the person at the door can act on."""
    presented = ctx.request.invite if ctx.request is not None else None
    invite = s.invites.get(invite_id)
    if (
        invite is None
        or presented is None
        or not hmac.compare_digest(invite.secret_hash, presented.secret_hash)
    ):
        refuse("invalid_invite", "that invite link is not one Chips made; ask for a new one")
    if invite.state == "used":
        refuse("invite_used", "that invite link was used already; ask for a new one")
    if invite.state == "withdrawn":
        refuse("invite_withdrawn", "that invite was withdrawn; ask for a new one")
    if ctx.now >= invite.expires_at:
        refuse("invite_expired", "that invite link has expired; ask for a new one")
    return invite


def check_joined_by_invite(
    s: DoorState, body: ParticipantJoined, actor: Actor, ctx: Ctx
) -> Decision:
    """A person comes in by their invite: named and placed as the invite said."""
    assert body.invite_id is not None
    if body.kind != "person" or actor.kind != "person" or actor.id != body.participant_id:
        refuse("invalid_event", "an invite brings in the person who uses it", "invite_id")
    invite = usable_invite(s, body.invite_id, ctx)
    if invite.participant_id is not None:
        refuse("invalid_invite", "that is a pairing code for a device, not an invite")
    joined = Participant(body.participant_id, "person", invite.role, None, invite.name, ctx.seq)
    used = replace(invite, state="used", used_by=body.participant_id, used_seq=ctx.seq)
    return Decision(
        {"name": invite.name, "role": invite.role},
        [PutParticipant(joined), PutInvite(used)],
    )


def issued(ctx: Ctx, device_id: str, participant_id: str) -> IssuedCredential:
    found = [
        c
        for c in (ctx.request.credentials if ctx.request is not None else [])
        if c.credential_id == device_id and c.participant_id == participant_id
    ]
    if not found:
        refuse("invalid_event", "a device is paired with its key beside the request", "device_id")
    return found[0]


def check_device_paired(s: DoorState, body: DevicePaired, actor: Actor, ctx: Ctx) -> Decision:
    """A device is paired by its person: through their invite (in the same request that
    brought them in), through a pairing code of theirs, as an API key they make, or as a
    passkey they register from a device already paired."""
    who = s.participant(body.participant_id)
    if who is None or who.kind != "person" or actor.id != body.participant_id:
        refuse("forbidden", "a person pairs a device of their own")
    if not who.active:
        refuse("forbidden", f"{who.name} was deactivated: an owner or admin reactivates them")
    cred = issued(ctx, body.device_id, body.participant_id)
    if body.device_id in s.devices:
        refuse("invalid_event", "that device is paired already", "device_id")
    if body.kind == "api_key":
        if cred.token_hash is None or body.invite_id is not None:
            refuse("invalid_event", "an API key is a token made by its person", "kind")
    elif body.kind == "passkey":
        # Registered from a device of the person's already paired (docs/adr/0145).
        by = s.devices.get(ctx.request.credential_id) if ctx.request is not None else None
        if (
            by is None
            or by.revoked
            or by.kind not in ("browser", "cli", "passkey")
            or by.participant_id != body.participant_id
            or body.invite_id is not None
        ):
            refuse("forbidden", "a passkey is added from a device of yours already paired")
        if cred.public_key is None:
            refuse("invalid_event", "a passkey is paired with its public key", "kind")
    elif cred.public_key is None:
        refuse("invalid_event", "a device is paired with its public key", "kind")
    changes: list[PutInvite | AddCredential] = []
    if body.invite_id is not None:
        invite = s.invites.get(body.invite_id)
        if (
            invite is not None
            and invite.participant_id is None
            and invite.used_by == body.participant_id
            and invite.used_seq == ctx.seq - 1
        ):
            pass  # the invite that brought the person in, one event ago
        else:
            invite = usable_invite(s, body.invite_id, ctx)
            if invite.participant_id != body.participant_id:
                refuse("invalid_invite", "that pairing code is another person's")
            changes.append(
                PutInvite(replace(invite, state="used", used_by=body.device_id, used_seq=ctx.seq))
            )
    elif body.kind not in ("api_key", "passkey"):
        refuse("invalid_event", "a device is paired through an invite or a code", "invite_id")
    changes.append(
        AddCredential(
            body.device_id,
            body.participant_id,
            cred.token_hash,
            body.kind,
            cred.name,
            cred.public_key,
            cred.user_agent,
            cred.expires_at,
        )
    )
    return Decision(changes=list(changes))


def check_device_revoked(s: DoorState, body: DeviceRevoked, actor: Actor, ctx: Ctx) -> Decision:
    """A person revokes a device or key of theirs; an owner or admin, anybody's."""
    me = person(s, actor)
    device = s.devices.get(body.device_id)
    if device is None or device.participant_id != body.participant_id:
        refuse("not_found", "no such device in this workspace", "device_id")
    if actor.id != device.participant_id and me.role not in ADMINS:
        refuse("forbidden", "a device is revoked by its person, or a workspace owner or admin")
    if device.revoked:
        refuse("invalid_event", "that device was revoked already", "device_id")
    return Decision(changes=[RevokeDevice(device.id)])


def check_person_updated(s: DoorState, body: PersonUpdated, actor: Actor, ctx: Ctx) -> Decision:
    """An owner or admin changes a person's role, or deactivates or reactivates them; a
    person changes their own name (the door fills in the one it replaces) or time zone.

    Deactivating revokes every device and key of theirs and every token of their
    harnesses, in this transaction; the gateways close their sockets as the event goes by.
    Their words and runs stay as they were; the group rooms they own go to ``rooms_to``,
    an active person of the workspace, who stands as their owner from then on (ADR 0144).
    """
    me = person(s, actor)
    own = body.name is not None or body.time_zone is not None
    standing = body.role is not None or body.active is not None
    if not own and not standing:
        refuse(
            "invalid_event",
            "say the new role, whether they are active, a name or a time zone",
            "role",
        )
    if own and actor.id != body.participant_id:
        refuse("forbidden", "a person changes their own name and time zone")
    if standing and me.role not in ADMINS:
        refuse("forbidden", "only a workspace owner or admin changes a person's role or standing")
    who = s.participant(body.participant_id)
    if who is None or who.kind != "person":
        refuse("not_found", "no such person in this workspace", "participant_id")
    if standing and who.role == "owner":
        refuse("forbidden", "the workspace's owner keeps their role and stays active")
    if body.active is False and who.id == actor.id:
        refuse("forbidden", "you cannot deactivate yourself; another owner or admin can")
    deactivating = body.active is False and who.active
    owned = owned_rooms(s, who.id) if deactivating else []
    heir = rooms_heir(s, body, who, owned) if deactivating else None
    if body.rooms_to is not None and not deactivating:
        refuse(
            "invalid_event", "rooms are handed on only when their owner is deactivated", "rooms_to"
        )
    changed = replace(
        who,
        role=body.role or who.role,
        active=who.active if body.active is None else body.active,
        name=body.name or who.name,
    )
    filled: dict[str, JsonValue] = {}
    if body.name is not None:
        filled["previous_name"] = who.name
    changes: list[Any] = [PutParticipant(changed)]
    disconnected: list[str] = []
    if body.active is False and who.active:
        changes.append(RevokeCredentials(who.id))
        changes += [
            RevokeDevice(d.id)
            for d in s.devices.values()
            if d.participant_id == who.id and not d.revoked
        ]
        for harness in sorted(s.participants.values(), key=lambda p: (p.joined_seq, p.id)):
            if harness.kind == "harness" and harness.owner_id == who.id:
                changes.append(RevokeCredentials(harness.id))
                disconnected.append(harness.id)
    if body.rooms_handed:
        refuse("invalid_event", "the rooms handed on are written by Chips", "rooms_handed")
    if heir is not None:
        # The heir already in a room stands as its owner now; one not in it comes in as
        # its owner by the membership.added the door logs next (heir_joins).
        for space_id in owned:
            changes.append(SetStanding(space_id, who.id, "member"))
            if s.standing(space_id, heir.id) is not None:
                changes.append(SetStanding(space_id, heir.id, "owner"))
        filled["rooms_handed"] = [space_id for space_id in owned]
    return Decision({**filled, "disconnected": disconnected}, changes)


def heir_joins(s: DoorState, logged: EventJson, actor: Actor, seq: int) -> list[Step]:
    """After a deactivation that handed rooms on: the heir's ``membership.added``, as
    owner, to each of them it was not in, logged as the admin's act. ``seq`` is where the
    first of them is logged."""
    heir = logged.get("rooms_to")
    steps: list[Step] = []
    for space_id in logged.get("rooms_handed") or []:
        if heir is None or s.standing(space_id, heir) is not None:
            continue
        body = MembershipAdded(space_id=space_id, participant_id=heir, standing="owner")
        added = AddMember(space_id, heir, "owner", seq + len(steps))
        steps.append(Step(body, actor, Decision(changes=[added])))
    return steps


def owned_rooms(s: DoorState, person_id: str) -> list[str]:
    """The group rooms a person owns, in the order they were opened: what deactivating
    them hands on. A direct space stays as it is, between those in it (ADR 0144)."""
    found = [
        space
        for space_id, members in s.members.items()
        if (m := members.get(person_id)) is not None
        and m.standing == "owner"
        and (space := s.space(space_id)) is not None
        and space.kind == "group"
    ]
    return [space.id for space in sorted(found, key=lambda sp: (sp.created_seq, sp.id))]


def rooms_heir(
    s: DoorState, body: PersonUpdated, who: Participant, owned: list[str]
) -> Participant | None:
    """Who takes the rooms a person being deactivated owns: the active person of the
    workspace the admin named; refused, saying why, when that is nobody fit."""
    if body.rooms_to is None:
        if owned:
            count = f"{len(owned)} room{'s' if len(owned) != 1 else ''}"
            refuse(
                "invalid_event",
                f"{who.name} owns {count}: name the active person who takes them over",
                "rooms_to",
            )
        return None
    heir = s.participant(body.rooms_to)
    if heir is None or heir.kind != "person":
        refuse(
            "invalid_event",
            "the rooms go to a person of this workspace, and there is no such person",
            "rooms_to",
        )
    if heir.id == who.id:
        refuse("invalid_event", f"{who.name} is the one being deactivated", "rooms_to")
    if not heir.active:
        refuse(
            "invalid_event",
            f"{heir.name} was deactivated: the rooms go to an active person",
            "rooms_to",
        )
    if heir.role == "guest":
        refuse("invalid_event", f"{heir.name} is a guest, and a guest owns no room", "rooms_to")
    return heir
