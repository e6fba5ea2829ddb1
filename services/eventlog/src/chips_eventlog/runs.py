"""The rules of runs at the door: the state machine, first answer wins, receipts.

spec/websocket.md (Writing, Receipts, First answer wins) and spec/jacobian-channel.md.
Decided, like every rule, against the door state read in the append transaction
(``run_tables.runs`` and ``run_tables.run_cards``), so two racing answers to one card can
never both win. docs/architecture/runs.md has the whole table.

Kept apart from ``door.py``: the door dispatches here for every type of
``chips_common.events.runs`` and calls :func:`with_receipt` and :func:`admit_composer` for
a person's ``message.post``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

from sqlalchemy import and_, insert, select, update

from chips_common.append import Actor, AppendRequest
from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.events import (
    ApprovalRequest,
    ApprovalResolved,
    EventBody,
    MessagePost,
    QuestionAnswered,
    QuestionAsk,
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

if TYPE_CHECKING:
    from chips_eventlog.door import Door

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
)

LIVE = ("running", "paused")
# The state each event leaves a run in; events not named here leave it as it was.
NEXT_STATE = {
    "run.paused": "paused",
    "run.resumed": "running",
    "run.completed": "completed",
    "run.failed": "failed",
    "run.cancel": "cancelled",
}
_WREPLY = re.compile(r"^wreply(?:\s+(\S+))?(?:\s+(.*))?$", re.IGNORECASE | re.DOTALL)


def refuse(code: str, message: str, field: str | None = None) -> NoReturn:
    from chips_eventlog.door import Refused  # the door imports this module

    raise Refused(code, message, field)


@dataclass
class Run:
    id: str
    space_id: str
    harness_id: str
    state: str


@dataclass
class Card:
    kind: str
    id: str
    run_id: str
    space_id: str
    harness_id: str
    answerers: list[str]
    expires_at: datetime | None
    options: list[list[str]]
    free_text: bool
    answered_by: str | None
    answer: str | None


# --- reading the door state --------------------------------------------------------------


async def find_run(door: Door, run_id: str) -> Run | None:
    r = rt.runs.c
    row = (
        await door.conn.execute(
            select(r.id, r.space_id, r.harness_id, r.state).where(
                and_(r.workspace_id == door.workspace_id, r.id == run_id)
            )
        )
    ).first()
    return Run(row.id, row.space_id, row.harness_id, row.state) if row else None


async def live_runs(door: Door, space_id: str) -> list[Run]:
    r = rt.runs.c
    rows = await door.conn.execute(
        select(r.id, r.space_id, r.harness_id, r.state)
        .where(and_(r.workspace_id == door.workspace_id, r.space_id == space_id, r.state.in_(LIVE)))
        .order_by(r.started_seq)
    )
    return [Run(row.id, row.space_id, row.harness_id, row.state) for row in rows]


async def may_be_live(door: Door, space_id: str) -> bool:
    """Whether a room may have a live run: the rooms with one are read once per batch, so a
    busy room with no run costs its posts nothing more (a stale yes only costs a query)."""
    spaces = door.live_spaces
    if spaces is None:
        r = rt.runs.c
        rows = await door.conn.execute(
            select(r.space_id)
            .where(and_(r.workspace_id == door.workspace_id, r.state.in_(LIVE)))
            .distinct()
        )
        spaces = {row.space_id for row in rows}
        door.live_spaces = spaces
    return space_id in spaces


async def find_card(door: Door, kind: str, card_id: str) -> Card | None:
    c = rt.run_cards.c
    row = (
        await door.conn.execute(
            select(rt.run_cards).where(
                and_(c.workspace_id == door.workspace_id, c.kind == kind, c.id == card_id)
            )
        )
    ).first()
    if row is None:
        return None
    return Card(
        row.kind,
        row.id,
        row.run_id,
        row.space_id,
        row.harness_id,
        list(row.answerers),
        row.expires_at,
        [list(o) for o in row.options],
        row.free_text,
        row.answered_by,
        row.answer,
    )


async def name_of(door: Door, participant_id: str) -> str:
    name = (
        await door.conn.execute(
            select(t.participants.c.name).where(t.participants.c.id == participant_id)
        )
    ).scalar()
    return str(name) if name else participant_id


# --- the rules -----------------------------------------------------------------------------


def room_of_reply(run: Run | None, run_id: str, named_space: object, actor: Actor) -> str:
    """The room a post on a run is said in: the run's (spec/jacobian-channel.md, "reply:
    message.post, on the run"). Pure; a refusal raises, and nothing of the post is logged.

    The run must be one that was started; a harness replies only on its own run; a
    ``space_id`` the post names as well must be the run's room. Whether the sender may
    talk in that room is the post's own rule, decided after.
    """
    if run is None:
        refuse("not_found", f"no run {run_id} was started in this workspace", "run_id")
    if actor.kind == "harness" and actor.id != run.harness_id:
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


async def place_on_run(door: Door, raw: Any, actor: Actor) -> Any:
    """A ``message.post`` naming ``run_id`` is said in the run's room: fill in its
    ``space_id`` before the post is decided as any other (:func:`room_of_reply`)."""
    if not isinstance(raw, dict) or raw.get("type") != "message.post":
        return raw
    run_id = raw.get("run_id")
    if not isinstance(run_id, str):
        return raw  # absent, or not a run's id: the catalogue answers for it
    space_id = room_of_reply(await find_run(door, run_id), run_id, raw.get("space_id"), actor)
    return {**raw, "space_id": space_id}


async def check_run_event(
    door: Door, body: EventBody, actor: Actor, request: AppendRequest | None
) -> dict[str, Any]:
    """Decide one event of a run, update the run's door state, say what Chips fills in."""
    match body:
        case RunStarted():
            return await check_run_started(door, body, actor)
        case ApprovalResolved() | QuestionAnswered():
            return await check_answer(door, body, actor, request)
        case RunCancel() | RunSteer():
            run = await run_for(door, body, actor, people=True)
        case _:
            run = await run_for(door, body, actor, people=False)
    check_state(run, body.type)
    filled: dict[str, Any] = {"space_id": run.space_id}
    match body:
        case RunSteer():
            if actor.kind != "person":
                refuse("forbidden", "a run is steered by a person in its room")
            disposition = "queued" if body.mode == "followup" else "steered"
            if request is not None:
                filled["run_receipt"] = receipt(request.idempotency_key, disposition, [run])
        case ApprovalRequest():
            await add_card(door, run, "approval", body.approval_id, body)
        case QuestionAsk():
            await add_card(door, run, "question", body.question_id, body)
    if body.type in NEXT_STATE:
        await set_state(door, run.id, NEXT_STATE[body.type])
    return filled


