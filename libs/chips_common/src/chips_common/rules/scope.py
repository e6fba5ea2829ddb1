"""Who is delivered which event: membership as of each event's seq (docs/architecture/design.md §4).

A credential sees the events of the spaces its participant is a member of (and of their
threads, which have no members of their own), and the workspace-wide events that belong
to no space. A ``space.erased`` goes to whoever was in the space as of its seq.
Membership is folded from the stream itself, so the decision for event N uses membership
as of N, whether the event comes from a replay or live.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from chips_common.events.wire import DeliveredJson, EventJson, delivered
from chips_common.rules.agents_view import GIVEN_KEY, as_seen_by, hidden_from, stand_ins

# Events told to the participant who did them and nobody else: a harness passing its
# turn, and a person's delete-for-me and its undo (docs/product/messages.md, Delete for me).
OWN_ONLY = frozenset({"turn.passed", "message.hidden", "message.shown"})
# An agent being made, renamed or archived: told to its harness, to the people told who
# everybody in the workspace is, and to whoever shares a room with the agent
# (docs/product/websocket.md, Agents).
AGENT_NEWS = frozenset({"agent.registered", "agent.updated"})
# Told to the agent's harness alone (message.held), or to its harness besides the room
# (what a person asks of it, and where its agents go): docs/product/websocket.md, Agents, Forks.
HARNESS_ONLY = frozenset({"message.held"})
HARNESS_TOO = frozenset(
    {"agent.attached", "agent.released", "membership.replaced", "agent.fork", "agent.asked"}
)


def told(event: EventJson, participant_id: str, kind: str) -> bool:
    """Whether an event of a space this participant is in is told to them.

    Everything is, but the events that are the doer's alone, and feedback, which a harness
    hears only about its own words (docs/product/messages.md, Feedback).
    """
    kind_of_event = event.get("type")
    if kind_of_event in OWN_ONLY:
        # Done by the participant, or by its agent: a harness passing its turn through the
        # agent Chips gave it in the room is told its pass (docs/adr/0154).
        actor = event.get("actor") or {}
        return participant_id in (actor.get("id"), actor.get("harness_id"))
    if kind_of_event == "feedback" and kind == "harness":
        return participant_id in (event.get("about"), event.get("harness_id"))
    return True


def opened_with(event: EventJson) -> list[str]:
    """Who a ``space.created`` puts in the space: its opener, the owner a harness opened it
    for, and the members it names. Nobody, for a thread: its room's members are in it."""
    if event.get("kind") == "thread":
        return []
    opener = (event.get("actor") or {}).get("id")
    found = [opener, event.get("opened_for"), *(event.get("members") or ())]
    return list(dict.fromkeys(p for p in found if p))


def standings_of(event: EventJson) -> dict[str, str]:
    """The standing each participant an event puts in a room is given there.

    A person opening a room owns it; a room a harness opens through its door is owned by
    the person it was opened for, the harness a member; the members a ``space.created``
    names are members; ``membership.added`` says the standing itself.
    """
    if event.get("type") == "membership.added":
        return {event["participant_id"]: event.get("standing") or "member"}
    if event.get("type") != "space.created" or event.get("kind") == "thread":
        return {}
    actor = event.get("actor") or {}
    found = {pid: "member" for pid in opened_with(event)}
    if actor.get("kind") == "person" and actor.get("id") in found:
        found[actor["id"]] = "owner"
    if event.get("opened_for") in found:
        found[event["opened_for"]] = "owner"
    return found


