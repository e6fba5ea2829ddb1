"""A workspace's door state, in memory (DESIGN.md §2, docs/adr/0021).

The eventlog replica that holds a partition's lease is the only writer of its
workspaces, so it keeps each workspace's door state here while it holds the lease:
participants, spaces, memberships and standing, openers, address choices, runs, cards,
lanes, what was done to messages, and a window of recent messages and idempotency keys.

The rules read this snapshot and return :data:`Change` values; nothing else changes it.
:meth:`DoorState.apply` applies a change and notes it in a journal, so a refused request
is undone with :meth:`DoorState.undo`, and the rows it touched are written together by
``state_store.flush`` at the end of the transaction. A transaction that fails leaves no
trace here either: the caller drops the whole state and reads it again from Postgres.

This module is pure: no I/O, so every rule can be tested without infrastructure.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from chips_common.rules.addressing import Choice
from chips_common.rules.exchanges import Exchange, ExchangeSettings
from chips_common.rules.files import Version
from chips_common.rules.handles import Member, as_shown

LIVE = ("running", "paused")
# How many recent messages and idempotency keys each workspace keeps in memory; older
# ones are read from Postgres when a request names them.
MESSAGE_WINDOW = 20_000
KEY_WINDOW = 20_000


@dataclass(frozen=True)
class AgentFacts:
    """What an agent is beside its name (docs/adr/0070); its harness is ``owner_id``."""

    key: str
    state: str = "active"  # "active" | "archived"
    main: bool = False
    name_by: str | None = None
    forked_from: str | None = None
    made_for: str | None = None
    # The room it last left and why (docs/adr/0071): its words while free are held for
    # the next room; a room's unarchive, or its own, brings it back there.
    left_space_id: str | None = None
    left_why: str | None = None
    # The room archived with it (it was the room's only agent), opened again with it.
    archived_room: str | None = None
    # Why a fork's copy or a new agent was registered free; the registration answers it.
    why: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Ask:
    """A person's ask of a harness for an agent (``agent.fork`` / ``agent.asked``): the
    event's id, the room, when, and the agent that answered it (docs/adr/0071)."""

    id: str
    kind: str  # "fork" | "new"
    harness_id: str
    space_id: str
    at: datetime
    agent_id: str | None = None  # the agent to copy, for a fork
    answered_by: str | None = None


@dataclass(frozen=True)
class HeldWords:
    """What a free agent said (``message.held``), to post in the next room it joins."""

    seq: int
    at: str
    text: str
    upload_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Participant:
    id: str
    kind: str
    role: str
    owner_id: str | None
    name: str = ""
    joined_seq: int = 0
    capabilities: tuple[str, ...] = ()
    # A harness's autonomy: "off" (no dial) or the dial's level (docs/adr/0031).
    autonomy: str | None = None
    # An agent's facts (kind "agent"): its harness is owner_id.
    agent: AgentFacts | None = None


@dataclass(frozen=True)
class Space:
    """A space's door state: what the rules about it are decided against."""

    id: str
    kind: str
    title: str | None
    created_by: str
    created_seq: int
    state: str = "open"
    title_held: bool = False
    home_of: str | None = None
    key: str | None = None
    key_shared: bool = False
    locked: bool = False
    asked_of: str | None = None
    parent_space_id: str | None = None
    root_message_id: str | None = None


@dataclass(frozen=True)
class Membership:
    standing: str
    since_seq: int


@dataclass(frozen=True)
class Run:
    id: str
    space_id: str
    harness_id: str
    state: str
    started_seq: int = 0
    # The agent whose turn it is, when one of the harness's agents started it (ADR 0070).
    agent_id: str | None = None


@dataclass(frozen=True)
class Card:
    kind: str
    id: str
    run_id: str
    space_id: str
    harness_id: str
    answerers: tuple[str, ...] = ()
    expires_at: datetime | None = None
    options: tuple[tuple[str, str], ...] = ()
    free_text: bool = False
    answered_by: str | None = None
    answer: str | None = None
    answered_seq: int | None = None


@dataclass(frozen=True)
class Lane:
    id: str
    run_id: str | None
    from_space_id: str
    to_space_id: str
    opener_id: str
    working_run_id: str | None
    state: str
    opened_seq: int = 0


