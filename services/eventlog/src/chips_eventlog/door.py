"""The rules at the door, decided inside the append transaction (DESIGN.md §2).

Every check reads the door state through the same connection that will write the
event, after the workspace's head row is locked, so two racing writes can never both
pass. A refusal raises :class:`Refused`; the caller rolls back to its savepoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.append import Actor, AppendRequest
from chips_common.clock import iso
from chips_common.commands import OpenSpace
from chips_common.db import tables as t
from chips_common.events import (
    EVENT_VERSION,
    AttachmentCapsSet,
    AttachmentFetched,
    EventBody,
    Feedback,
    HarnessDeclared,
    HarnessDisconnected,
    InvalidEvent,
    MembershipAdded,
    MembershipRemoved,
    MessageDeleted,
    MessageEdited,
    MessageHidden,
    MessagePinned,
    MessagePost,
    MessageShown,
    MessageUnpinned,
    ParticipantJoined,
    SpaceClaimed,
    SpaceCreated,
    SpaceErased,
    SpaceLockSet,
    SpaceUpdated,
    TurnPassed,
    WorkspaceCreated,
    canonical,
    parse_event,
)
from chips_common.ids import message_id_for, new_id
from chips_common.rules.addressing import Choice, address
from chips_common.rules.commands import Command, CommandError, parse_command, resolve_handle
from chips_common.rules.handles import Member
from chips_common.rules.kinds import passes, refusal
from chips_common.rules.names import free_name
from chips_eventlog import erase, files, lanes, runs, stopping, threads, words

# The actors that are participants (an operator or Chips itself is not).
PARTICIPANTS = ("person", "harness")


class Refused(Exception):
    """A request the door does not let in; nothing of it is logged."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


def refusal_to_add(kind: str | None, role: str | None, joining: str) -> str | None:
    """Why this participant may not add a ``joining`` participant, or None if it may.

    A person connects a harness ("Add the harness the way you add any harness",
    spec/jacobian-channel.md): any person of the workspace but a guest, who is there to
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


@dataclass
class Participant:
    id: str
    kind: str
    role: str
    owner_id: str | None
    name: str = ""
    capabilities: tuple[str, ...] = ()


@dataclass
class Space:
    """A space's door state: what the rules about it are decided against."""

    id: str
    kind: str
    title: str | None
    state: str
    title_held: bool
    home_of: str | None
    key: str | None
    key_shared: bool
    locked: bool
    asked_of: str | None


