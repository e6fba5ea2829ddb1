"""Runs, their steps, approvals, questions, steering and usage.

docs/product/jacobian-channel.md (Every surface, and what it becomes) and docs/product/websocket.md
(Writing, Receipts, First answer wins). A run is a harness's turn in a space; the harness
names it (``run_…``) when it reports it started, and every later event about it names the
run. Chips fills in the run's ``space_id`` on the events that only name the run, so each
is delivered to the room the run is in. The door keeps each run's state and refuses what
the state does not take (docs/architecture/runs.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chips_common.events.base import EventBody, Ref, register
from chips_common.events.workspaces import Autonomy, PolicyRule

MAX_TEXT = 32_000

RunId = Annotated[str, Field(pattern=r"^run_[A-Za-z0-9_.:\-]{1,100}$")]
# A lane's id is its opener's own, like a run's (ADR 0015, ADR 0017).
LaneId = Annotated[str, Field(pattern=r"^lane_[A-Za-z0-9_.:\-]{1,100}$")]
# A card's id is the harness's own (Jacobian's pending record), so ``wreply <id>`` can
# name it: no spaces, at most 100 characters.
CardId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:\-]{1,100}$")]
Short = Annotated[str, Field(min_length=1, max_length=200)]
Long = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]


class Receipt(BaseModel):
    """What Chips did with a person's words while a run was live (docs/product/websocket.md,
    Receipts).

    Filled in by Chips on the ``message.post`` or ``run.steer`` it is about: ``queued`` for
    the harness's next look, or ``steered`` into the turn now. ``idempotency_key`` is the
    sender's, so the receipt frame the runs' harnesses (``harness_ids``) are sent is keyed
    the same way.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    idempotency_key: str
    disposition: Literal["queued", "steered"]
    run_ids: list[str]
    harness_ids: list[str]


@register
class RunStarted(EventBody):
    """A harness's turn began in a space: one run (a Jacobian ``runTurn``).

    ``run_id`` is the harness's own and unique in the workspace. ``goal`` is what the turn
    is for (the message it answers, for a turn begun on one: ``message_id``); ``session_id``
    the harness session it came from; ``chips`` marks a turn begun on a message from Chips,
    so that it is not drawn twice. ``lane_id`` names the lane this run works, in the room
    the lane went to (a job taking over its lane, ADR 0017).
    """

    type: Literal["run.started"] = "run.started"
    run_id: RunId
    space_id: str
    goal: Long
    session_id: Short | None = None
    message_id: str | None = None
    chips: bool | None = None
    lane_id: LaneId | None = None


@register
class RunStatus(EventBody):
    """Where a run is: its phase, what it is doing (``verb``), how far (0 to 1), a line."""

    type: Literal["run.status"] = "run.status"
    run_id: RunId
    space_id: str | None = None
    phase: Short | None = None
    verb: Short | None = None
    progress: float | None = Field(default=None, ge=0, le=1)
    text: Long | None = None


@register
class StepLog(EventBody):
    """A step of a run (a tool call) started, was done, or failed; a line of its receipt."""

    type: Literal["step.log"] = "step.log"
    run_id: RunId
    space_id: str | None = None
    step_id: CardId
    status: Literal["started", "done", "failed"]
    title: Short | None = None
    summary: Long | None = None


@register
class RunPaused(EventBody):
    """A running run waits (for an answer, a person, a budget)."""

    type: Literal["run.paused"] = "run.paused"
    run_id: RunId
    space_id: str | None = None
    why: Short | None = None


@register
class RunResumed(EventBody):
    """A paused run goes on."""

    type: Literal["run.resumed"] = "run.resumed"
    run_id: RunId
    space_id: str | None = None


@register
class RunCompleted(EventBody):
    """A run ended well; ``summary`` is its last reply (``NO_REPLY`` draws nothing)."""

    type: Literal["run.completed"] = "run.completed"
    run_id: RunId
    space_id: str | None = None
    summary: Long | None = None


@register
class RunFailed(EventBody):
    """A run ended with what went wrong."""

    type: Literal["run.failed"] = "run.failed"
    run_id: RunId
    space_id: str | None = None
    why: Long


@register
class RunCancel(EventBody):
    """A run is stopped: by a person (``/stop``, a route card's Cancel) or its harness.

    The harness stops the turn at its next step. The run has ended: nothing more is taken
    for it.
    """

    type: Literal["run.cancel"] = "run.cancel"
    run_id: RunId
    space_id: str | None = None
    why: Short | None = None


@register
class RunSteer(EventBody):
    """A person's words for a live run: ``steer`` redirects the turn at once, ``interrupt``
    stops it first, ``followup`` waits for it to end. Chips fills in ``run_receipt``."""

    type: Literal["run.steer"] = "run.steer"
    run_id: RunId
    space_id: str | None = None
    mode: Literal["steer", "interrupt", "followup"]
    text: Long
    run_receipt: Receipt | None = None


@register
class Usage(EventBody):
    """What a run spent: tokens in and out, and its cost when the harness knows it."""

    type: Literal["usage"] = "usage"
    run_id: RunId
    space_id: str | None = None
    tokens_in: int = Field(ge=0, le=10**12)
    tokens_out: int = Field(ge=0, le=10**12)
    cost_usd: float | None = Field(default=None, ge=0, le=10**6)
    model: Short | None = None


