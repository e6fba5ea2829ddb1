"""Per-recipient shaping of a logged event (docs/product/websocket.md, What a harness hears).

Pure functions of the event and the recipient, so a replay and a live delivery give the
same frame. Context and room, which need the log, are added by the gateway around them.

A harness takes part in rooms as its agents (docs/adr/0070), all on its one connection: a
message is delivered to the connection once however many of its agents it is for, and
``for`` names which of them take the turn. Who an agent belongs to never changes, so
``owner_of`` (an agent's harness, as the directory knows it now) answers for any seq.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal

from chips_common.events.wire import ActorJson, DeliveredJson, EventJson, delivered

RecipientKind = Literal["person", "harness"]
OwnerOf = Callable[[str], str | None]


def nobody(_: str) -> str | None:
    return None


def is_own(event: EventJson, recipient_id: str) -> bool:
    """Whether the recipient said it: as itself, or as one of its agents (the actor names
    the agent's harness beside it)."""
    actor = event.get("actor") or {}
    return recipient_id in (actor.get("id"), actor.get("harness_id"))


def takers(event: EventJson, recipient_id: str, owner_of: OwnerOf = nobody) -> list[str]:
    """Who of this harness takes a turn on a message: ``for``.

    The ids in ``addressed_to`` that are the harness's own agents, or the harness itself
    where it is who the room holds; never the one who said it. A message logged before
    Chips said who a message is for has no ``addressed_to`` and was for every harness in
    its room but its sender.
    """
    actor = event.get("actor") or {}
    sender = actor.get("id")
    addressed = event.get("addressed_to")
    if addressed is None:
        return [] if is_own(event, recipient_id) else [recipient_id]
    return [
        a for a in addressed if a != sender and (a == recipient_id or owner_of(a) == recipient_id)
    ]


def is_for(event: EventJson, recipient_id: str, owner_of: OwnerOf = nobody) -> bool:
    """Whether a message is a turn for this harness (or for any of its agents)."""
    return bool(takers(event, recipient_id, owner_of))


def shape_for(
    event: EventJson,
    recipient_id: str,
    recipient_kind: RecipientKind,
    owner_of: OwnerOf = nobody,
    speaks_agents: bool = False,
) -> DeliveredJson:
    """The event as this recipient is sent it.

    A harness hears a ``message.post`` as ``message.new`` when the message is for it or
    for any of its agents, and as ``message.overheard`` (the same payload: answer nothing)
    when it is for nobody of its. A harness that declared ``agents`` (``speaks_agents``)
    is told in ``for`` which of them take the turn (never empty); one that did not is
    sent what it always was. Its own post comes back as it was sent, which is how it
    knows the message landed; but words one of its agents said to another of them come
    back as that one's ``message.new`` (docs/product/websocket.md, One of yours addressing
    another of yours). A person's session hears every message as posted.
    """
    sent = delivered(event)
    if recipient_kind != "harness" or event.get("type") != "message.post":
        return sent
    found = takers(event, recipient_id, owner_of)
    if found:
        if speaks_agents:
            return {**sent, "type": "message.new", "for": found}
        return {**sent, "type": "message.new"}
    if is_own(event, recipient_id):
        return sent
    return {**sent, "type": "message.overheard"}


# A run's end: it takes nothing more (run.cancel stops it).
RUN_ENDS = frozenset({"run.completed", "run.failed", "run.cancel"})


class WorkingTurns:
    """The turns one harness's agents have going, by room, folded from the events its
    connection is delivered in seq order (each run's ``run.started`` said as one of its
    agents or as the harness itself, and its end). ``runs`` starts as the log says as of
    the subscription's start, ``heard`` with when each was last heard from (any event
    naming it). A turn nothing was heard
    from for ``silent`` seconds before a message is not named (docs/adr/0090).

    A message said in a room where another of the harness's agents is working names that
    turn in ``working_turns``, so the words are handed to it at its next step
    (docs/product/websocket.md, What a harness hears when someone speaks).
    """

    def __init__(
        self,
        harness_id: str,
        runs: dict[str, tuple[str, str]] | None = None,
        heard: dict[str, str] | None = None,
        silent: float | None = None,
    ) -> None:
        self.harness_id = harness_id
        # run_id -> (space_id, agent_id), in the order the runs started.
        self.runs: dict[str, tuple[str, str]] = dict(runs or {})
        # run_id -> the ts of the last event naming it.
        self.heard: dict[str, str] = dict(heard or {})
        self.silent = silent

    def fold(self, event: EventJson) -> None:
        kind = event.get("type")
        run_id = event.get("run_id")
        if isinstance(run_id, str) and (run_id in self.runs or kind == "run.started"):
            self.heard[run_id] = str(event.get("ts", ""))
        if kind == "run.started":
            if (agent_id := self.whose(event.get("actor") or {})) is not None:
                self.runs[event["run_id"]] = (event["space_id"], agent_id)
        elif kind in RUN_ENDS:
            self.runs.pop(event.get("run_id", ""), None)
            self.heard.pop(event.get("run_id", ""), None)
        elif kind == "space.erased":
            gone = {event.get("space_id"), *(event.get("threads") or ())}
            self.runs = {r: w for r, w in self.runs.items() if w[0] not in gone}

    def whose(self, actor: ActorJson | dict[str, str]) -> str | None:
        """The agent of this harness a run started by ``actor`` is the turn of: one of its
        agents, or the harness itself where it stands as its own one agent (a run it
        started as itself, in a room where it is a member itself); None for anybody
        else's."""
        if actor.get("kind") == "agent" and actor.get("harness_id") == self.harness_id:
            return str(actor["id"])
        if actor.get("kind") == "harness" and actor.get("id") == self.harness_id:
            return self.harness_id
        return None

    def named_by(self, event: EventJson, taking: list[str]) -> list[dict[str, str]]:
        """The turns a message said in their room names: never the sender's, nor those of
        the agents it is for (``taking``)."""
        sender = (event.get("actor") or {}).get("id")
        space_id = event.get("space_id")
        return [
            {"agent_id": agent_id, "run_id": run_id}
            for run_id, (where, agent_id) in self.runs.items()
            if where == space_id
            and agent_id != sender
            and agent_id not in taking
            and not self.fell_silent(run_id, str(event.get("ts", "")))
        ]

    def fell_silent(self, run_id: str, at: str) -> bool:
        """Whether nothing was heard from the run for ``silent`` seconds before ``at``."""
        heard = self.heard.get(run_id)
        if self.silent is None or not heard or not at:
            return False
        then = datetime.fromisoformat(heard.replace("Z", "+00:00"))
        now = datetime.fromisoformat(at.replace("Z", "+00:00"))
        return (now - then).total_seconds() >= self.silent