async def check_run_started(door: Door, body: RunStarted, actor: Actor) -> dict[str, Any]:
    if actor.kind != "harness":
        refuse("forbidden", "a run is a harness's turn; only a harness reports one started")
    await door.check_member(body.space_id, actor)
    if await find_run(door, body.run_id) is not None:
        refuse("invalid_event", f"{body.run_id} was started already; name a new run", "run_id")
    if body.lane_id is not None:  # a job taking over the lane it works (ADR 0017)
        from chips_eventlog.lanes import take_lane  # lanes imports this module

        await take_lane(door, body)
    await door.conn.execute(
        insert(rt.runs).values(
            workspace_id=door.workspace_id,
            id=body.run_id,
            space_id=body.space_id,
            harness_id=actor.id,
            state="running",
            started_seq=door.head_seq + 1,
        )
    )
    if (spaces := door.live_spaces) is not None:
        spaces.add(body.space_id)
    return {}


async def run_for(door: Door, body: Any, actor: Actor, *, people: bool) -> Run:
    """The run ``body`` names, if the actor may write about it.

    The run's harness writes every event of its run; a person in the run's room writes
    only ``run.cancel`` and ``run.steer`` (``people``). Anyone else is refused.
    """
    run = await find_run(door, body.run_id)
    if run is None:
        refuse("not_found", f"no run {body.run_id} was started in this workspace", "run_id")
    if body.space_id is not None and body.space_id != run.space_id:
        refuse("invalid_event", f"{run.id} is a run of another space", "space_id")
    if actor.kind == "harness":
        if actor.id != run.harness_id:
            refuse("forbidden", f"{run.id} is another harness's run", "run_id")
    elif people and actor.kind == "person":
        await door.check_member(run.space_id, actor)
    else:
        refuse("forbidden", f"only the harness whose run it is writes {body.type}", "type")
    return run


