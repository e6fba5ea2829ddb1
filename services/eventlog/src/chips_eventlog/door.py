"""The door's pipeline: decode a request, dispatch each event to its rule, stage what it
logs (docs/architecture/design.md §2, docs/adr/0021).

The rules (``chips_eventlog.rules``) are pure functions over the workspace's in-memory
:class:`~chips_eventlog.state.DoorState`; this module dispatches to them through one
table keyed by event type, applies the changes each returns to the state, and gives each
admitted event its envelope and seq. Nothing here reads or writes Postgres: the consumer
writes what was staged (``flush_events``) and what changed (``state_store.flush``) at
the end of the transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, JsonValue, ValidationError

from chips_common.append import Actor, AppendRequest
from chips_common.clock import iso
from chips_common.commands import (
    AttachAgent,
    GiveAgents,
    MoveAgent,
    OpenSpace,
    RegisterAgent,
    RenameAgent,
)
from chips_common.events import (
    EVENT_VERSION,
    AgentAsked,
    AgentFork,
    ApprovalRequest,
    AttachmentCapsSet,
    AttachmentFetched,
    AttachmentTranscribed,
    BudgetWarning,
    DevicePaired,
    DeviceRevoked,
    EventBody,
    ExchangeSet,
    Feedback,
    HarnessDeclared,
    HarnessDisconnected,
    HarnessPolicySet,
    InvalidEvent,
    InviteCreated,
    InviteWithdrawn,
    LeadHanded,
    LoggedJson,
    MembershipAdded,
    MembershipRemoved,
    MessageDeleted,
    MessageEdited,
    MessageHeard,
    MessageHidden,
    MessagePinned,
    MessagePost,
    MessageShown,
    MessageUnpinned,
    ParticipantJoined,
    PersonUpdated,
    RoomIdle,
    RoomWorking,
    RunCancel,
    SpaceClaimed,
    SpaceCreated,
    SpaceErased,
    SpaceLeadSet,
    SpaceLockSet,
    SpaceSpendCeilingSet,
    SpaceUpdated,
    WorkspaceCreated,
    WorkspaceRefereeSet,
    canonical,
    parse_event,
)
from chips_common.events.wire import event_json
from chips_common.ids import message_id_for, new_id
from chips_common.rules.commands import CommandError, parse_command
from chips_common.rules.kinds import passes
from chips_eventlog.refused import Refused, refuse
from chips_eventlog.rules import (
    agents,
    erase,
    files,
    harness_door,
    lanes,
    messages,
    participants,
    people,
    policy,
    referee,
    runs,
    spaces,
    stopping,
    threads,
    words,
)
from chips_eventlog.rules.agents import given
from chips_eventlog.rules.common import (
    ASK_WAIT,
    Ctx,
    Step,
    check_member,
    check_speaker,
    kind_of,
)
from chips_eventlog.state import Decision, DoorState, EraseSpaces, Message, Run

__all__ = ["RULES", "Door", "Refused"]

Rule = Callable[[DoorState, Any, Actor, Ctx], Decision]
# The door's commands (docs/adr/0007): each decides which events to log.
Command = Callable[[DoorState, Any, Actor, Ctx], "list[Step] | agents.Plan"]
COMMANDS: dict[str, tuple[type[BaseModel], Command]] = {
    "harness.open_space": (OpenSpace, harness_door.run_open_space),
    "agent.register": (RegisterAgent, agents.run_register),
    "agent.attach": (AttachAgent, agents.run_attach),
    "agent.move": (MoveAgent, agents.run_move),
    "agent.rename": (RenameAgent, agents.run_rename),
    "agents.give": (GiveAgents, given.run_give),
}


def _space_created(s: DoorState, body: SpaceCreated, actor: Actor, ctx: Ctx) -> Decision:
    if threads.is_thread_event(body):
        return threads.check_thread_created(s, body, actor, ctx)
    return spaces.check_space_created(s, body, actor, ctx)


def _claimed(s: DoorState, body: SpaceClaimed, actor: Actor, ctx: Ctx) -> Decision:
    refuse("forbidden", "a harness claims a space through its door", "type")


def _erased(s: DoorState, body: SpaceErased, actor: Actor, ctx: Ctx) -> Decision:
    refuse("invalid_event", "a space is deleted on its own", "type")


# The one dispatch table: every event type the door decides, and its rule.
RULES: dict[type[EventBody], Rule] = {
    WorkspaceCreated: participants.check_workspace_created,
    ParticipantJoined: participants.check_participant_joined,
    HarnessDeclared: participants.check_harness_declared,
    HarnessDisconnected: participants.check_harness_disconnected,
    HarnessPolicySet: policy.check_policy_set,
    InviteCreated: people.check_invite_created,
    InviteWithdrawn: people.check_invite_withdrawn,
    DevicePaired: people.check_device_paired,
    DeviceRevoked: people.check_device_revoked,
    PersonUpdated: people.check_person_updated,
    SpaceCreated: _space_created,
    SpaceUpdated: spaces.check_space_updated,
    SpaceLockSet: spaces.check_space_lock_set,
    MembershipAdded: spaces.check_membership_added,
    MembershipRemoved: spaces.check_membership_removed,
    MessagePost: messages.check_message_post,
    MessageEdited: words.check_edited,
    MessageDeleted: words.check_deleted,
    MessageHidden: words.check_hidden,
    MessageShown: words.check_hidden,
    MessagePinned: words.check_pinned,
    MessageUnpinned: words.check_pinned,
    Feedback: words.check_feedback,
    AttachmentCapsSet: files.check_caps_set,
    AttachmentFetched: files.check_fetched,
    AttachmentTranscribed: files.check_transcribed,
    SpaceClaimed: _claimed,
    SpaceErased: _erased,
    AgentFork: agents.check_fork,
    AgentAsked: agents.check_asked,
    MessageHeard: runs.check_heard,
    WorkspaceRefereeSet: referee.check_referee_set,
    SpaceSpendCeilingSet: referee.check_spend_ceiling_set,
    ExchangeSet: referee.check_exchange_set,
    BudgetWarning: referee.check_budget_warning,
    SpaceLeadSet: referee.check_lead_set,
    RoomWorking: referee.check_room_working,
    RoomIdle: referee.check_room_working,
    LeadHanded: referee.check_lead_handed,
    **{kind: runs.check_run_event for kind in runs.RUN_EVENTS},
}


class Door:
    """Decides one workspace's requests of a batch against its door state."""

    def __init__(self, state: DoorState, now: datetime, ask_wait: timedelta = ASK_WAIT) -> None:
        self.state = state
        self.ask_wait = ask_wait
        self.workspace_id = state.workspace_id
        self.head_seq = state.head_seq
        self.now = now
        # Events admitted but not yet written; the consumer writes them together.
        self.pending: list[LoggedJson] = []
        self.traces: dict[int, str | None] = {}
        # Spaces erased in this batch: nothing of them is published.
        self.erased: set[str] = set()
        # Seqs of an erased space's events that outlive it: the run.cancel its deletion
        # sent first (rules/stopping.py), kept in the log and published.
        self.spared: set[int] = set()

    def mark(self) -> tuple[Any, ...]:
        """Where a request starts, to undo it with :meth:`undo` if it is refused."""
        return (
            self.head_seq,
            len(self.pending),
            self.state.mark(),
            frozenset(self.erased),
            frozenset(self.spared),
        )

    def undo(self, mark: tuple[Any, ...]) -> None:
        self.head_seq, count, state_mark, erased, spared = mark
        del self.pending[count:]
        self.state.undo(state_mark)
        self.erased = set(erased)
        self.spared = set(spared)

    def ctx(self, request: AppendRequest | None) -> Ctx:
        return Ctx(self.head_seq + 1, self.now, request, self.ask_wait)

    # --- deciding ---------------------------------------------------------------------

    def check(self, body: EventBody, actor: Actor, request: AppendRequest | None) -> Decision:
        """Decide the rule for one event: what Chips fills in and what changes."""
        threads.refuse_room_operation(self.state, body, actor)
        rule = RULES.get(type(body))
        if rule is None:
            refuse("invalid_event", f"{body.type} has no rule at the door", "type")
        return rule(self.state, body, actor, self.ctx(request))

    def append(self, request: AppendRequest, traceparent: str | None = None) -> list[LoggedJson]:
        """Check and stage every event of ``request``; return them as they will be logged.

        Each event is staged (given its seq and its changes applied) before the next is
        checked, so a rule always sees the door state as of the event it is about.
        """
        first = len(self.pending)  # only ever appended to, or cut back by undo()
        for raw in request.events:
            self.admit(raw, request)
        logged = self.pending[first:]
        for event in logged:
            self.traces[event["seq"]] = traceparent
        return logged

    def admit(self, raw: Any, request: AppendRequest) -> None:
        """Decode one event the request carries, decide its rule and stage it; then the
        agent each harness it brought into a room as itself is given there
        (rules/agents/given.py)."""
        first = len(self.pending)
        self.admit_one(raw, request)
        gifts = given.gifts_after(
            self.state, map(event_json, self.pending[first:]), self.head_seq + 1
        )
        if gifts is not None:
            self.stage_plan(gifts)

    def admit_one(self, raw: Any, request: AppendRequest) -> None:
        """Decode one event the request carries, decide its rule and stage it."""
        actor = request.actor
        if isinstance(raw, dict) and "command" in raw:
            self.run_command(raw, actor)
            return
        raw = runs.place_on_run(self.state, raw, actor)  # a reply on the run
        actor = check_speaker(self.state, raw, actor)  # a harness, or one of its agents
        raw = agents.route_post(self.state, raw, actor, self.ctx(request))  # a free agent's
        if isinstance(raw, agents.Plan):
            self.stage_plan(raw)
            return
        try:
            body = parse_event(raw)
        except InvalidEvent as exc:
            raise Refused("invalid_event", exc.message, exc.field) from None
        # A post with files says something, whatever its words (docs/product/websocket.md).
        if (
            isinstance(body, MessagePost)
            and not body.upload_ids
            and passes(body.kind, body.text, kind_of(actor))
        ):
            self.stage(messages.check_turn_passed(self.state, body, actor), Decision(), actor)
            return
        if isinstance(body, MessagePost) and actor.kind == "person" and body.text:
            derived = runs.composer_events(self.state, body, actor)
            if derived is not None:  # wreply, /stop
                for event in derived:
                    self.stage(event, self.check(event, actor, None), actor)
                return
            try:
                command = parse_command(body.text)
            except CommandError as exc:
                check_member(self.state, body.space_id, actor)
                raise Refused("invalid_event", str(exc), "text") from None
            if command is not None:
                for event in messages.composer_events(self.state, body.space_id, command, actor):
                    self.decide(event, actor, None)
                return
        if isinstance(body, SpaceErased):
            self.erase(body, actor, request)
            return
        if isinstance(body, lanes.LANE_EVENTS):  # logged in both of its rooms (ADR 0017)
            self.stage_steps(lanes.check_lane(self.state, body, actor, self.ctx(request)))
            return
        self.decide(body, actor, request)

    def decide(self, body: EventBody, actor: Actor, request: AppendRequest | None) -> None:
        """Decide one event's rule and stage it, after the runs it stops
        (docs/product/websocket.md).

        A harness taken out of a room, or a room archived, stops the runs there: each is
        sent ``run.cancel`` while the harness is still in the room. The operation's own
        rule is decided first, so a refused one stops nothing and is refused for its own
        reason.
        """
        moved = spaces.agents_moved(self.state, body, actor, self.ctx(request))
        if moved is not None:  # agents enter or leave with it (rules/agents/)
            self.stage_plan(moved)
            return
        stops = stopping.stopped_by(body)
        running = stopping.runs_to_stop(self.state, stops[1], stops[2]) if stops else []
        if stops and running:
            self.check(body, actor, request)
            self.stop(running, stops[0], actor)
        logged = self.stage(body, self.check(body, actor, request), actor)
        if isinstance(body, PersonUpdated):  # the rooms handed on, to an heir not in them
            self.stage_steps(
                people.heir_joins(self.state, event_json(logged), actor, self.head_seq + 1)
            )
        if isinstance(body, ApprovalRequest):  # the dial may decide it at once (ADR 0130)
            auto = policy.auto_answer(self.state, body, self.ctx(None))
            if auto is not None:
                self.stage(auto.body, auto.decision, auto.actor)

    def erase(self, body: SpaceErased, actor: Actor, request: AppendRequest | None) -> None:
        """A delete (rules/erase.py): refused for its own reason first; then every run in
        the room and its threads is stopped, as an archive stops them, and those
        ``run.cancel`` outlive the room so that its harnesses hear them; then the erasure.
        A direct space nobody could open again is archived instead, as any archive."""
        erased = erase.check_space_erased(self.state, body, actor, self.ctx(request))
        if isinstance(erased, SpaceUpdated):
            self.decide(erased, actor, None)
            return
        running = stopping.runs_to_stop(self.state, body.space_id, None)
        spared = self.stop(running, stopping.DELETED, actor)
        # Its agents are released, and their harnesses hear it after the room is gone.
        released = agents.Plan(self.state, self.head_seq + 1)
        agents.release_for_deletion(released, body.space_id, actor)
        spared += [
            self.stage(step.body, step.decision, step.actor)["seq"] for step in released.steps
        ]
        if spared:  # decided again: its seq moved past the cancels
            erased = erase.check_space_erased(self.state, body, actor, self.ctx(request), spared)
            assert not isinstance(erased, SpaceUpdated)
        self.stage(body, erased, actor)

    def stop(self, running: list[Run], why: str, actor: Actor) -> list[int]:
        """Stage the stop of ``running`` (rules/stopping.py); the seqs of their cancels."""
        mine = {r.id for r in running}
        seqs: list[int] = []
        for step in stopping.stop_steps(self.state, running, why, actor):
            event = self.stage(step.body, step.decision, step.actor)
            if isinstance(step.body, RunCancel) and step.body.run_id in mine:
                seqs.append(event["seq"])
        return seqs

    def run_command(self, raw: dict[str, JsonValue], actor: Actor) -> None:
        found = COMMANDS.get(str(raw.get("command")))
        if found is None:
            raise Refused("invalid_event", "no such command at the door", "command")
        model, run = found
        try:
            command = model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "command"
            raise Refused("invalid_event", f"{field}: {err['msg']}", field) from None
        decided = run(self.state, command, actor, self.ctx(None))
        if isinstance(decided, agents.Plan):
            self.stage_plan(decided)
        else:
            self.stage_steps(decided)

    # --- staging ----------------------------------------------------------------------

    def stage_steps(self, steps: list[Step]) -> None:
        for step in steps:
            self.stage(step.body, step.decision, step.actor)

    def stage_plan(self, plan: agents.Plan) -> None:
        """Stage what a plan of agents' moves logs; then what its agents said while free,
        each decided as the agent's post in the room it joined (rules/agents/)."""
        self.stage_steps(plan.steps)
        for post in plan.posts:
            self.decide(post.body, post.actor, None)

    def stage(self, body: EventBody, decision: Decision, actor: Actor) -> LoggedJson:
        """Apply what deciding an event changed, and give it its envelope and next seq."""
        self.state.apply(decision.changes)
        space_id = decision.filled.get("space_id", getattr(body, "space_id", None))
        self.state.apply(referee.follow_room(self.state, body, actor, space_id))
        seq = self.head_seq + 1
        event_id = decision.event_id or new_id("evt")
        fields = body.model_dump(mode="json", exclude_none=True)
        fields.update(decision.filled)
        event: LoggedJson = {
            "v": EVENT_VERSION,
            "id": event_id,
            "seq": seq,
            "ts": iso(self.now),
            "workspace_id": self.workspace_id,
            "actor": actor.model_dump(exclude_none=True),
            **fields,
        }
        if body.type == "message.post":
            event["message_id"] = message_id = message_id_for(event_id)
            self.state.remember(
                Message(
                    message_id, event["space_id"], actor.id, actor.kind, event.get("kind", "text")
                )
            )
        for change in decision.changes:
            if isinstance(change, EraseSpaces):
                self.erased.update(change.erased)
                self.spared.update(change.spared)
        event = canonical(event)
        self.pending.append(event)
        self.head_seq = seq
        return event