@register
class ApprovalRequest(EventBody):
    """A card asking a person to approve an action the run is about to take.

    ``action`` is the action's fixed name (``jacobian.shell.execute``), ``preview`` what it
    will do, ``risk`` its class where the name really says so, ``expires_at`` when Chips
    stops waiting (it then decides nothing), and ``answerers`` who besides the harness's
    owner may decide. ``args`` is the exact arguments as text (a command line, a JSON
    object): the owner's rules match it, and a rule's approval is bound to it (ADR 0130).
    """

    type: Literal["approval.request"] = "approval.request"
    approval_id: CardId
    run_id: RunId
    space_id: str | None = None
    action: Short
    args: Long | None = None
    preview: Long | None = None
    risk: Short | None = None
    expires_at: datetime | None = None
    answerers: list[Ref] | None = Field(default=None, max_length=50)


@register
class ApprovalResolved(EventBody):
    """An approval was decided: approve, edit (with the action as edited) or deny.

    The first decision wins on every surface; a second is refused naming who was first.
    Chips fills in ``run_id``, ``space_id`` and ``idempotency_key`` (the decider's key, so
    the socket that sent it is not told it was decided elsewhere). A decision the dial made
    (ADR 0130) is Chips's own, with ``system`` as the decider: ``autonomy`` is the level it
    was made at, ``rule`` the owner's rule that made it (absent when the level alone did),
    and ``bound_to`` the hash of the exact action and arguments it decided.
    """

    type: Literal["approval.resolved"] = "approval.resolved"
    approval_id: CardId
    decision: Literal["approve", "edit", "deny"]
    edited: Long | None = None
    note: Short | None = None
    run_id: RunId | None = None
    space_id: str | None = None
    idempotency_key: str | None = None
    autonomy: Autonomy | None = None
    rule: PolicyRule | None = None
    bound_to: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None

    @model_validator(mode="after")
    def _edit_says_how(self) -> ApprovalResolved:
        if (self.decision == "edit") != (self.edited is not None):
            raise ValueError("edited is given with decision edit, and only then")
        return self


class Option(BaseModel):
    """One button of a question: what it says and the value a tap answers with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: Short
    value: Short


@register
class QuestionAsk(EventBody):
    """A question for the people, one option per button; every question also takes typed
    words (``wreply <id> <answer>`` in the composer, docs/adr/0134), and ``free_text`` says it
    asks for words rather than a tap; ``default`` is the value taken on silence;
    ``multiple`` lets several options be chosen together (answered with ``values``).

    ``expires_at`` is when Chips stops waiting: 30 minutes after it is asked unless the
    asker says otherwise (Chips fills it in). Then ``question.expired`` keeps the card,
    marked expired, and takes the ``default`` if there is one (ADR 0131).
    """

    type: Literal["question.ask"] = "question.ask"
    question_id: CardId
    run_id: RunId
    space_id: str | None = None
    prompt: Long
    options: list[Option] = Field(default_factory=list, max_length=50)
    free_text: bool = False
    default: Short | None = None
    multiple: bool = False
    expires_at: datetime | None = None

    @model_validator(mode="after")
    def _answerable(self) -> QuestionAsk:
        values = [o.value for o in self.options]
        if len(set(values)) != len(values):
            raise ValueError("each option of a question has a value of its own")
        if not values and not self.free_text:
            raise ValueError("a question has options, or takes free text, or both")
        if self.multiple and len(values) < 2:
            raise ValueError("a question with multiple: true has two options or more")
        if self.default is not None and self.default not in values:
            raise ValueError("default is the value of one of the options")
        return self


@register
class QuestionAnswered(EventBody):
    """A question was answered: a tap (``value``, an option's value), several taps on a
    question with ``multiple`` (``values``, logged in the order the options were asked), or
    typed ``text``.

    Typed words that are an option's value or label are that option, so both are given.

    The first answer wins; a second is refused naming who was first. Chips fills in
    ``run_id`` and ``space_id``.
    """

    type: Literal["question.answered"] = "question.answered"
    question_id: CardId
    value: Short | None = None
    values: list[Short] | None = Field(default=None, min_length=1, max_length=50)
    text: Long | None = None
    run_id: RunId | None = None
    space_id: str | None = None

    @model_validator(mode="after")
    def _one_answer(self) -> QuestionAnswered:
        if self.value is None and self.text is None and self.values is None:
            raise ValueError("an answer is a value (a tap), values (several) or text (typed)")
        if self.values is not None and (self.value is not None or self.text is not None):
            raise ValueError("values is the whole answer: leave value and text out")
        if self.values is not None and len(set(self.values)) != len(self.values):
            raise ValueError("each value is chosen once")
        return self


@register
class QuestionExpired(EventBody):
    """Nobody answered a question by its ``expires_at`` (ADR 0131). Written by Chips's
    clock, as ``system``: the card is kept, marked expired, with ``note`` saying so, and
    nobody answers it after. ``value`` is the question's ``default``, taken on silence
    (``default_taken``); without one the asker goes on with no answer. Chips fills in
    ``run_id``, ``space_id``, ``value``, ``default_taken`` and ``note``."""

    client_writable: ClassVar[bool] = False

    type: Literal["question.expired"] = "question.expired"
    question_id: CardId
    run_id: RunId | None = None
    space_id: str | None = None
    value: Short | None = None
    default_taken: bool | None = None
    note: Long | None = None