def check_state(run: Run, event_type: str) -> None:
    """Refuse what the run's state does not take, with the reason (websocket.md, Writing)."""
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


async def set_state(door: Door, run_id: str, state: str) -> None:
    await door.conn.execute(
        update(rt.runs)
        .where(and_(rt.runs.c.workspace_id == door.workspace_id, rt.runs.c.id == run_id))
        .values(state=state)
    )


async def add_card(
    door: Door, run: Run, kind: str, card_id: str, body: ApprovalRequest | QuestionAsk
) -> None:
    if await find_card(door, kind, card_id) is not None:
        refuse("invalid_event", f"{kind} {card_id} was asked already; give it a new id", "type")
    values: dict[str, Any] = {
        "workspace_id": door.workspace_id,
        "kind": kind,
        "id": card_id,
        "run_id": run.id,
        "space_id": run.space_id,
        "harness_id": run.harness_id,
    }
    if isinstance(body, ApprovalRequest):
        values.update(answerers=body.answerers or [], expires_at=body.expires_at)
    else:
        values.update(options=[[o.value, o.label] for o in body.options], free_text=body.free_text)
    await door.conn.execute(insert(rt.run_cards).values(**values))


async def check_answer(
    door: Door,
    body: ApprovalResolved | QuestionAnswered,
    actor: Actor,
    request: AppendRequest | None,
) -> dict[str, Any]:
    """First answer wins, on every surface (websocket.md, First answer wins)."""
    answer: str | None
    if isinstance(body, ApprovalResolved):
        kind, card_id, answer = "approval", body.approval_id, body.decision
    else:
        kind, card_id, answer = "question", body.question_id, body.value or ""
    card = await find_card(door, kind, card_id)
    if card is None:
        refuse("not_found", f"no {kind} {card_id} was asked in this workspace", f"{kind}_id")
    if body.space_id is not None and body.space_id != card.space_id:
        refuse("invalid_event", f"{kind} {card_id} is a card of another space", "space_id")
    await door.check_member(card.space_id, actor)
    if card.answered_by is not None:
        first = await name_of(door, card.answered_by)
        said = "decided" if kind == "approval" else "answered"
        refuse(
            "invalid_event",
            f"{kind} {card_id} was {said} already, first by {first} ({card.answer})",
            f"{kind}_id",
        )
    filled: dict[str, Any] = {"run_id": card.run_id, "space_id": card.space_id}
    if isinstance(body, ApprovalResolved):
        await check_decider(door, card, actor)
        if card.expires_at is not None and card.expires_at <= door.now:
            refuse(
                "invalid_event",
                f"approval {card_id} expired at {card.expires_at.isoformat()}: Chips stopped "
                "waiting for it, and its expiry decides nothing",
                "approval_id",
            )
        if request is not None:
            filled["idempotency_key"] = request.idempotency_key
    else:
        if actor.kind == "harness" and actor.id != card.harness_id:
            refuse("forbidden", f"question {card_id} is another harness's to settle")
        answer = pick_option(card, body) or body.text
        filled["value"] = pick_option(card, body)
    run = await find_run(door, card.run_id)
    if run is not None and run.state not in LIVE:
        refuse("invalid_event", f"the run that asked it, {run.id}, has ended ({run.state})")
    c = rt.run_cards.c
    await door.conn.execute(
        update(rt.run_cards)
        .where(and_(c.workspace_id == door.workspace_id, c.kind == kind, c.id == card_id))
        .values(answered_by=actor.id, answer=answer, answered_seq=door.head_seq + 1)
    )
    if not filled.get("value"):
        filled.pop("value", None)
    return filled


