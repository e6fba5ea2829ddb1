"""A workspace's door state, in memory (docs/architecture/design.md §2, docs/adr/0021).

The eventlog replica that holds a partition's lease is the only writer of its
workspaces, so it keeps each workspace's door state here while it holds the lease:
participants, spaces, memberships and standing, openers, address choices, runs, cards,
lanes, what was done to messages, and a window of recent messages and idempotency keys.

The rules read this snapshot and return :data:`Change` values; nothing else changes it.
:meth:`DoorState.apply` applies a change and notes it in a journal, so a refused request
is undone with :meth:`DoorState.undo`, and the rows it touched are written together by
``state_store.flush`` at the end of the transaction. A transaction that fails leaves no
trace here either: the caller drops the whole state and reads it again from Postgres.

The records the state holds are in ``state_rows``, the changes a rule returns in
``state_changes``; the rules import both from here. The keyed tables are one list,
:data:`TABLES`: what a batch touched, what an erasure removes and what
``state_store.flush`` writes are each driven from it (docs/adr/0141).

This module is pure: no I/O, so every rule can be tested without infrastructure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from chips_common.rules import may
from chips_eventlog.state_changes import (
    AddCredential,
    AddMember,
    AddOpener,
    Change,
    Decision,
    EraseSpaces,
    PostFile,
    PutAsk,
    PutCard,
    PutChoice,
    PutExchange,
    PutHeld,
    PutInvite,
    PutLane,
    PutMark,
    PutParticipant,
    PutRun,
    PutSpace,
    RemoveMember,
    Rename,
    RevokeCredentials,
    RevokeDevice,
    SetHidden,
    SetReaction,
    SetReferee,
    SetStanding,
)
from chips_eventlog.state_rows import (
    AgentFacts,
    Ask,
    Card,
    Device,
    FileVersion,
    HeldWords,
    Invite,
    Lane,
    Mark,
    Membership,
    MembershipLogged,
    Message,
    Participant,
    Run,
    Said,
    Space,
    Upload,
)
from chips_eventlog.state_view import DoorView

__all__ = [
    "KEY_WINDOW",
    "LIVE",
    "MESSAGE_WINDOW",
    "TABLES",
    "TABLE_NAMES",
    "AddCredential",
    "AddMember",
    "AddOpener",
    "AgentFacts",
    "Ask",
    "Card",
    "Change",
    "Decision",
    "Device",
    "DoorState",
    "DoorTable",
    "EraseSpaces",
    "FileVersion",
    "HeldWords",
    "Invite",
    "Lane",
    "Mark",
    "Membership",
    "Message",
    "Participant",
    "PostFile",
    "PutAsk",
    "PutCard",
    "PutChoice",
    "PutExchange",
    "PutHeld",
    "PutInvite",
    "PutLane",
    "PutMark",
    "PutParticipant",
    "PutRun",
    "PutSpace",
    "RemoveMember",
    "Rename",
    "RevokeCredentials",
    "RevokeDevice",
    "Run",
    "Said",
    "SetHidden",
    "SetReaction",
    "SetReferee",
    "SetStanding",
    "Space",
    "Upload",
]

LIVE = may.LIVE
# How many recent messages and idempotency keys each workspace keeps in memory; older
# ones are read from Postgres when a request names them.
MESSAGE_WINDOW = 20_000
KEY_WINDOW = 20_000

_MISSING: Any = object()


@dataclass(frozen=True)
class DoorTable:
    """A keyed door-state table a batch may touch.

    ``name`` is its Postgres table (and its key in ``DoorState.touched``), ``held`` the
    map of :class:`DoorState` that holds its rows. ``about`` gives the spaces a row
    ``(key, value)`` is about: erasing one of them removes the row. It is None where no
    row is about a space, and for memberships and spaces, whose erasure
    :meth:`DoorState._erase` says itself (the log of who left, the tombstone).
    """

    name: str
    held: str
    about: Callable[[Any, Any], Iterable[str]] | None = None


# The keyed door-state tables; state_store writes each one's touched rows in one
# statement (two when some were removed).
TABLES: tuple[DoorTable, ...] = (
    DoorTable("participants", "participants"),
    DoorTable("spaces", "spaces"),
    DoorTable("memberships", "members"),
    DoorTable("space_openers", "openers", lambda key, _: (key[0],)),
    DoorTable("address_choices", "choices", lambda key, _: (key[0],)),
    # Runs in the room are gone with it, and so is every lane into or out of it.
    DoorTable("runs", "runs", lambda _, run: (run.space_id,)),
    DoorTable("run_cards", "cards", lambda _, card: (card.space_id,)),
    DoorTable("lanes", "lanes", lambda _, lane: (lane.from_space_id, lane.to_space_id)),
    DoorTable("message_marks", "marks", lambda _, mark: (mark.space_id,)),
    # Hidden messages and reactions are held with their message's space.
    DoorTable("message_hidden", "hidden", lambda _, space_id: (space_id,)),
    DoorTable("reactions", "reactions", lambda _, space_id: (space_id,)),
    DoorTable("agent_asks", "asks", lambda _, ask: (ask.space_id,)),
    DoorTable("held_words", "held"),
    DoorTable("door_exchanges", "exchanges", lambda space_id, _: (space_id,)),
    DoorTable("invites", "invites"),
    DoorTable("devices", "devices"),
)
TABLE_NAMES = tuple(table.name for table in TABLES)


class DoorState(DoorView):
    """One workspace's door state, held while this replica holds its partition's lease."""

    def __init__(self, workspace_id: str, head_seq: int = 0, name: str = "") -> None:
        super().__init__(workspace_id, head_seq, name)
        # Since the last settle(): the journal of every change, and what to write.
        self._journal: list[tuple[Any, Any, Any]] = []
        self.touched: dict[str, set[Any]] = {name: set() for name in TABLE_NAMES}
        self.membership_log: list[MembershipLogged] = []
        self.credentials: list[AddCredential] = []
        self.revoked: list[RevokeCredentials] = []
        self.erasures: list[EraseSpaces] = []
        self.posted_files: list[PostFile] = []
        self.renamed = False

    # --- changing ---------------------------------------------------------------------------

    def mark(self) -> tuple[int, int, int, int, int, int]:
        """Where a request starts, to undo it with :meth:`undo` if it is refused."""
        return (
            len(self._journal),
            len(self.membership_log),
            len(self.credentials),
            len(self.revoked),
            len(self.erasures),
            len(self.posted_files),
        )

    def undo(self, mark: tuple[int, int, int, int, int, int]) -> None:
        journal, logged, credentials, revoked, erasures, posted = mark
        while len(self._journal) > journal:
            container, key, old = self._journal.pop()
            if old is _MISSING:
                container.pop(key, None)
            else:
                container[key] = old
        del self.membership_log[logged:]
        del self.credentials[credentials:]
        del self.revoked[revoked:]
        del self.erasures[erasures:]
        del self.posted_files[posted:]
        self._rooms.clear()

    def principals_changed(self) -> bool:
        """Whether the batch changed who a credential is: a participant put (made,
        renamed, re-roled, gone), a participant's credentials or a device revoked."""
        return bool(self.touched["participants"] or self.revoked or self.touched["devices"])

    def settle(
        self, head_seq: int, keys: list[tuple[tuple[str, str], list[int], str | None]]
    ) -> None:
        """The batch committed: forget the journal, keep its keys, trim the windows."""
        self.head_seq = head_seq
        self._journal.clear()
        for touched in self.touched.values():
            if touched:  # most tables are touched by no batch
                touched.clear()
        self.membership_log.clear()
        self.credentials.clear()
        self.revoked.clear()
        self.erasures.clear()
        self.posted_files.clear()
        self.renamed = False
        self.last_harness_said.clear()
        self.taken_space_ids.clear()
        self.uploads.clear()
        self.files.clear()
        for key, seqs, fingerprint in keys:
            self.keys[key] = (seqs, fingerprint)
        while len(self.keys) > KEY_WINDOW:
            self.keys.popitem(last=False)
        while len(self.messages) > MESSAGE_WINDOW:
            self.messages.popitem(last=False)

    def remember(self, message: Message) -> None:
        """A message posted (or read back for a request that names it)."""
        self._put(self.messages, message.message_id, message)

    def apply(self, changes: list[Change]) -> None:
        for change in changes:
            self._apply(change)

    def _apply(self, change: Change) -> None:
        match change:
            case Rename(name):
                self._put(self.__dict__, "name", name)
                self.renamed = True
            case PutParticipant(p):
                self._put(self.participants, p.id, p)
                self.touched["participants"].add(p.id)
                self._rooms.clear()
            case AddCredential():
                self.credentials.append(change)
                self._put(
                    self.devices,
                    change.id,
                    Device(change.id, change.participant_id, change.kind),
                )
            case RevokeDevice(device_id):
                device = self.devices.get(device_id)
                if device is not None:
                    self._put(self.devices, device_id, replace(device, revoked=True))
                    self.touched["devices"].add(device_id)
            case PutInvite(invite):
                self._put(self.invites, invite.id, invite)
                self.touched["invites"].add(invite.id)
            case RevokeCredentials():
                self.revoked.append(change)
            case PutSpace(space):
                self._put_space(space)
            case AddMember(space_id, pid, standing, seq):
                if space_id not in self.members:
                    self._put(self.members, space_id, {})
                self._put(self.members[space_id], pid, Membership(standing, seq))
                if pid.startswith("agt_"):
                    self._put(self.where, pid, space_id)
                self._log_membership(space_id, pid, True, seq)
            case RemoveMember(space_id, pid, seq):
                self._pop(self.members.get(space_id, {}), pid)
                if self.where.get(pid) == space_id:
                    self._pop(self.where, pid)
                self._log_membership(space_id, pid, False, seq)
            case SetStanding(space_id, pid, standing):
                old = self.members.get(space_id, {}).get(pid)
                if old is not None:
                    self._put(self.members[space_id], pid, Membership(standing, old.since_seq))
                    self.touched["memberships"].add((space_id, pid))
                    self._rooms.pop(space_id, None)
            case PutAsk(ask):
                self._put(self.asks, ask.id, ask)
                self.touched["agent_asks"].add(ask.id)
            case PutHeld(agent_id, words):
                if words:
                    self._put(self.held, agent_id, words)
                else:
                    self._pop(self.held, agent_id)
                self.touched["held_words"].add(agent_id)
            case AddOpener(space_id, harness_id, seq):
                self._put(self.openers, (space_id, harness_id), seq)
                self.touched["space_openers"].add((space_id, harness_id))
            case PutChoice(space_id, pid, choice):
                self._put(self.choices, (space_id, pid), choice)
                self.touched["address_choices"].add((space_id, pid))
            case PutRun(run):
                self._put_run(run)
            case PutCard(card):
                self._put(self.cards, (card.kind, card.id), card)
                self.touched["run_cards"].add((card.kind, card.id))
            case PutLane(lane):
                self._put(self.lanes, lane.id, lane)
                self.touched["lanes"].add(lane.id)
            case PutMark(message_id, mark):
                self._put(self.marks, message_id, mark)
                self.touched["message_marks"].add(message_id)
            case SetHidden(message_id, pid, space_id, hidden):
                if hidden:
                    self._put(self.hidden, (message_id, pid), space_id)
                else:
                    self._pop(self.hidden, (message_id, pid))
                self.touched["message_hidden"].add((message_id, pid))
            case SetReaction(message_id, pid, emoji, space_id, on):
                if on:
                    self._put(self.reactions, (message_id, pid, emoji), space_id)
                else:
                    self._pop(self.reactions, (message_id, pid, emoji))
                self.touched["reactions"].add((message_id, pid, emoji))
            case PostFile():
                self._post_file(change)
            case EraseSpaces():
                self._erase(change)
            case PutExchange(space_id, exchange):
                self._put(self.exchanges, space_id, exchange)
                self.touched["door_exchanges"].add(space_id)
            case SetReferee(settings):
                self._put(self.__dict__, "referee", settings)
                self.touched["door_exchanges"].add("")

    def _put_space(self, space: Space) -> None:
        old = self.spaces.get(space.id)
        if old is not None and old.key is not None and old.key != space.key:
            self._pop(self.by_key, old.key)
        if space.key is not None:
            self._put(self.by_key, space.key, space.id)
        if space.home_of is not None:
            self._put(self.homes, space.home_of, space.id)
        if space.root_message_id is not None:
            self._put(self.roots, space.root_message_id, space.id)
        self._put(self.spaces, space.id, space)
        self.touched["spaces"].add(space.id)

    def _put_run(self, run: Run) -> None:
        old = self.runs.get(run.id)
        if old is not None and old.state in LIVE:
            self._pop(self.live.get(old.space_id, {}), run.id)
        if run.state in LIVE:
            if run.space_id not in self.live:
                self._put(self.live, run.space_id, {})
            self._put(self.live[run.space_id], run.id, None)
        self._put(self.runs, run.id, run)
        self.touched["runs"].add(run.id)

    def _post_file(self, change: PostFile) -> None:
        upload = self.uploads[change.upload_id]
        self._put(self.uploads, upload.id, replace(upload, posted=True, space_id=change.space_id))
        key = (change.space_id, upload.name)
        version = FileVersion(
            upload.id, change.version, upload.sha256, upload.uploader_id, change.seq
        )
        self._put(self.files, key, (*self.files.get(key, ()), version))
        self.posted_files.append(change)

    def _log_membership(self, space_id: str, pid: str, added: bool, seq: int) -> None:
        self.touched["memberships"].add((space_id, pid))
        self._rooms.pop(space_id, None)
        self.membership_log.append(
            {"seq": seq, "space_id": space_id, "participant_id": pid, "added": added}
        )

    def _erase(self, change: EraseSpaces) -> None:
        erased = set(change.erased)
        # Whoever was in it is in it up to this seq and no further (docs/architecture/design.md §4).
        for pid in list(self.members.get(change.space_id, {})):
            self._log_membership(change.space_id, pid, False, change.seq)
        for space_id in erased:
            for pid in list(self.members.get(space_id, {})):
                self._pop(self.members[space_id], pid)
                if self.where.get(pid) == space_id:
                    self._pop(self.where, pid)
                self.touched["memberships"].add((space_id, pid))
            self._rooms.pop(space_id, None)
            for run_id in list(self.live.get(space_id, {})):
                self._pop(self.live[space_id], run_id)
        # The keyed tables: every row about an erased space goes.
        for table in TABLES:
            if table.about is not None:
                self._drop(table.name, getattr(self, table.held), table.about, erased)
        for message_id in [m for m, said in self.messages.items() if said.space_id in erased]:
            self._pop(self.messages, message_id)
        for space_id in erased:
            self._tombstone(space_id)
        self.erasures.append(change)

    def _drop(
        self,
        name: str,
        held: dict[Any, Any],
        about: Callable[[Any, Any], Iterable[str]],
        erased: set[str],
    ) -> None:
        """Remove the rows of ``held`` that are about an erased space."""
        for key in [k for k, row in held.items() if not erased.isdisjoint(about(k, row))]:
            self._pop(held, key)
            self.touched[name].add(key)

    def _tombstone(self, space_id: str) -> None:
        """The space's row stays as a tombstone, so its id is never given out again."""
        space = self.spaces.get(space_id)
        if space is None:
            return
        if space.key is not None:
            self._pop(self.by_key, space.key)
        tombstone = replace(
            space, state="erased", title=None, key=None, key_shared=False, asked_of=None
        )
        self._put(self.spaces, space_id, tombstone)
        self.touched["spaces"].add(space_id)

    def _put(self, container: Any, key: Any, value: Any) -> None:
        self._journal.append((container, key, container.get(key, _MISSING)))
        container[key] = value

    def _pop(self, container: Any, key: Any) -> None:
        if key in container:
            self._journal.append((container, key, container[key]))
            del container[key]