class Door:
    """Checks and applies one request's events against the door state of one workspace."""

    def __init__(self, conn: AsyncConnection, workspace_id: str, head_seq: int, now: datetime):
        self.conn = conn
        self.workspace_id = workspace_id
        self.head_seq = head_seq
        self.now = now
        # Door state read in this transaction, kept as this door changes it, so a batch of
        # posts into one room asks Postgres once.
        self._standings: dict[tuple[str, str], str | None] = {}
        self._rooms: dict[str, list[Member]] = {}
        # Events checked but not yet written; written together by flush().
        self.pending: list[dict[str, Any]] = []
        self.traces: dict[int, str | None] = {}
        # The rooms with a live run, read once per batch when a post needs to know
        # (chips_eventlog.runs.may_be_live); a stale yes only costs a query.
        self.live_spaces: set[str] | None = None
        # Spaces erased in this transaction: nothing of them is published (erase.py).
        self.erased: set[str] = set()
        # Seqs of an erased space's events that outlive it: the run.cancel its deletion
        # sent first (stopping.py), kept in the log and published.
        self.spared: set[int] = set()

    def mark(self) -> tuple[int, int]:
        """Where a request starts, to undo it with :meth:`undo` if it is refused."""
        return self.head_seq, len(self.pending)

    def undo(self, mark: tuple[int, int]) -> None:
        self.head_seq, count = mark
        del self.pending[count:]
        self._standings.clear()
        self._rooms.clear()

    # --- reading the door state ----------------------------------------------------

    async def participant(self, participant_id: str) -> Participant | None:
        row = (
            await self.conn.execute(
                select(
                    t.participants.c.id,
                    t.participants.c.kind,
                    t.participants.c.role,
                    t.participants.c.owner_id,
                    t.participants.c.capabilities,
                ).where(
                    and_(
                        t.participants.c.id == participant_id,
                        t.participants.c.workspace_id == self.workspace_id,
                    )
                )
            )
        ).first()
        if row is None:
            return None
        return Participant(
            row.id, row.kind, row.role, row.owner_id, capabilities=tuple(row.capabilities)
        )

    async def space(self, space_id: str) -> Space | None:
        return await self._space_where(t.spaces.c.id == space_id)

    async def space_by_key(self, key: str) -> Space | None:
        return await self._space_where(t.spaces.c.key == key)

    async def _space_where(self, condition: Any) -> Space | None:
        s = t.spaces.c
        row = (
            await self.conn.execute(
                select(
                    s.id,
                    s.kind,
                    s.title,
                    s.state,
                    s.title_held,
                    s.home_of,
                    s.key,
                    s.key_shared,
                    s.locked,
                    s.asked_of,
                ).where(and_(condition, s.workspace_id == self.workspace_id))
            )
        ).first()
        if row is None:
            return None
        return Space(
            row.id,
            row.kind,
            row.title,
            row.state,
            row.title_held,
            row.home_of,
            row.key,
            row.key_shared,
            row.locked,
            row.asked_of,
        )

    async def standing(self, space_id: str, participant_id: str) -> str | None:
        if (space_id, participant_id) in self._standings:
            return self._standings[(space_id, participant_id)]
        standing = (
            await self.conn.execute(
                select(t.memberships.c.standing).where(
                    and_(
                        # A thread's members are its room's (threads.py).
                        t.memberships.c.space_id == threads.room_of(space_id),
                        t.memberships.c.participant_id == participant_id,
                        t.memberships.c.workspace_id == self.workspace_id,
                    )
                )
            )
        ).scalar()
        self._standings[(space_id, participant_id)] = standing
        return standing

    async def check_member(self, space_id: str, actor: Actor) -> str:
        """The actor's standing in the space; anyone not in it is refused.

        A space that does not exist and one the actor is not in are refused alike, so a
        refusal never tells a stranger which rooms exist.
        """
        standing = await self.standing(space_id, actor.id)
        if standing is None:
            raise Refused("forbidden", "you are not a member of this space", "space_id")
        return standing

    # --- the rules, one per event type ---------------------------------------------

    async def check_workspace_created(self, body: WorkspaceCreated, actor: Actor) -> dict[str, Any]:
        if actor.kind != "operator":
            raise Refused("forbidden", "only an operator creates workspaces")
        if self.head_seq != 0:
            raise Refused("invalid_event", "this workspace already exists", "workspace_id")
        await self.conn.execute(
            update(t.workspaces)
            .where(t.workspaces.c.id == self.workspace_id)
            .values(name=body.name)
        )
        return {}

    async def check_participant_joined(
        self, body: ParticipantJoined, actor: Actor, request: AppendRequest
    ) -> dict[str, Any]:
        if await self.participant(body.participant_id):
            raise Refused("invalid_event", "that participant already exists", "participant_id")
        prefix = "usr_" if body.kind == "person" else "hrn_"
        if not body.participant_id.startswith(prefix):
            raise Refused(
                "invalid_event", f"a {body.kind}'s id starts with {prefix}", "participant_id"
            )
        if actor.kind == "operator":
            if body.kind != "person" or body.role != "owner":
                raise Refused("forbidden", "an operator adds only the workspace's owner")
        else:
            me = await self.participant(actor.id)
            why = refusal_to_add(me.kind if me else None, me.role if me else None, body.kind)
            if why is not None:
                raise Refused("forbidden", why)
            if body.role == "owner":
                raise Refused("forbidden", "a workspace has one owner", "role")
            if body.kind == "harness" and body.owner_id != actor.id:
                raise Refused("invalid_event", "a harness is owned by who connects it", "owner_id")
        filled: dict[str, Any] = {}
        name = body.name
        if body.kind == "harness":  # its name is its own (rules/names.py, ADR 0031)
            name = free_name(body.name, [n for _, n in await self.directory()])
            if name != body.name:
                filled["name"] = name
        await self.conn.execute(
            insert(t.participants).values(
                id=body.participant_id,
                workspace_id=self.workspace_id,
                kind=body.kind,
                name=name,
                role=body.role,
                owner_id=body.owner_id,
                joined_seq=self.head_seq + 1,
                autonomy=body.autonomy,
            )
        )
        for cred in request.credentials:
            if cred.participant_id == body.participant_id:
                await self.conn.execute(
                    insert(t.credentials).values(
                        id=cred.credential_id,
                        workspace_id=self.workspace_id,
                        participant_id=cred.participant_id,
                        token_hash=cred.token_hash,
                        created_at=self.now,
                    )
                )
        return filled

    async def check_harness_disconnected(
        self, body: HarnessDisconnected, actor: Actor
    ) -> dict[str, Any]:
        """``chips disconnect``: the harness's owner (or a workspace owner or admin)
        withdraws its tokens, in the same transaction as the event (ADR 0031)."""
        harness = await self.participant(body.harness_id)
        if harness is None or harness.kind != "harness":
            raise Refused("not_found", "no such harness in this workspace", "harness_id")
        me = await self.participant(actor.id)
        if actor.id != harness.owner_id and (me is None or me.role not in ("owner", "admin")):
            raise Refused(
                "forbidden", "a harness is disconnected by its owner, or a workspace owner or admin"
            )
        await self.conn.execute(
            update(t.credentials)
            .where(
                and_(
                    t.credentials.c.participant_id == harness.id,
                    t.credentials.c.revoked_at.is_(None),
                )
            )
            .values(revoked_at=self.now)
        )
        return {}

    async def check_harness_declared(self, body: HarnessDeclared, actor: Actor) -> dict[str, Any]:
        """``chips declare``: the harness itself or its owner says what it does."""
        harness = await self.participant(body.harness_id)
        if harness is None or harness.kind != "harness":
            raise Refused("not_found", "no such harness in this workspace", "harness_id")
        if actor.id not in (harness.id, harness.owner_id):
            raise Refused("forbidden", "a harness's capabilities are declared by it or its owner")
        declared = sorted(set(body.capabilities))
        await self.conn.execute(
            update(t.participants)
            .where(t.participants.c.id == harness.id)
            .values(capabilities=declared)
        )
        return {"capabilities": declared}

    async def check_space_created(self, body: SpaceCreated, actor: Actor) -> dict[str, Any]:
        if actor.kind != "person":
            raise Refused(
                "forbidden", "a harness opens spaces through its door, not with space.created"
            )
        if body.key is not None or body.shared is not None:
            raise Refused(
                "invalid_event", "a key is given to a space through a harness's door", "key"
            )
        if body.opened_for is not None:
            raise Refused("invalid_event", "opened_for is filled in by Chips", "opened_for")
        space_id = body.space_id or new_id("spc")
        if not space_id.startswith("spc_"):
            raise Refused("invalid_event", "a space's id starts with spc_", "space_id")
        exists = (
            await self.conn.execute(select(t.spaces.c.id).where(t.spaces.c.id == space_id))
        ).first()
        if exists:
            raise Refused("invalid_event", "that space already exists", "space_id")
        members = list(dict.fromkeys(m for m in body.members if m != actor.id))
        if body.asked_of is not None:
            await self.check_asked(body.asked_of)
            if body.asked_of not in members:
                members.append(body.asked_of)  # every face picked is put in it (ADR 0084)
        for member in members:
            if await self.participant(member) is None:
                raise Refused("not_found", f"no participant {member} in this workspace", "members")
        if body.kind == "direct" and not members:
            raise Refused("invalid_event", "a direct space names who it is with", "members")
        if body.home_of is not None:
            await self.check_home(body, actor, members)
        seq = self.head_seq + 1
        await self.conn.execute(
            insert(t.spaces).values(
                id=space_id,
                workspace_id=self.workspace_id,
                kind=body.kind,
                title=body.title,
                created_by=actor.id,
                created_seq=seq,
                home_of=body.home_of,
                asked_of=body.asked_of,
            )
        )
        await self._add_member(space_id, actor.id, "owner", seq)
        for member in members:
            await self._add_member(space_id, member, "member", seq)
        return {"space_id": space_id, "members": members}

    async def check_asked(self, harness_id: str) -> None:
        """spec/spaces.md: "only a harness that declares new_spaces may be asked"."""
        harness = await self.participant(harness_id)
        if harness is None or harness.kind != "harness":
            raise Refused("not_found", "no such harness in this workspace", "asked_of")
        if "new_spaces" not in harness.capabilities:
            raise Refused(
                "forbidden",
                "that harness does not take new spaces (it never declared new_spaces)",
                "asked_of",
            )

    async def check_home(self, body: SpaceCreated, actor: Actor, members: list[str]) -> None:
        """A harness's home is the direct space its owner is handed with it, and only that."""
        harness = await self.participant(body.home_of or "")
        if harness is None or harness.kind != "harness" or harness.owner_id != actor.id:
            raise Refused("forbidden", "a home is opened for a harness you connect", "home_of")
        if body.kind != "direct" or members != [harness.id]:
            raise Refused(
                "invalid_event", "a home is a direct space with you and the harness", "home_of"
            )
        has_home = (
            await self.conn.execute(
                select(t.spaces.c.id).where(
                    and_(
                        t.spaces.c.workspace_id == self.workspace_id,
                        t.spaces.c.home_of == harness.id,
                    )
                )
            )
        ).first()
        if has_home:
            raise Refused("invalid_event", "that harness has its home already", "home_of")

    async def check_membership_added(self, body: MembershipAdded, actor: Actor) -> dict[str, Any]:
        # spec/spaces.md, Who may do what in a space: members and owners add; a guest
        # talks and leaves; a harness talks and works.
        standing = await self.check_member(body.space_id, actor)
        if actor.kind == "harness":
            raise Refused("forbidden", "a harness talks and works in a space; it adds nobody")
        if standing == "guest":
            raise Refused("forbidden", "a guest may talk and leave, not add anyone")
        if body.standing == "owner" and standing != "owner":
            raise Refused("forbidden", "only the space's owner makes another owner", "standing")
        if await self.participant(body.participant_id) is None:
            raise Refused("not_found", "no such participant in this workspace", "participant_id")
        if await self.standing(body.space_id, body.participant_id):
            raise Refused("invalid_event", "already a member of this space", "participant_id")
        await self._add_member(body.space_id, body.participant_id, body.standing, self.head_seq + 1)
        return {}

    async def check_membership_removed(
        self, body: MembershipRemoved, actor: Actor
    ) -> dict[str, Any]:
        standing = await self.check_member(body.space_id, actor)
        if body.participant_id != actor.id:
            if actor.kind == "harness":
                raise Refused(
                    "forbidden", "a harness talks and works in a space; it removes nobody"
                )
            if standing != "owner":
                raise Refused("forbidden", "only the space's owner takes others out of it")
        if not await self.standing(body.space_id, body.participant_id):
            raise Refused("invalid_event", "not a member of this space", "participant_id")
        if actor.kind == "harness":
            space = await self.space(body.space_id)
            if space is not None and space.home_of == actor.id:
                raise Refused("forbidden", "a harness stays in its home")
        await self.conn.execute(
            delete(t.memberships).where(
                and_(
                    t.memberships.c.space_id == body.space_id,
                    t.memberships.c.participant_id == body.participant_id,
                )
            )
        )
        self._standings[(body.space_id, body.participant_id)] = None
        await self._log_membership(body.space_id, body.participant_id, False, self.head_seq + 1)
        return {}

    async def check_space_updated(self, body: SpaceUpdated, actor: Actor) -> dict[str, Any]:
        """Retitle, archive or unarchive (spec/spaces.md, Retitling and archiving)."""
        standing = await self.check_member(body.space_id, actor)
        space = await self.space(body.space_id)
        if space is None:  # a member of a space that is not there: door state is broken
            raise Refused("forbidden", "you are not a member of this space", "space_id")
        if actor.kind == "harness":
            if not await self.opened(space, actor.id):
                raise Refused(
                    "forbidden", "a harness retitles or closes only a space it opened itself"
                )
        elif actor.kind != "person":
            raise Refused("forbidden", "a space is retitled and archived by who is in it")
        elif standing == "guest":
            raise Refused("forbidden", "a guest may talk and leave, not retitle or archive")
        elif space.locked:
            # spec/websocket.md: while a room's changes are locked no person renames,
            # archives or deletes it; its opening harness's own changes still land.
            raise Refused(
                "forbidden", "this room's changes are locked; unlock it to rename or archive it"
            )
        if body.state == "closed" and space.home_of is not None:
            raise Refused("forbidden", "a harness's home is never archived", "state")
        if body.state is not None and body.state == space.state:
            already = "archived" if space.state == "closed" else "open"
            raise Refused("invalid_event", f"this space is {already} already", "state")
        if body.title is not None and body.title == space.title:
            raise Refused("invalid_event", "that is the space's title already", "title")
        changes: dict[str, Any] = {}
        if body.state is not None:
            changes["state"] = body.state
        if body.title is not None:
            changes["title"] = body.title
            if actor.kind == "person":
                changes["title_held"] = True
        await self.conn.execute(update(t.spaces).where(t.spaces.c.id == space.id).values(**changes))
        return {}

    async def check_space_lock_set(self, body: SpaceLockSet, actor: Actor) -> dict[str, Any]:
        """``POST /v1/spaces/:id/lock``: a person's, the room's owner or a workspace's."""
        standing = await self.check_member(body.space_id, actor)
        space = await self.space(body.space_id)
        if space is None:
            raise Refused("forbidden", "you are not a member of this space", "space_id")
        if actor.kind != "person":
            raise Refused("forbidden", "locking a room's changes is a person's to do")
        me = await self.participant(actor.id)
        if standing != "owner" and (me is None or me.role not in ("owner", "admin")):
            raise Refused(
                "forbidden",
                "only the room's owner, or a workspace owner or admin, locks its changes",
            )
        if body.locked == space.locked:
            already = "locked" if space.locked else "not locked"
            raise Refused("invalid_event", f"the room's changes are {already} already", "locked")
        await self.conn.execute(
            update(t.spaces).where(t.spaces.c.id == space.id).values(locked=body.locked)
        )
        return {}

    async def opened(self, space: Space, harness_id: str) -> bool:
        """Whether the harness opened the space itself (or claimed it) through its door."""
        row = (
            await self.conn.execute(
                select(t.space_openers.c.since_seq).where(
                    and_(
                        t.space_openers.c.space_id == space.id,
                        t.space_openers.c.harness_id == harness_id,
                    )
                )
            )
        ).first()
        return row is not None

    # --- the harness door (docs/adr/0007) ---------------------------------------------

    async def run_open_space(self, command: OpenSpace, actor: Actor) -> None:
        """``POST /v1/harnesses/:id/spaces``: open, find, join, retitle or claim by key.

        spec/spaces.md, How one is opened. Logs what changed, which may be nothing: the
        same key with the same title finds the same space.
        """
        harness = await self.participant(actor.id)
        if actor.kind != "harness" or harness is None or harness.owner_id is None:
            raise Refused("forbidden", "only a harness opens spaces through its door")
        space: Space | None
        if command.space_id is not None:
            claimed = await self.claim(command, harness)
            if claimed is None:
                return
            space = claimed
        else:
            space = await self.space_by_key(command.key)
        if space is None:
            await self.open_by_key(command, harness)
            return
        if not await self.opened(space, harness.id):
            await self.join_by_key(command, space, harness)
        elif await self.standing(space.id, harness.id) is None:
            raise Refused(
                "forbidden",
                "you are no longer in the space that key names; somebody in it may add you back",
                "key",
            )
        if command.title is not None and command.title != space.title and not space.title_held:
            # A person's rename holds over the door's title (spec/spaces.md).
            await self.conn.execute(
                update(t.spaces).where(t.spaces.c.id == space.id).values(title=command.title)
            )
            self.stage(SpaceUpdated(space_id=space.id, title=command.title), {}, actor)

    async def claim(self, command: OpenSpace, harness: Participant) -> Space | None:
        """A room a person asked of this harness takes the harness's key (``space.claimed``).

        Returns the space when it was claimed under this key already (a repeat finds it,
        and may retitle it), None once the claim is staged.
        """
        space = await self.space(command.space_id or "")
        if space is None or space.asked_of != harness.id:
            raise Refused("forbidden", "that room was not asked of you", "space_id")
        if space.key is not None:
            if space.key == command.key:
                return space
            raise Refused(
                "invalid_event", "that room was claimed already, under another key", "key"
            )
        if await self.space_by_key(command.key) is not None:
            raise Refused("invalid_event", "that key names another space already", "key")
        if await self.standing(space.id, harness.id) is None:
            raise Refused(
                "forbidden",
                "you are no longer in that room; somebody in it may add you back",
                "space_id",
            )
        seq = self.head_seq + 1
        await self.conn.execute(
            update(t.spaces)
            .where(t.spaces.c.id == space.id)
            .values(key=command.key, key_shared=command.shared)
        )
        await self._add_opener(space.id, harness.id, seq)
        actor = Actor(kind="harness", id=harness.id)
        self.stage(
            SpaceClaimed(space_id=space.id, key=command.key, shared=command.shared), {}, actor
        )
        if command.title is not None and command.title != space.title and not space.title_held:
            await self.conn.execute(
                update(t.spaces).where(t.spaces.c.id == space.id).values(title=command.title)
            )
            self.stage(SpaceUpdated(space_id=space.id, title=command.title), {}, actor)
        return None

    async def open_by_key(self, command: OpenSpace, harness: Participant) -> None:
        """A direct space with the harness and its owner in it, opened for the owner."""
        owner_id = harness.owner_id or ""
        space_id = new_id("spc")
        seq = self.head_seq + 1
        await self.conn.execute(
            insert(t.spaces).values(
                id=space_id,
                workspace_id=self.workspace_id,
                kind="direct",
                title=command.title,
                created_by=harness.id,
                created_seq=seq,
                key=command.key,
                key_shared=command.shared,
            )
        )
        await self._add_member(space_id, owner_id, "owner", seq)
        await self._add_member(space_id, harness.id, "member", seq)
        await self._add_opener(space_id, harness.id, seq)
        body = SpaceCreated(
            space_id=space_id,
            kind="direct",
            title=command.title,
            key=command.key,
            shared=command.shared,
            opened_for=owner_id,
        )
        self.stage(body, {}, Actor(kind="harness", id=harness.id))

    async def join_by_key(self, command: OpenSpace, space: Space, harness: Participant) -> None:
        """A second harness on a shared key joins the space, with its owner beside it."""
        if not (space.key_shared and command.shared):
            raise Refused(
                "forbidden",
                "that key names another harness's space; a key is a harness's own unless "
                "both say it is shared",
                "key",
            )
        actor = Actor(kind="harness", id=harness.id)
        for who in dict.fromkeys((harness.id, harness.owner_id or "")):
            if await self.standing(space.id, who) is None:
                await self._add_member(space.id, who, "member", self.head_seq + 1)
                self.stage(MembershipAdded(space_id=space.id, participant_id=who), {}, actor)
        await self._add_opener(space.id, harness.id, self.head_seq + 1)
        self.stage(SpaceClaimed(space_id=space.id, key=command.key, shared=True), {}, actor)

    async def _add_opener(self, space_id: str, harness_id: str, seq: int) -> None:
        await self.conn.execute(
            insert(t.space_openers).values(
                space_id=space_id,
                harness_id=harness_id,
                workspace_id=self.workspace_id,
                since_seq=seq,
            )
        )

    async def check_message_post(self, body: MessagePost, actor: Actor) -> dict[str, Any]:
        await self.check_member(body.space_id, actor)
        why = refusal(body.kind, actor.kind)  # the credential's kind: no query per post
        if why is not None:
            raise Refused("forbidden", why, "kind")
        if (
            body.handoff is not None
            and await self.standing(body.space_id, body.handoff.recipient) is None
        ):
            raise Refused(
                "not_found", "a hand-off goes to somebody in this room", "handoff.recipient"
            )
        return await self.address_message(body, actor)

    async def check_turn_passed(self, body: MessagePost, actor: Actor) -> TurnPassed:
        """A harness's ``NO_REPLY``: logged as turn.passed, not as a message (websocket.md)."""
        await self.check_member(body.space_id, actor)
        if body.reply_to and await self.message_author(body.space_id, body.reply_to) is None:
            raise Refused("not_found", "reply_to names no message in this space", "reply_to")
        return TurnPassed(space_id=body.space_id, reply_to=body.reply_to)

    async def address_message(self, body: MessagePost, actor: Actor) -> dict[str, Any]:
        """Fill in ``mentions`` and ``addressed_to``, once, at append (DESIGN.md §2)."""
        members = await self.room_members(body.space_id)
        sender = next((m for m in members if m.id == actor.id), None)
        if sender is None:  # an operator or system writer: the words are for the people
            return {"mentions": [], "addressed_to": []}
        reply_author = None
        if body.reply_to:
            reply_author = await self.message_author(body.space_id, body.reply_to)
            if reply_author is None:
                raise Refused("not_found", "reply_to names no message in this space", "reply_to")
        text = body.text or ""
        to = body.to
        if to is None and body.handoff is not None:  # a hand-off is for its recipient
            to = [body.handoff.recipient]
        decided = address(
            sender=sender, text=text, members=members, to=to, reply_author=reply_author
        )
        if decided.rule == "5:last":  # only then does the sender's last choice matter
            decided = address(
                sender=sender,
                text=text,
                members=members,
                to=to,
                reply_author=reply_author,
                last_choice=await self.address_choice(body.space_id, actor.id),
            )
        if decided.choice is not None:
            await self.remember_choice(body.space_id, actor.id, decided.choice)
        return {"mentions": decided.mentions, "addressed_to": decided.addressed_to}

    async def room_members(self, space_id: str) -> list[Member]:
        if space_id not in self._rooms:
            rows = await self.conn.execute(
                select(t.participants.c.id, t.participants.c.kind, t.participants.c.name)
                .select_from(
                    t.memberships.join(
                        t.participants, t.memberships.c.participant_id == t.participants.c.id
                    )
                )
                .where(t.memberships.c.space_id == threads.room_of(space_id))
                .order_by(t.memberships.c.since_seq, t.participants.c.id)
            )
            self._rooms[space_id] = [Member(r.id, r.kind, r.name) for r in rows]
        return self._rooms[space_id]

    async def message_author(self, space_id: str, message_id: str) -> Member | None:
        """Who said a message of this space (a reply's addressee), or None."""
        said = await words.find(self, message_id)
        if said is None or said.space_id != space_id or said.author_kind not in PARTICIPANTS:
            return None
        return Member(said.author_id, said.author_kind, "")

    async def address_choice(self, space_id: str, participant_id: str) -> Choice | None:
        row = (
            await self.conn.execute(
                select(t.address_choices.c.kind, t.address_choices.c.ids).where(
                    and_(
                        t.address_choices.c.space_id == space_id,
                        t.address_choices.c.participant_id == participant_id,
                    )
                )
            )
        ).first()
        return Choice(row.kind, tuple(row.ids)) if row else None

    async def remember_choice(self, space_id: str, participant_id: str, choice: Choice) -> None:
        stmt = pg_insert(t.address_choices).values(
            space_id=space_id, participant_id=participant_id, kind=choice.kind, ids=list(choice.ids)
        )
        await self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["space_id", "participant_id"],
                set_={"kind": stmt.excluded.kind, "ids": stmt.excluded.ids},
            )
        )

    # --- writing -------------------------------------------------------------------

    async def _add_member(
        self, space_id: str, participant_id: str, standing: str, seq: int
    ) -> None:
        self._standings[(space_id, participant_id)] = standing
        await self.conn.execute(
            insert(t.memberships).values(
                space_id=space_id,
                participant_id=participant_id,
                workspace_id=self.workspace_id,
                standing=standing,
                since_seq=seq,
            )
        )
        await self._log_membership(space_id, participant_id, True, seq)

    async def _log_membership(
        self, space_id: str, participant_id: str, added: bool, seq: int
    ) -> None:
        self._rooms.pop(space_id, None)
        await self.conn.execute(
            insert(t.membership_log).values(
                workspace_id=self.workspace_id,
                seq=seq,
                space_id=space_id,
                participant_id=participant_id,
                added=added,
            )
        )

    async def check(
        self, body: EventBody, actor: Actor, request: AppendRequest | None
    ) -> dict[str, Any]:
        """Decide the rule for one event, update the door state, and say what Chips fills in."""
        await threads.refuse_room_operation(self, body, actor)
        match body:
            case WorkspaceCreated():
                return await self.check_workspace_created(body, actor)
            case ParticipantJoined() if request is not None:
                return await self.check_participant_joined(body, actor, request)
            case SpaceCreated() if threads.is_thread_event(body):
                return await threads.check_thread_created(self, body, actor)
            case SpaceCreated():
                return await self.check_space_created(body, actor)
            case SpaceUpdated():
                return await self.check_space_updated(body, actor)
            case SpaceLockSet():
                return await self.check_space_lock_set(body, actor)
            case HarnessDeclared():
                return await self.check_harness_declared(body, actor)
            case HarnessDisconnected():
                return await self.check_harness_disconnected(body, actor)
            case MembershipAdded():
                return await self.check_membership_added(body, actor)
            case MembershipRemoved():
                return await self.check_membership_removed(body, actor)
            case MessagePost():
                planned = await files.decide_post(self, body, actor)
                filled = await self.check_message_post(body, actor)
                filled.update(await files.apply_post(self.conn, planned))
                return await runs.with_receipt(self, body, actor, request, filled)
            case AttachmentCapsSet():
                me = await self.participant(actor.id)
                return files.check_caps_set(me.role if me else None, body, actor)
            case AttachmentFetched():
                await self.check_member(body.space_id, actor)
                return files.check_fetched(body, actor)
            case MessageEdited():
                return await words.check_edited(self, body, actor)
            case MessageDeleted():
                return await words.check_deleted(self, body, actor)
            case MessageHidden() | MessageShown():
                return await words.check_hidden(self, body, actor)
            case MessagePinned() | MessageUnpinned():
                return await words.check_pinned(self, body, actor)
            case Feedback():
                return await words.check_feedback(self, body, actor)
            case _ if isinstance(body, runs.RUN_EVENTS):
                return await runs.check_run_event(self, body, actor, request)
            case SpaceClaimed():
                raise Refused("forbidden", "a harness claims a space through its door", "type")
            case SpaceErased():
                raise Refused("invalid_event", "a space is deleted on its own", "type")
        raise Refused("invalid_event", f"{body.type} has no rule at the door", "type")

    async def append(
        self, request: AppendRequest, traceparent: str | None = None
    ) -> list[dict[str, Any]]:
        """Check and log every event of ``request``; return them as logged.

        Each event is staged (given its seq) before the next is checked, so a rule and the
        door state it writes always see the seq of the event they are about. Every event
        keeps the trace context of the request that brought it.
        """
        # By seq rather than by position: an erasure flushes what was pending (erase.py).
        first = self.head_seq + 1
        for raw in request.events:
            await self.admit(raw, request)
        logged = [e for e in self.pending if e["seq"] >= first]
        for event in logged:
            self.traces[event["seq"]] = traceparent
        return logged

    async def admit(self, raw: Any, request: AppendRequest) -> None:
        """Decode one event the request carries, decide its rule and stage it.

        A command (docs/adr/0007) may stage several events; it runs under a savepoint, so
        a refusal after some door state was written leaves none of it behind.
        """
        if isinstance(raw, dict) and "command" in raw:
            async with self.conn.begin_nested():
                await self.run_command(raw, request.actor)
            return
        raw = await runs.place_on_run(self, raw, request.actor)  # a reply on the run
        try:
            body = parse_event(raw)
        except InvalidEvent as exc:
            raise Refused("invalid_event", exc.message, exc.field) from None
        # A post with files says something, whatever its words (websocket.md).
        if (
            isinstance(body, MessagePost)
            and not body.upload_ids
            and passes(body.kind, body.text, request.actor.kind)
        ):
            passed = await self.check_turn_passed(body, request.actor)
            self.stage(passed, {}, request.actor)
            return
        if isinstance(body, MessagePost) and request.actor.kind == "person" and body.text:
            if await runs.admit_composer(self, body, request.actor):
                return
            try:
                command = parse_command(body.text)
            except CommandError as exc:
                await self.check_member(body.space_id, request.actor)
                raise Refused("invalid_event", str(exc), "text") from None
            if command is not None:
                async with self.conn.begin_nested():
                    await self.run_composer(body.space_id, command, request.actor)
                return
        if isinstance(body, SpaceErased):  # may be logged as an archive instead (erase.py)
            await erase.admit_space_erased(self, body, request.actor)
            return
        if isinstance(body, lanes.LANE_EVENTS):  # logged in both of its rooms (ADR 0017)
            await lanes.admit_lane(self, body, request.actor)
            return
        await self.decide(body, request.actor, request)

    async def decide(self, body: EventBody, actor: Actor, request: AppendRequest | None) -> None:
        """Decide one event's rule and stage it, after the runs it stops (websocket.md).

        A harness taken out of a room, or a room archived, stops the runs there: each is
        sent ``run.cancel`` while the harness is still in the room, with the lanes it
        opened or works (stopping.py). The operation's own rule is decided first (and
        undone), so a refused one stops nothing and is refused for its own reason.
        """
        stops = stopping.stopped_by(body)
        running = await stopping.runs_to_stop(self, stops[1], stops[2]) if stops else []
        if stops and running:
            async with self.conn.begin_nested() as trial:
                await self.check(body, actor, request)
                await trial.rollback()
            self._standings.clear()
            self._rooms.clear()
            await stopping.stop(self, running, stops[0], actor)
        filled = await self.check(body, actor, request)
        self.stage(body, filled, actor)

    async def run_composer(self, space_id: str, command: Command, actor: Actor) -> None:
        """A person's composer command, logged as the room operation it names (ADR 0008).

        Each event it becomes is decided by the same rule as when it is sent as itself.
        """
        await self.check_member(space_id, actor)
        bodies: list[EventBody] = []
        if command.name == "add":
            people = await self.directory()
            for handle in command.handles:
                who = self.resolve(handle, people)
                bodies.append(MembershipAdded(space_id=space_id, participant_id=who))
        elif command.name == "remove":
            people = await self.directory(space_id)
            for handle in command.handles:
                who = self.resolve(handle, people)
                bodies.append(MembershipRemoved(space_id=space_id, participant_id=who))
        elif command.name == "leave":
            bodies.append(MembershipRemoved(space_id=space_id, participant_id=actor.id))
        elif command.name == "title":
            bodies.append(SpaceUpdated(space_id=space_id, title=command.title))
        elif command.name == "wrong":
            said = await words.last_harness_message(self, space_id)
            if said is None:
                raise Refused("not_found", "no harness has said anything here to correct", "text")
            bodies.append(
                Feedback(space_id=space_id, message_id=said, kind="correction", note=command.note)
            )
        else:
            state = "closed" if command.name == "archive" else "open"
            bodies.append(SpaceUpdated(space_id=space_id, state=state))
        for body in bodies:
            await self.decide(body, actor, None)

    @staticmethod
    def resolve(handle: str, people: list[tuple[str, str]]) -> str:
        try:
            return resolve_handle(handle, people)
        except CommandError as exc:
            code = "not_found" if str(exc).startswith("nobody") else "invalid_event"
            raise Refused(code, str(exc), "text") from None

    async def directory(self, space_id: str | None = None) -> list[tuple[str, str]]:
        """``(id, name)`` of the workspace's participants, or of a space's members."""
        p = t.participants.c
        query = select(p.id, p.name).where(p.workspace_id == self.workspace_id)
        if space_id is not None:
            query = query.where(
                p.id.in_(
                    select(t.memberships.c.participant_id).where(
                        t.memberships.c.space_id == space_id
                    )
                )
            )
        rows = await self.conn.execute(query.order_by(p.joined_seq, p.id))
        return [(row.id, row.name) for row in rows]

    async def run_command(self, raw: dict[str, Any], actor: Actor) -> None:
        try:
            command = OpenSpace.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "command"
            raise Refused("invalid_event", f"{field}: {err['msg']}", field) from None
        await self.run_open_space(command, actor)

    def stage(self, body: EventBody, filled: dict[str, Any], actor: Actor) -> dict[str, Any]:
        """Give an admitted event its envelope and the next seq; flush() writes it."""
        seq = self.head_seq + 1
        event_id = new_id("evt")
        fields = body.model_dump(mode="json", exclude_none=True)
        fields.update(filled)
        event: dict[str, Any] = {
            "v": EVENT_VERSION,
            "id": event_id,
            "seq": seq,
            "ts": iso(self.now),
            "workspace_id": self.workspace_id,
            "actor": actor.model_dump(),
            **fields,
        }
        if body.type == "message.post":
            event["message_id"] = message_id_for(event_id)
        event = canonical(event)
        self.pending.append(event)
        self.head_seq = seq
        return event

    async def flush(self) -> None:
        """Write every event this door let in, and its outbox row, in two statements."""
        if not self.pending:
            return
        await self.conn.execute(
            insert(t.events),
            [
                {
                    "workspace_id": self.workspace_id,
                    "seq": e["seq"],
                    "id": e["id"],
                    "type": e["type"],
                    "ts": self.now,
                    "actor_id": e["actor"]["id"],
                    "space_id": e.get("space_id"),
                    "body": e,
                    "traceparent": self.traces.get(e["seq"]),
                }
                for e in self.pending
            ],
        )
        await self.conn.execute(
            insert(t.outbox),
            [{"workspace_id": self.workspace_id, "seq": e["seq"]} for e in self.pending],
        )
        self.pending.clear()
