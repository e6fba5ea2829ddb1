"""The rules of runs: the state machine, first answer wins, receipts, and the composer's
``wreply`` and ``/stop``.

docs/product/websocket.md (Writing, Receipts, First answer wins) and
docs/product/jacobian-channel.md. Decided, like every rule, against the door state, so two racing
answers to one card can never both win. docs/architecture/runs.md has the whole table.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from typing import Any

from pydantic import JsonValue

from chips_common.append import Actor, AppendRequest
from chips_common.clock import iso
from chips_common.events import (
    ApprovalRequest,
    ApprovalResolved,
    EventBody,
    MessageHeard,
    MessagePost,
    QuestionAnswered,
    QuestionAsk,
    QuestionExpired,
    RunCancel,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunResumed,
    RunStarted,
    RunStatus,
    RunSteer,
    StepLog,
    Usage,
)
from chips_common.rules import may
from chips_common.rules.deciders import may_decide
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, check_member, harness_of
from chips_eventlog.rules.lanes import take_lane
from chips_eventlog.rules.policy import check_client_resolved
from chips_eventlog.state import LIVE, Card, Change, Decision, DoorState, PutCard, PutRun, Run

RUN_EVENTS = (
    RunStarted,
    RunStatus,
    StepLog,
    RunPaused,
    RunResumed,
    RunCompleted,
    RunFailed,
    RunCancel,
    RunSteer,
    Usage,
    ApprovalRequest,
    ApprovalResolved,
    QuestionAsk,
    QuestionAnswered,
    QuestionExpired,
)

# The state each event leaves a run in; events not named here leave it as it was.
NEXT_STATE = {
    "run.paused": "paused",
    "run.resumed": "running",
    "run.completed": "completed",
    "run.failed": "failed",
    "run.cancel": "cancelled",
}
# How long a question waits when its asker does not say (ADR 0131).
QUESTION_WAIT = timedelta(minutes=30)
_WREPLY = re.compile(r"^wreply(?:\s+(\S+))?(?:\s+(.*))?$", re.IGNORECASE | re.DOTALL)


def room_of_reply(run: Run | None, run_id: str, named_space: object, actor: Actor) -> str:
    """The room a post on a run is said in: the run's (docs/product/jacobian-channel.md, "reply:
    message.post, on the run"). A refusal raises, and nothing of the post is logged.

    The run must be one that was started; a harness replies only on its own run; a
    ``space_id`` the post names as well must be the run's room. Whether the sender may
    talk in that room is the post's own rule, decided after.
    """
    if run is None:
        refuse("not_found", f"no run {run_id} was started in this workspace", "run_id")
    harness = harness_of(actor)
    if harness is not None and harness != run.harness_id:
        refuse(
            "forbidden",
            f"{run.id} is another harness's run; a harness replies only on its own runs",
            "run_id",
        )
    if named_space is not None and named_space != run.space_id:
        refuse(
            "invalid_event",
            f"{run.id} is a run of another space; name its space_id or leave space_id out",
            "space_id",
        )
    return run.space_id


def place_on_run(s: DoorState, raw: Any, actor: Actor) -> Any:
    """A ``message.post`` naming ``run_id`` is said in the run's room: fill in its
    ``space_id`` before the post is decided as any other (:func:`room_of_reply`)."""
    if not isinstance(raw, dict) or raw.get("type") != "message.post":
        return raw
    run_id = raw.get("run_id")
    if not isinstance(run_id, str):
        return raw  # absent, or not a run's id: the catalogue answers for it
    space_id = room_of_reply(s.run(run_id), run_id, raw.get("space_id"), actor)
    return {**raw, "space_id": space_id}


def check_run_event(s: DoorState, body: Any, actor: Actor, ctx: Ctx) -> Decision:
    """Decide one event of a run: what Chips fills in, and the run's new door state."""
    match body:
        case RunStarted():
            return check_run_started(s, body, actor, ctx)
        case ApprovalResolved() | QuestionAnswered():
            return check_answer(s, body, actor, ctx)
        case QuestionExpired():
            return check_expired(s, body, actor, ctx)
        case RunCancel() | RunSteer():
            run = run_for(s, body, actor, people=True)
        case _:
            run = run_for(s, body, actor, people=False)
    check_state(run, body.type)
    decision = Decision({"space_id": run.space_id})
    match body:
        case RunSteer():
            if actor.kind != "person":
                refuse("forbidden", "a run is steered by a person in its room")
            disposition = "queued" if body.mode == "followup" else "steered"
            if ctx.request is not None:
                key = ctx.request.idempotency_key
                decision.filled["run_receipt"] = receipt(key, disposition, [run])
        case ApprovalRequest():
            decision.changes.append(add_card(s, run, "approval", body.approval_id, body))
        case QuestionAsk():
            if body.expires_at is None:
                body = body.model_copy(update={"expires_at": ctx.now + QUESTION_WAIT})
                decision.filled["expires_at"] = iso(ctx.now + QUESTION_WAIT)
            decision.changes.append(add_card(s, run, "question", body.question_id, body))
    if body.type in NEXT_STATE:
        decision.changes.append(PutRun(replace(run, state=NEXT_STATE[body.type])))
    return decision