@dataclass(frozen=True)
class Message:
    """A posted message as the door needs it: where, by whom, and what kind."""

    message_id: str
    space_id: str
    author_id: str
    author_kind: str
    kind: str = "text"


@dataclass(frozen=True)
class Mark:
    """What was done to a message since it was posted (``message_marks``)."""

    space_id: str
    deleted_seq: int | None = None
    edited_seq: int | None = None
    pinned: bool = False


@dataclass(frozen=True)
class Said:
    """A message and what became of it."""

    message_id: str
    space_id: str
    author_id: str
    author_kind: str
    kind: str
    deleted: bool
    pinned: bool


@dataclass(frozen=True)
class Upload:
    """An upload the attachments service stored, as the door needs it to post it."""

    id: str
    uploader_id: str
    name: str
    mime_type: str
    kind: str
    byte_size: int
    sha256: str
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    thumbnail: bool = False
    space_id: str | None = None
    posted: bool = False


@dataclass(frozen=True)
class FileVersion:
    """A posted version of one name in a room."""

    attachment_id: str
    version: int
    sha256: str
    uploader_id: str
    posted_seq: int


# --- the changes a rule returns --------------------------------------------------------------


@dataclass(frozen=True)
class Rename:
    name: str


@dataclass(frozen=True)
class PutParticipant:
    participant: Participant


@dataclass(frozen=True)
class AddCredential:
    id: str
    participant_id: str
    token_hash: str


@dataclass(frozen=True)
class RevokeCredentials:
    """Every live token of a participant withdrawn (``harness.disconnected``)."""

    participant_id: str


@dataclass(frozen=True)
class PutSpace:
    space: Space


@dataclass(frozen=True)
class AddMember:
    space_id: str
    participant_id: str
    standing: str
    seq: int


@dataclass(frozen=True)
class SetStanding:
    """A member's standing changed in place: a harness whose own place an agent took
    (``membership.replaced``) now stands behind its agents there (docs/adr/0071)."""

    space_id: str
    participant_id: str
    standing: str


@dataclass(frozen=True)
class PutAsk:
    ask: Ask


@dataclass(frozen=True)
class PutHeld:
    """An agent's held words as they stand now (none once posted)."""

    agent_id: str
    words: tuple[HeldWords, ...]


@dataclass(frozen=True)
class RemoveMember:
    space_id: str
    participant_id: str
    seq: int


@dataclass(frozen=True)
class AddOpener:
    space_id: str
    harness_id: str
    seq: int


@dataclass(frozen=True)
class PutChoice:
    space_id: str
    participant_id: str
    choice: Choice


@dataclass(frozen=True)
class PutRun:
    run: Run


@dataclass(frozen=True)
class PutCard:
    card: Card


@dataclass(frozen=True)
class PutLane:
    lane: Lane


@dataclass(frozen=True)
class PutMark:
    message_id: str
    mark: Mark


@dataclass(frozen=True)
class SetHidden:
    message_id: str
    participant_id: str
    space_id: str
    hidden: bool


@dataclass(frozen=True)
class SetReaction:
    message_id: str
    participant_id: str
    emoji: str
    space_id: str
    on: bool


@dataclass(frozen=True)
class PostFile:
    """An upload posted into a room at ``seq``, as ``version`` of its name."""

    upload_id: str
    space_id: str
    seq: int
    version: int
    replaces: str | None


@dataclass(frozen=True)
class EraseSpaces:
    """A space and its threads erased at ``seq`` (docs/adr/0010): their events before it,
    and every piece of door state about them, go."""

    space_id: str
    erased: tuple[str, ...]
    seq: int
    # The run.cancel its deletion sent first: they outlive the room (rules/stopping.py).
    spared: tuple[int, ...] = ()


@dataclass(frozen=True)
class PutExchange:
    """A room's exchange as the referee counts it now (rules/exchanges.py)."""

    space_id: str
    exchange: Exchange


@dataclass(frozen=True)
class SetReferee:
    """The workspace's referee settings (``workspace.referee_set``)."""

    settings: ExchangeSettings


Change = (
    Rename
    | PutParticipant
    | AddCredential
    | RevokeCredentials
    | PutSpace
    | AddMember
    | RemoveMember
    | SetStanding
    | PutAsk
    | PutHeld
    | AddOpener
    | PutChoice
    | PutRun
    | PutCard
    | PutLane
    | PutMark
    | SetHidden
    | SetReaction
    | PostFile
    | EraseSpaces
    | PutExchange
    | SetReferee
)