class MembershipView:
    """The spaces one participant is in, kept current by folding events in seq order.

    Beside its own spaces it folds what the agents' events are scoped by (docs/adr/0079):
    the room each agent is in, the agents a harness owns, and whether that harness has
    declared ``agents`` (until it has, :meth:`seen` shows it the pre-agents view).
    """

    def __init__(
        self,
        participant_id: str,
        spaces: Iterable[str] = (),
        parents: dict[str, str] | None = None,
        kind: str = "person",
        *,
        role: str = "member",
        agent_rooms: dict[str, set[str]] | None = None,
        own_agents: Iterable[str] = (),
        speaks_agents: bool = False,
        given_agents: Mapping[str, str] | None = None,
    ) -> None:
        self.participant_id = participant_id
        self.spaces: set[str] = set(spaces)
        # Each thread's room, for every thread of the workspace (docs/product/messages.md, Threads).
        self.parents: dict[str, str] = dict(parents or {})
        self.kind = kind
        # A person's role in the workspace: a guest is not told who everybody is.
        self.role = role
        # The rooms each agent of the workspace is in (one at a time, but folded as a set).
        self.agent_rooms: dict[str, set[str]] = {
            agent: set(rooms) for agent, rooms in (agent_rooms or {}).items()
        }
        # A harness's own agents, and whether it has declared the capability ``agents``.
        self.own_agents: set[str] = set(own_agents)
        # Each agent Chips gave a harness (docs/adr/0154), and that harness: shown to a
        # harness before agents as the harness itself.
        self.given_agents: dict[str, str] = dict(given_agents or {})
        self._own_frozen: Mapping[str, str] | None = None
        self.speaks_agents = speaks_agents

    def same_as(self, other: MembershipView) -> bool:
        """Whether ``other`` is in this view's very state (every attribute but a cache):
        then folding the same events on from here, both decide alike, and one of them can
        decide for both (a gateway's sockets of one participant, docs/adr/0161)."""
        return _state(self) == _state(other)

    def room_of(self, space_id: str) -> str:
        return self.parents.get(space_id, space_id)

    def knows_everybody(self) -> bool:
        """Whether this participant is told who everybody in the workspace is: a person
        who is not a guest of the workspace."""
        return self.kind == "person" and self.role != "guest"

    def shares_a_room_with(self, participant_id: str) -> bool:
        return bool(self.agent_rooms.get(participant_id, set()) & self.spaces)

    def seen(self, event: EventJson) -> DeliveredJson | None:
        """Fold ``event`` and return it as this participant is to be sent it, or None.

        A harness that has not declared ``agents`` is shown the pre-agents view
        (:func:`chips_common.rules.agents_view.as_seen_by`).
        """
        if not self.fold(event):
            return None
        own = self.pre_agents()
        sent = delivered(event)
        return sent if own is None else as_seen_by(sent, self.participant_id, own)

    def pre_agents(self) -> Mapping[str, str] | None:
        """The agents to show as somebody else, when this is a harness that has not
        declared ``agents`` (as of the events folded so far): its own as itself, another
        harness's given agent as that harness (``agents_view.stand_ins``); None when
        agents are agents."""
        if self.kind != "harness" or self.speaks_agents:
            return None
        if self._own_frozen is None:
            self._own_frozen = stand_ins(self.participant_id, self.own_agents, self.given_agents)
        return self._own_frozen

    def visible(self, event: EventJson) -> bool:
        """Fold ``event`` and say whether it is sent at all (:meth:`seen` without the
        translation, which a gateway applies once the event is shaped)."""
        if not self.fold(event):
            return False
        own = self.pre_agents()
        return own is None or not hidden_from(event, own)

    def fold(self, event: EventJson) -> bool:
        """Apply ``event`` and say whether the participant is to be delivered it.

        A membership change about the participant is delivered to them on both sides:
        being added (they are in once it lands) and being removed (they were in before).
        """
        space_id = event.get("space_id")
        kind = event.get("type")
        me = self.participant_id
        self._fold_agents(event)
        if kind == "space.created" and event.get("kind") == "thread":
            self.parents[space_id] = event["parent_space_id"]  # type: ignore[index]
        elif kind == "space.erased":
            erased = {space_id, *(event.get("threads") or ())}
            was_in = space_id in self.spaces
            self.spaces -= erased
            for thread in event.get("threads") or ():
                self.parents.pop(thread, None)
            return was_in
        elif kind == "space.created":
            # A harness opens a space for its owner (opened_for), who is in it with it.
            if me in opened_with(event):
                self.spaces.add(space_id)  # type: ignore[arg-type]
        elif kind == "membership.added" and event.get("participant_id") == me:
            self.spaces.add(space_id)  # type: ignore[arg-type]
        elif kind == "membership.removed" and event.get("participant_id") == me:
            was_in = space_id in self.spaces
            self.spaces.discard(space_id)
            return was_in
        mine = event.get("harness_id") == me
        if kind in AGENT_NEWS:
            agent_id = str(event.get("agent_id"))
            return mine or self.knows_everybody() or self.shares_a_room_with(agent_id)
        if kind in HARNESS_ONLY:
            return mine
        if kind in HARNESS_TOO and mine:
            return True
        if space_id is None:
            return True
        return self.room_of(space_id) in self.spaces and told(event, me, self.kind)

    def _fold_agents(self, event: EventJson) -> None:
        """Where each agent is, which are this harness's, and what it declared."""
        kind = event.get("type")
        space_id = event.get("space_id")
        who = event.get("participant_id")
        if kind == "membership.added" and isinstance(who, str) and who.startswith("agt_"):
            self.agent_rooms.setdefault(who, set()).add(str(space_id))
        elif kind == "membership.removed" and isinstance(who, str) and who in self.agent_rooms:
            self.agent_rooms[who].discard(str(space_id))
        elif kind == "space.created" and event.get("kind") != "thread":
            for member in opened_with(event):
                if member.startswith("agt_"):
                    self.agent_rooms.setdefault(member, set()).add(str(space_id))
        elif kind == "space.erased":
            erased = {space_id, *(event.get("threads") or ())}
            for rooms in self.agent_rooms.values():
                rooms -= erased
        elif kind == "agent.registered":
            agent_id, harness_id = str(event.get("agent_id")), str(event.get("harness_id"))
            if harness_id == self.participant_id:
                self.own_agents.add(agent_id)
                self._own_frozen = None
            elif str(event.get("key") or "").startswith(GIVEN_KEY):
                self.given_agents[agent_id] = harness_id
                self._own_frozen = None
        elif kind == "harness.declared" and event.get("harness_id") == self.participant_id:
            self.speaks_agents = "agents" in (event.get("capabilities") or ())


def _state(view: MembershipView) -> dict[str, object]:
    """What a view's decisions follow from: its attributes, less the frozen copy of its
    own agents (made on demand from ``own_agents``)."""
    return {k: v for k, v in vars(view).items() if k != "_own_frozen"}