def check_run_started(s: DoorState, body: RunStarted, actor: Actor, ctx: Ctx) -> Decision:
    harness = harness_of(actor)
    if harness is None:
        refuse(
            "forbidden",
            "a run is a harness's turn: only a harness reports one started, on its own token "
            "(the one `chips connect` printed), never a person's",
        )
    check_member(s, body.space_id, actor)
    if s.run(body.run_id) is not None:
        refuse("invalid_event", f"{body.run_id} was started already; name a new run", "run_id")
    changes: list[Change] = []
    if body.lane_id is not None:  # a job taking over the lane it works (ADR 0017)
        changes.append(take_lane(s, body))
    # The run is the harness's; the agent whose turn it is is kept beside it (ADR 0070).
    agent_id = actor.id if actor.kind == "agent" else None
    run = Run(body.run_id, body.space_id, harness, "running", ctx.seq, agent_id)
    changes.append(PutRun(run))
    return Decision(changes=changes)


def run_for(s: DoorState, body: Any, actor: Actor, *, people: bool) -> Run:
    """The run ``body`` names, if the actor may write about it.

    The run's harness writes every event of its run; a person in the run's room writes
    only ``run.cancel`` and ``run.steer`` (``people``). Anyone else is refused.
    """
    run = s.run(body.run_id)
    if run is None:
        refuse("not_found", f"no run {body.run_id} was started in this workspace", "run_id")
    if body.space_id is not None and body.space_id != run.space_id:
        refuse("invalid_event", f"{run.id} is a run of another space", "space_id")
    harness = harness_of(actor)
    if harness is not None:
        if harness != run.harness_id:
            refuse("forbidden", f"{run.id} is another harness's run", "run_id")
    elif people and actor.kind == "person":
        check_member(s, run.space_id, actor)
    else:
        refuse("forbidden", f"only the harness whose run it is writes {body.type}", "type")
    return run


def check_heard(s: DoorState, body: MessageHeard, actor: Actor, ctx: Ctx) -> Decision:
    """A turn says it was handed words said in its room (docs/product/websocket.md): on a
    live run, as the run's agent, about a message of the run's room."""
    run = run_for(s, body, actor, people=False)
    check_state(run, body.type)
    if run.agent_id is not None and actor.id != run.agent_id:
        agent = s.participant(run.agent_id)
        name = agent.name if agent is not None else run.agent_id
        refuse("forbidden", f"{run.id} is {name}'s turn: its agent says what it heard", "run_id")
    said = s.said(body.message_id)
    if said is None or said.space_id != run.space_id or said.deleted:
        refuse(
            "not_found", f"message_id names no message standing in {run.id}'s room", "message_id"
        )
    return Decision({"space_id": run.space_id})


def check_state(run: Run, event_type: str) -> None:
    """Refuse what the run's state does not take, with the reason (docs/product/websocket.md,
    Writing)."""
    if run.state not in LIVE:
        refuse(
            "invalid_event",
            f"{run.id} has ended ({run.state}); it takes nothing more, {event_type} included",
            "run_id",
        )
    if event_type == "run.paused" and run.state != "running":
        refuse("invalid_event", f"{run.id} is not running (it is paused already)", "run_id")
    if event_type == "run.resumed" and run.state != "paused":
        refuse("invalid_event", f"{run.id} is not paused, so it cannot resume", "run_id")
    if event_type == "step.log" and run.state == "paused":
        refuse("invalid_event", f"{run.id} is paused; resume it before its next step", "run_id")


def add_card(
    s: DoorState, run: Run, kind: str, card_id: str, body: ApprovalRequest | QuestionAsk
) -> PutCard:
    if s.card(kind, card_id) is not None:
        refuse("invalid_event", f"{kind} {card_id} was asked already; give it a new id", "type")
    card = Card(kind, card_id, run.id, run.space_id, run.harness_id)
    if isinstance(body, ApprovalRequest):
        card = replace(card, answerers=tuple(body.answerers or ()), expires_at=body.expires_at)
    else:
        options = tuple((o.value, o.label) for o in body.options)
        card = replace(
            card,
            options=options,
            free_text=body.free_text,
            expires_at=body.expires_at,
            default_value=body.default,
            multiple=body.multiple,
        )
    return PutCard(card)