@dataclass
class Decision:
    """What a rule decided: the fields Chips fills in, and the door state it changes."""

    filled: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    # The id the event is logged with, when the rule must know it ahead (an ask of a
    # harness is named by its event's id); else the door gives it one.
    event_id: str | None = None


_MISSING: Any = object()

# The keyed door-state tables a batch may touch; state_store writes each one's touched
# rows in one statement (two when some were removed).
TABLES = (
    "participants",
    "spaces",
    "memberships",
    "space_openers",
    "address_choices",
    "runs",
    "run_cards",
    "lanes",
    "message_marks",
    "message_hidden",
    "reactions",
    "agent_asks",
    "held_words",
    "door_exchanges",
)


class DoorState:
    """One workspace's door state, held while this replica holds its partition's lease."""

    def __init__(self, workspace_id: str, head_seq: int = 0, name: str = "") -> None:
        self.workspace_id = workspace_id
        self.head_seq = head_seq
        self.name = name
        self.participants: dict[str, Participant] = {}
        self.spaces: dict[str, Space] = {}
        self.members: dict[str, dict[str, Membership]] = {}
        self.openers: dict[tuple[str, str], int] = {}
        self.choices: dict[tuple[str, str], Choice] = {}
        self.runs: dict[str, Run] = {}
        self.cards: dict[tuple[str, str], Card] = {}
        self.lanes: dict[str, Lane] = {}
        self.marks: dict[str, Mark] = {}
        self.hidden: dict[tuple[str, str], str] = {}
        self.reactions: dict[tuple[str, str, str], str] = {}
        # The referee's count per room, and the workspace's settings (docs/adr/0083).
        self.exchanges: dict[str, Exchange] = {}
        self.referee = ExchangeSettings()
        self.messages: OrderedDict[str, Message] = OrderedDict()
        self.keys: OrderedDict[tuple[str, str], list[int]] = OrderedDict()
        # Indexes kept with the maps above.
        self.by_key: dict[str, str] = {}
        self.homes: dict[str, str] = {}
        self.roots: dict[str, str] = {}
        self.live: dict[str, dict[str, None]] = {}
        # The room each agent is in (an agent is in one at a time, docs/adr/0070).
        self.where: dict[str, str] = {}
        # The asks of harnesses for agents, by the ask's event id, and each free agent's
        # held words, oldest first (docs/adr/0071).
        self.asks: dict[str, Ask] = {}
        self.held: dict[str, tuple[HeldWords, ...]] = {}
        # Read for one batch only (state_store.prefetch): the attachments service writes
        # uploads, so they are read where a batch names them.
        self.last_harness_said: dict[str, str | None] = {}
        self.taken_space_ids: set[str] = set()
        self.uploads: dict[str, Upload] = {}
        self.files: dict[tuple[str, str], tuple[FileVersion, ...]] = {}
        # Since the last settle(): the journal of every change, and what to write.
        self._journal: list[tuple[Any, Any, Any]] = []
        self.touched: dict[str, set[Any]] = {name: set() for name in TABLES}
        self.membership_log: list[dict[str, Any]] = []
        self.credentials: list[AddCredential] = []
        self.revoked: list[RevokeCredentials] = []
        self.erasures: list[EraseSpaces] = []
        self.posted_files: list[PostFile] = []
        self.renamed = False
        self._rooms: dict[str, list[Member]] = {}

    # --- reading ----------------------------------------------------------------------------

    def participant(self, participant_id: str) -> Participant | None:
        return self.participants.get(participant_id)

    def space(self, space_id: str) -> Space | None:
        return self.spaces.get(space_id)

    def space_by_key(self, key: str) -> Space | None:
        space_id = self.by_key.get(key)
        return self.spaces.get(space_id) if space_id is not None else None

    def room_of(self, space_id: str) -> str:
        """The space whose members are in ``space_id``: its room for a thread, else itself."""
        space = self.spaces.get(space_id)
        if space is not None and space.parent_space_id is not None:
            return space.parent_space_id
        return space_id

    def standing(self, space_id: str, participant_id: str) -> str | None:
        member = self.members.get(self.room_of(space_id), {}).get(participant_id)
        return member.standing if member is not None else None

    def room_members(self, space_id: str) -> list[Member]:
        """Who is in the room, in the order they came in (addressing decides over them).

        As everybody is shown it (docs/adr/0070): each agent with its harness beside it,
        and a harness that stands behind agents here shown as those agents.
        """
        room = self.room_of(space_id)
        if room not in self._rooms:
            here = sorted(self.members.get(room, {}).items(), key=lambda m: (m[1].since_seq, m[0]))
            found: list[Member] = []
            for pid, membership in here:
                p = self.participants.get(pid)
                if p is None:
                    continue
                behind = self.participants.get(p.owner_id or "") if p.kind == "agent" else None
                found.append(
                    Member(
                        pid,
                        p.kind,
                        p.name,
                        membership.standing,
                        behind.id if behind else None,
                        behind.name if behind else None,
                    )
                )
            self._rooms[room] = as_shown(found)
        return self._rooms[room]

    def room_of_agent(self, agent_id: str) -> str | None:
        """The room an agent is in, or None when it is free."""
        return self.where.get(agent_id)

    def agents_of(self, harness_id: str) -> list[Participant]:
        """A harness's agents, in the order they were registered."""
        found = [
            p for p in self.participants.values() if p.kind == "agent" and p.owner_id == harness_id
        ]
        return sorted(found, key=lambda p: (p.joined_seq, p.id))

    def agent_by_key(self, harness_id: str, key: str) -> Participant | None:
        for agent in self.agents_of(harness_id):
            if agent.agent is not None and agent.agent.key == key:
                return agent
        return None

    def opened(self, space_id: str, harness_id: str) -> bool:
        return (space_id, harness_id) in self.openers

    def home_of(self, harness_id: str) -> str | None:
        return self.homes.get(harness_id)

    def thread_of(self, root_message_id: str) -> str | None:
        return self.roots.get(root_message_id)

    def choice(self, space_id: str, participant_id: str) -> Choice | None:
        return self.choices.get((space_id, participant_id))

    def run(self, run_id: str) -> Run | None:
        return self.runs.get(run_id)

    def live_runs(self, space_id: str) -> list[Run]:
        running = [self.runs[r] for r in self.live.get(space_id, {})]
        return sorted(running, key=lambda r: (r.started_seq, r.id))

    def card(self, kind: str, card_id: str) -> Card | None:
        return self.cards.get((kind, card_id))

    def lane(self, lane_id: str) -> Lane | None:
        return self.lanes.get(lane_id)

    def said(self, message_id: str) -> Said | None:
        """The message ``message_id`` names in this workspace, and what became of it."""
        found = self.messages.get(message_id)
        if found is None:
            return None
        mark = self.marks.get(message_id)
        return Said(
            found.message_id,
            found.space_id,
            found.author_id,
            found.author_kind,
            found.kind,
            deleted=mark is not None and mark.deleted_seq is not None,
            pinned=mark is not None and mark.pinned,
        )

    def is_hidden(self, message_id: str, participant_id: str) -> bool:
        return (message_id, participant_id) in self.hidden

    def reacted(self, message_id: str, participant_id: str, emoji: str) -> bool:
        return (message_id, participant_id, emoji) in self.reactions

    def directory(self, space_id: str | None = None) -> list[tuple[str, str]]:
        """``(id, name)`` of the workspace's participants, or of a space's members."""
        people = sorted(self.participants.values(), key=lambda p: (p.joined_seq, p.id))
        if space_id is not None:
            here = self.members.get(space_id, {})
            people = [p for p in people if p.id in here]
        return [(p.id, p.name) for p in people]

    def threads_of(self, space_id: str) -> list[str]:
        found = [s for s in self.spaces.values() if s.parent_space_id == space_id]
        return [s.id for s in sorted(found, key=lambda s: (s.created_seq, s.id))]

    def current_file(self, space_id: str, name: str) -> tuple[Version | None, set[str]]:
        """The current version of ``name`` in the room, and the ids of all its versions."""
        versions = self.files.get((space_id, name), ())
        if not versions:
            return None, set()
        top = max(versions, key=lambda v: (v.posted_seq, v.version))
        uploader = self.participants.get(top.uploader_id)
        by_name = (uploader.name if uploader else "") or "somebody"
        current = Version(top.attachment_id, top.version, top.sha256, by_name)
        return current, {v.attachment_id for v in versions}

    def exchange(self, space_id: str) -> Exchange:
        """The room's exchange as the referee counts it (a fresh one when none)."""
        return self.exchanges.get(space_id) or Exchange()

    def space_id_taken(self, space_id: str) -> bool:
        """Whether a space has this id, here or (as read for the batch) in any workspace."""
        return space_id in self.spaces or space_id in self.taken_space_ids

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

    def settle(self, head_seq: int, keys: list[tuple[tuple[str, str], list[int]]]) -> None:
        """The batch committed: forget the journal, keep its keys, trim the windows."""
        self.head_seq = head_seq
        self._journal.clear()
        for name in TABLES:
            self.touched[name].clear()
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
        for key, seqs in keys:
            self.keys[key] = seqs
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
        # Whoever was in it is in it up to this seq and no further (DESIGN.md §4).
        for pid in list(self.members.get(change.space_id, {})):
            self._log_membership(change.space_id, pid, False, change.seq)
        for space_id in erased:
            for pid in list(self.members.get(space_id, {})):
                self._pop(self.members[space_id], pid)
                if self.where.get(pid) == space_id:
                    self._pop(self.where, pid)
                self.touched["memberships"].add((space_id, pid))
            self._rooms.pop(space_id, None)
        # The keyed tables: everything about the erased spaces goes.
        for key in [k for k in self.openers if k[0] in erased]:
            self._pop(self.openers, key)
            self.touched["space_openers"].add(key)
        for key in [k for k in self.choices if k[0] in erased]:
            self._pop(self.choices, key)
            self.touched["address_choices"].add(key)
        for space_id in [k for k in self.exchanges if k in erased]:
            self._pop(self.exchanges, space_id)
            self.touched["door_exchanges"].add(space_id)
        for message_id in [m for m, mark in self.marks.items() if mark.space_id in erased]:
            self._pop(self.marks, message_id)
            self.touched["message_marks"].add(message_id)
        for hidden in [k for k, space_id in self.hidden.items() if space_id in erased]:
            self._pop(self.hidden, hidden)
            self.touched["message_hidden"].add(hidden)
        for reaction in [k for k, space_id in self.reactions.items() if space_id in erased]:
            self._pop(self.reactions, reaction)
            self.touched["reactions"].add(reaction)
        for message_id in [m for m, said in self.messages.items() if said.space_id in erased]:
            self._pop(self.messages, message_id)
        for ask in [a for a in self.asks.values() if a.space_id in erased]:
            self._pop(self.asks, ask.id)
            self.touched["agent_asks"].add(ask.id)
        # Runs in the room are gone with it, and so is every lane into or out of it.
        for run in [r for r in self.runs.values() if r.space_id in erased]:
            self._pop(self.live.get(run.space_id, {}), run.id)
            self._pop(self.runs, run.id)
            self.touched["runs"].add(run.id)
        for card_key in [k for k, c in self.cards.items() if c.space_id in erased]:
            self._pop(self.cards, card_key)
            self.touched["run_cards"].add(card_key)
        for lane in [
            lane
            for lane in self.lanes.values()
            if lane.from_space_id in erased or lane.to_space_id in erased
        ]:
            self._pop(self.lanes, lane.id)
            self.touched["lanes"].add(lane.id)
        # The space's row stays as a tombstone, so its id is never given out again.
        for space_id in erased:
            space = self.spaces.get(space_id)
            if space is None:
                continue
            if space.key is not None:
                self._pop(self.by_key, space.key)
            tombstone = Space(
                **{
                    **space.__dict__,
                    "state": "erased",
                    "title": None,
                    "key": None,
                    "key_shared": False,
                    "asked_of": None,
                }
            )
            self._put(self.spaces, space_id, tombstone)
            self.touched["spaces"].add(space_id)
        self.erasures.append(change)

    def _put(self, container: Any, key: Any, value: Any) -> None:
        self._journal.append((container, key, container.get(key, _MISSING)))
        container[key] = value

    def _pop(self, container: Any, key: Any) -> None:
        if key in container:
            self._journal.append((container, key, container[key]))
            del container[key]
