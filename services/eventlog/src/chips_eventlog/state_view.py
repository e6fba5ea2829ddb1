"""What the door reads of a workspace's state: its maps, and the questions rules ask them.

:class:`DoorView` holds a workspace's door-state maps and answers the rules' questions
about them (who stands where in a room, which runs are live, what became of a message);
:class:`~chips_eventlog.state.DoorState` adds on top how the maps change (docs/adr/0021,
docs/adr/0141). Pure: no I/O.
"""

from __future__ import annotations

from collections import OrderedDict

from chips_common.rules.addressing import Choice
from chips_common.rules.exchanges import Exchange, ExchangeSettings
from chips_common.rules.files import Version
from chips_common.rules.handles import Member, as_shown
from chips_eventlog.state_rows import (
    Ask,
    Card,
    Device,
    FileVersion,
    HeldWords,
    Invite,
    Lane,
    Mark,
    Membership,
    Message,
    Participant,
    Run,
    Said,
    Space,
    Upload,
)


class DoorView:
    """One workspace's door-state maps, and what the rules read from them."""

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
        # (credential, key) → the seqs its request logged and that request's fingerprint.
        self.keys: OrderedDict[tuple[str, str], tuple[list[int], str | None]] = OrderedDict()
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
        # Invites and pairing codes, and every credential (docs/adr/0125).
        self.invites: dict[str, Invite] = {}
        self.devices: dict[str, Device] = {}
        # Read for one batch only (state_store.prefetch): the attachments service writes
        # uploads, so they are read where a batch names them.
        self.last_harness_said: dict[str, str | None] = {}
        self.taken_space_ids: set[str] = set()
        self.uploads: dict[str, Upload] = {}
        self.files: dict[tuple[str, str], tuple[FileVersion, ...]] = {}
        # Each room's members as shown, worked out once until a change touches them.
        self._rooms: dict[str, list[Member]] = {}

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