def check_answer(
    s: DoorState, body: ApprovalResolved | QuestionAnswered, actor: Actor, ctx: Ctx
) -> Decision:
    """First answer wins, on every surface (docs/product/websocket.md, First answer wins)."""
    answer: str | None
    if isinstance(body, ApprovalResolved):
        check_client_resolved(body)
        kind, card_id, answer = "approval", body.approval_id, body.decision
    else:
        kind, card_id, answer = "question", body.question_id, body.value or ""
    card = s.card(kind, card_id)
    if card is None:
        refuse("not_found", f"no {kind} {card_id} was asked in this workspace", f"{kind}_id")
    if body.space_id is not None and body.space_id != card.space_id:
        refuse("invalid_event", f"{kind} {card_id} is a card of another space", "space_id")
    check_member(s, card.space_id, actor)
    if kind == "question" and card.expires_at and may.expired(card.expires_at, ctx.now):
        refuse(
            "invalid_event",
            f"question {card_id} expired at {card.expires_at.isoformat()}: nobody answered "
            "it in time, and an expired card takes no answer",
            "question_id",
        )
    if card.answered_by is not None:
        first = s.participant(card.answered_by)
        said = "decided" if kind == "approval" else "answered"
        refuse(
            "invalid_event",
            f"{kind} {card_id} was {said} already, first by "
            f"{first.name if first and first.name else card.answered_by} ({card.answer})",
            f"{kind}_id",
        )
    filled: dict[str, JsonValue] = {"run_id": card.run_id, "space_id": card.space_id}
    if isinstance(body, ApprovalResolved):
        check_decider(s, card, actor)
        if card.expires_at and may.expired(card.expires_at, ctx.now):
            refuse(
                "invalid_event",
                f"approval {card_id} expired at {card.expires_at.isoformat()}: Chips stopped "
                "waiting for it, and its expiry decides nothing",
                "approval_id",
            )
        if ctx.request is not None:
            filled["idempotency_key"] = ctx.request.idempotency_key
    else:
        harness = harness_of(actor)
        if harness is not None and harness != card.harness_id:
            refuse("forbidden", f"question {card_id} is another harness's to settle")
        if body.values is not None:
            chosen = pick_options(card, body.values)
            filled["values"] = [value for value in chosen]
            answer = ", ".join(chosen)
        else:
            answer = pick_option(card, body) or body.text
            filled["value"] = pick_option(card, body)
    run = s.run(card.run_id)
    if run is not None and not may.live(run.state):
        refuse("invalid_event", f"the run that asked it, {run.id}, has ended ({run.state})")
    if not filled.get("value"):
        filled.pop("value", None)
    answered = replace(card, answered_by=actor.id, answer=answer, answered_seq=ctx.seq)
    return Decision(filled, [PutCard(answered)])


def check_decider(s: DoorState, card: Card, actor: Actor) -> None:
    """Who decides an approval: the harness's owner, the people the card names, and the
    harness whose run asked (it reports a decision made on its own side,
    docs/product/websocket.md)."""
    speaking_for = harness_of(actor)
    if speaking_for is not None:
        if speaking_for != card.harness_id:
            refuse(
                "forbidden",
                f"approval {card.id} was asked by another harness's run, and no policy "
                "handed it to you",
            )
        return
    harness = s.participant(card.harness_id)
    owner = harness.owner_id if harness else None
    if not may_decide(actor.id, owner, card.answerers):
        refuse(
            "forbidden",
            f"approval {card.id} is decided by the harness's owner or the people it names",
        )


def pick_options(card: Card, values: list[str]) -> list[str]:
    """Several options of a question that takes them, in the order they were asked."""
    asked = [value for value, _ in card.options]
    if not card.multiple:
        refuse(
            "invalid_event",
            f"question {card.id} takes one option; answer with value, not values",
            "values",
        )
    unknown = [v for v in values if v not in asked]
    if unknown:
        refuse(
            "invalid_event",
            f"{unknown[0]!r} is not an option of question {card.id}: {', '.join(asked)}",
            "values",
        )
    return [v for v in asked if v in values]


def expired_note(card: Card) -> str:
    """The sentence an expired card reads (ADR 0131)."""
    if card.default_value is None:
        return "Nobody answered in time. The agent goes on without an answer to this question."
    label = dict(card.options).get(card.default_value, card.default_value)
    return f"Nobody answered in time, so the default was taken: {label}."