async def check_decider(door: Door, card: Card, actor: Actor) -> None:
    """Who decides an approval: the harness's owner, the people the card names, and the
    harness whose run asked (it reports a decision made on its own side, websocket.md)."""
    if actor.kind == "harness":
        if actor.id != card.harness_id:
            refuse(
                "forbidden",
                f"approval {card.id} was asked by another harness's run, and no policy "
                "handed it to you",
            )
        return
    harness = await door.participant(card.harness_id)
    owner = harness.owner_id if harness else None
    if actor.id != owner and actor.id not in card.answerers:
        refuse(
            "forbidden",
            f"approval {card.id} is decided by the harness's owner or the people it names",
        )


def pick_option(card: Card, body: QuestionAnswered) -> str | None:
    """The option a tap or typed words choose, or None for free text the question takes."""
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
    if not card.free_text:
        refuse(
            "invalid_event",
            f"question {card.id} takes one of its options, not typed words: {', '.join(values)}",
            "text",
        )
    return None


# --- receipts and the composer -----------------------------------------------------------


def receipt(key: str, disposition: str, runs: list[Run]) -> dict[str, Any]:
    return {
        "idempotency_key": key,
        "disposition": disposition,
        "run_ids": [r.id for r in runs],
        "harness_ids": sorted({r.harness_id for r in runs}),
    }


async def with_receipt(
    door: Door,
    body: MessagePost,
    actor: Actor,
    request: AppendRequest | None,
    filled: dict[str, Any],
) -> dict[str, Any]:
    """A person's words into a room with a live run are queued for the harness's next look.

    A ``run_receipt`` written by the client is replaced, or refused when no run is live.
    """
    if body.run_receipt is not None and actor.kind != "person":
        refuse("invalid_event", "run_receipt is filled in by Chips; leave it out", "run_receipt")
    if actor.kind != "person" or request is None:
        return filled
    running = await live_runs(door, body.space_id) if await may_be_live(door, body.space_id) else []
    if not running:
        if body.run_receipt is not None:
            refuse(
                "invalid_event", "run_receipt is filled in by Chips; leave it out", "run_receipt"
            )
        return filled
    return {
        **filled,
        "run_receipt": receipt(request.idempotency_key, "queued", running),
    }


async def admit_composer(door: Door, body: MessagePost, actor: Actor) -> bool:
    """``wreply <id> <answer>`` and ``/stop`` from a person's composer; True if it was one.

    ``wreply`` is a question's typed answer (jacobian-channel.md, What Chips says), decided
    as ``question.answered``; ``/stop`` cancels every live run in the room.
    """
    text = (body.text or "").strip()
    bodies: list[EventBody] = []
    if (match := _WREPLY.match(text)) is not None and text[:6].lower() == "wreply":
        card_id, answer = match.group(1), (match.group(2) or "").strip()
        await door.check_member(body.space_id, actor)
        if not card_id or not answer:
            refuse(
                "invalid_event", "wreply names the question and the answer: wreply <id> <answer>"
            )
        try:
            bodies.append(QuestionAnswered(question_id=card_id, text=answer))
        except ValueError:
            refuse("invalid_event", f"{card_id!r} is not a question's id", "text")
        card = await find_card(door, "question", card_id)
        if card is None or card.space_id != body.space_id:
            refuse("not_found", f"no question {card_id} was asked in this room", "text")
    elif text.lower() == "/stop":
        await door.check_member(body.space_id, actor)
        running = await live_runs(door, body.space_id)
        if not running:
            refuse("invalid_event", "nothing is running in this room to stop", "text")
        bodies.extend(RunCancel(run_id=r.id, why="/stop") for r in running)
    else:
        return False
    async with door.conn.begin_nested():
        for event in bodies:
            filled = await door.check(event, actor, None)
            door.stage(event, filled, actor)
    return True
