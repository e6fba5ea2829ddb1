"""The workspace and who is in it: ``workspace.created``, ``participant.joined``,
``harness.declared``, ``harness.disconnected`` (docs/adr/0003, docs/product/spaces.md,
docs/adr/0031)."""

from __future__ import annotations

from dataclasses import replace

from pydantic import JsonValue

from chips_common.append import Actor
from chips_common.events import (
    HarnessDeclared,
    HarnessDisconnected,
    ParticipantJoined,
    WorkspaceCreated,
)
from chips_common.rules.names import free_name
from chips_eventlog.refused import refuse
from chips_eventlog.rules import people
from chips_eventlog.rules.common import Ctx
from chips_eventlog.state import (
    AddCredential,
    Change,
    Decision,
    DoorState,
    Participant,
    PutParticipant,
    Rename,
    RevokeCredentials,
)


def refusal_to_add(kind: str | None, role: str | None, joining: str) -> str | None:
    """Why this participant may not add a ``joining`` participant, or None if it may.

    A person connects a harness ("Add the harness the way you add any harness",
    docs/product/jacobian-channel.md): any person of the workspace but a guest, who is there to
    talk in the rooms they are asked into and not to bring in anyone (docs/adr/0060). A
    person is added by a workspace owner or admin.
    """
    if kind != "person":
        return "only a person adds participants to a workspace"
    if joining == "harness":
        if role == "guest":
            return (
                "a guest of the workspace does not connect harnesses; any other person of "
                "the workspace may"
            )
        return None
    if role not in ("owner", "admin"):
        return "only a workspace owner or admin adds people"
    return None


def check_workspace_created(
    s: DoorState, body: WorkspaceCreated, actor: Actor, ctx: Ctx
) -> Decision:
    if actor.kind != "operator":
        refuse("forbidden", "only an operator creates workspaces")
    if ctx.seq != 1:
        refuse("invalid_event", "this workspace already exists", "workspace_id")
    return Decision(changes=[Rename(body.name)])


def check_participant_joined(
    s: DoorState, body: ParticipantJoined, actor: Actor, ctx: Ctx
) -> Decision:
    if ctx.request is None:
        refuse("invalid_event", f"{body.type} has no rule at the door", "type")
    if s.participant(body.participant_id):
        refuse("invalid_event", "that participant already exists", "participant_id")
    if body.invite_id is not None:  # a person comes in by their invite (ADR 0125)
        return people.check_joined_by_invite(s, body, actor, ctx)
    prefix = "usr_" if body.kind == "person" else "hrn_"
    if not body.participant_id.startswith(prefix):
        refuse("invalid_event", f"a {body.kind}'s id starts with {prefix}", "participant_id")
    if actor.kind == "operator":
        if body.kind != "person" or body.role != "owner":
            refuse("forbidden", "an operator adds only the workspace's owner")
    else:
        me = s.participant(actor.id)
        why = refusal_to_add(me.kind if me else None, me.role if me else None, body.kind)
        if why is not None:
            refuse("forbidden", why)
        if body.role == "owner":
            refuse("forbidden", "a workspace has one owner", "role")
        if body.kind == "harness" and body.owner_id != actor.id:
            refuse("invalid_event", "a harness is owned by who connects it", "owner_id")
    filled: dict[str, JsonValue] = {}
    name = body.name
    if body.kind == "harness":  # its name is its own (rules/names.py, ADR 0031)
        name = free_name(body.name, [n for _, n in s.directory()])
        if name != body.name:
            filled["name"] = name
    joined = Participant(
        body.participant_id,
        body.kind,
        body.role,
        body.owner_id,
        name,
        ctx.seq,
        autonomy=body.autonomy,
    )
    changes: list[Change] = [PutParticipant(joined)]
    for cred in ctx.request.credentials:
        if cred.participant_id == body.participant_id:
            changes.append(AddCredential(cred.credential_id, cred.participant_id, cred.token_hash))
    return Decision(filled, changes)


def check_harness_declared(s: DoorState, body: HarnessDeclared, actor: Actor, ctx: Ctx) -> Decision:
    """``chips declare``: the harness itself or its owner says what it does."""
    harness = s.participant(body.harness_id)
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "harness_id")
    if actor.id not in (harness.id, harness.owner_id):
        refuse("forbidden", "a harness's capabilities are declared by it or its owner")
    declared = sorted(set(body.capabilities))
    return Decision(
        {"capabilities": declared},
        [PutParticipant(replace(harness, capabilities=tuple(declared)))],
    )


def check_harness_disconnected(
    s: DoorState, body: HarnessDisconnected, actor: Actor, ctx: Ctx
) -> Decision:
    """``chips disconnect``: the harness's owner (or a workspace owner or admin) withdraws
    its tokens, in the same transaction as the event (ADR 0031)."""
    harness = s.participant(body.harness_id)
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "harness_id")
    me = s.participant(actor.id)
    if actor.id != harness.owner_id and (me is None or me.role not in ("owner", "admin")):
        refuse("forbidden", "a harness is disconnected by its owner, or a workspace owner or admin")
    return Decision(changes=[RevokeCredentials(harness.id)])