def check_expired(s: DoorState, body: QuestionExpired, actor: Actor, ctx: Ctx) -> Decision:
    """Chips's clock says nobody answered a question in time: the card is kept, marked
    expired, and its default taken (ADR 0131)."""
    if actor.kind != "system":
        refuse("forbidden", "a question expires on Chips's clock; the asker is told, not asked")
    card = s.card("question", body.question_id)
    if card is None:
        refuse("not_found", f"no question {body.question_id} was asked in this workspace")
    if card.answered_by is not None:
        refuse("invalid_event", f"question {card.id} was answered already ({card.answer})")
    if card.expires_at is None or card.expires_at > ctx.now:
        refuse("invalid_event", f"question {card.id} has not expired yet", "question_id")
    filled: dict[str, JsonValue] = {
        "run_id": card.run_id,
        "space_id": card.space_id,
        "default_taken": card.default_value is not None,
        "note": expired_note(card),
    }
    if card.default_value is not None:
        filled["value"] = card.default_value
    answer = card.default_value if card.default_value is not None else "expired"
    answered = replace(card, answered_by=actor.id, answer=answer, answered_seq=ctx.seq)
    return Decision(filled, [PutCard(answered)])


def pick_option(card: Card, body: QuestionAnswered) -> str | None:
    """The option a tap or typed words choose, or None for words of the person's own."""
    values = [value for value, _ in card.options]
    if body.value is not None:
        if body.value not in values:
            refuse(
                "invalid_event",
                f"{body.value!r} is not an option of question {card.id}: {', '.join(values)}",
                "value",
            )
        return body.value
    typed = (body.text or "").strip().casefold()
    for value, label in card.options:
        if typed in (value.casefold(), label.casefold()):
            return value
    # Every card takes a written answer, whatever its options (docs/adr/0134): free_text
    # only says the question asks for words rather than a tap.
    return None


# --- receipts and the composer -----------------------------------------------------------


def receipt(key: str, disposition: str, runs: list[Run]) -> dict[str, JsonValue]:
    return {
        "idempotency_key": key,
        "disposition": disposition,
        "run_ids": [r.id for r in runs],
        "harness_ids": [h for h in sorted({r.harness_id for r in runs})],
    }


def with_receipt(
    s: DoorState,
    body: MessagePost,
    actor: Actor,
    request: AppendRequest | None,
    filled: dict[str, JsonValue],
) -> dict[str, JsonValue]:
    """A person's words into a room with a live run are queued for the harness's next look.

    A ``run_receipt`` written by the client is replaced, or refused when no run is live.
    """
    if body.run_receipt is not None and actor.kind != "person":
        refuse("invalid_event", "run_receipt is filled in by Chips; leave it out", "run_receipt")
    if actor.kind != "person" or request is None:
        return filled
    running = s.live_runs(body.space_id)
    if not running:
        if body.run_receipt is not None:
            refuse(
                "invalid_event", "run_receipt is filled in by Chips; leave it out", "run_receipt"
            )
        return filled
    return {**filled, "run_receipt": receipt(request.idempotency_key, "queued", running)}


def composer_events(s: DoorState, body: MessagePost, actor: Actor) -> list[EventBody] | None:
    """``wreply <id> <answer>`` and ``/stop`` from a person's composer; None if not one.

    ``wreply`` is a question's typed answer (docs/product/jacobian-channel.md, What Chips says),
    decided as ``question.answered``; ``/stop`` cancels every live run in the room.
    """
    text = (body.text or "").strip()
    if (match := _WREPLY.match(text)) is not None and text[:6].lower() == "wreply":
        card_id, answer = match.group(1), (match.group(2) or "").strip()
        check_member(s, body.space_id, actor)
        if not card_id or not answer:
            refuse(
                "invalid_event", "wreply names the question and the answer: wreply <id> <answer>"
            )
        try:
            answered = QuestionAnswered(question_id=card_id, text=answer)
        except ValueError:
            refuse("invalid_event", f"{card_id!r} is not a question's id", "text")
        card = s.card("question", card_id)
        if card is None or card.space_id != body.space_id:
            refuse("not_found", f"no question {card_id} was asked in this room", "text")
        return [answered]
    if text.lower() == "/stop":
        check_member(s, body.space_id, actor)
        running = s.live_runs(body.space_id)
        if not running:
            refuse("invalid_event", "nothing is running in this room to stop", "text")
        return [RunCancel(run_id=r.id, why="/stop") for r in running]
    return None
