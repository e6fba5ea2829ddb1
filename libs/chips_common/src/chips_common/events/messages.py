"""Messages said in a space, and what is done to them afterwards (docs/product/messages.md).

A ``message.post`` is one of eleven kinds. Text carries words; every other kind carries a
card of its own, in the field named after the kind (``"kind": "status", "status": {…}``),
so each is validated and documented on its own. Who may post which kind is a rule at the
door (``chips_common.rules.kinds``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chips_common.events.base import EventBody, FieldProblem, Ref, register
from chips_common.events.runs import Receipt, RunId

MAX_TEXT = 32_000
MAX_LINE = 2_000  # a title, a goal, an outcome: one line of a card

Kind = Literal[
    "text",
    "status",
    "approval",
    "question",
    "receipt",
    "artifact",
    "task",
    "handoff",
    "checkpoint",
    "summary",
    "system",
]
KINDS: tuple[str, ...] = get_args(Kind)
# The kinds whose words are the message's ``text``; every other kind carries a card.
WORDED = frozenset({"text", "system"})

Line = Field(min_length=1, max_length=MAX_LINE)
Lines = Field(default=None, max_length=100)
# One entry of a card's list (a constraint, a follow-up, a source): one line, bounded like
# the card's other lines, so that no list holds an unbounded string.
LineItem = Annotated[str, Field(max_length=MAX_LINE)]


class Heard(BaseModel):
    """What Chips heard in a voice note (``attachment.transcribed``), on the note as a reader
    is handed it once it was heard: the room's lines, and a ``message.new`` shaped after
    the hearing (docs/adr/0137, 0147). The door never writes it in the log."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: Literal["words", "nothing", "too_long", "failed"]
    transcript: str | None = Field(default=None, max_length=MAX_TEXT)
    note: str | None = Field(default=None, max_length=500)
    engine: str | None = Field(default=None, max_length=100)


class Attachment(BaseModel):
    """A file a message carries, as Chips stored it (docs/product/messages.md, Attachments).

    Filled in by the door from the sender's uploads: what the bytes turned out to be, the
    digest they are kept under, and the file's version among the room's files of its name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    attachment_id: Ref
    name: str = Field(min_length=1, max_length=255)
    mime_type: str = Field(max_length=255)
    # A voice note is a recording posted as one: Chips transcribes it once it is posted
    # (``attachment.transcribed``); any other audio is a file.
    kind: Literal["photo", "video", "voice_note", "file"]
    byte_size: int = Field(ge=0)
    sha256: str = Field(max_length=64)
    version: int = Field(ge=1)
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    thumbnail: bool = False
    replaces: Ref | None = None
    # What was heard in a voice note, once it was (as delivered; never logged here).
    heard: Heard | None = None


class Card(BaseModel):
    """The structured part of a message that is not plain words."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# A card's files: uploads of the sender's, by id, that the card is about (an artifact's
# file, what a run read or made, what a task or a hand-off hands over). The door posts
# them as it posts ``upload_ids`` (the same rules; their attachments are the message's),
# so the card names each by the id its attachment has (an upload's id is its
# attachment's). See CARD_FILE_FIELDS.
UploadIds = Field(default=None, min_length=1, max_length=20)


class StatusCard(Card):
    """A pill under the harness's name: what it is doing now."""

    phase: str = Field(min_length=1, max_length=80)
    verb: str = Field(min_length=1, max_length=200)
    progress: float | None = Field(default=None, ge=0, le=1)
    estimate: str | None = Field(default=None, max_length=80)


class ApprovalCard(Card):
    """A card asking a person to approve, edit or deny an action."""

    action: str = Line
    preview: str | None = Field(default=None, max_length=MAX_TEXT)
    risk: Literal["low", "medium", "high"] = "medium"
    expires_at: datetime | None = None
    answerers: list[Ref] | None = Field(default=None, max_length=50)


class Option(Card):
    """One tappable answer to a question."""

    label: str = Field(min_length=1, max_length=200)
    value: str = Field(min_length=1, max_length=200)


class QuestionCard(Card):
    """A question with tappable options, and whether typed words are taken too."""

    prompt: str = Line
    options: list[Option] = Field(default_factory=list, max_length=20)
    free_text: bool = False
    default: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _answerable(self) -> QuestionCard:
        if not self.options and not self.free_text:
            raise FieldProblem("options", "a question needs options to tap or free_text: true")
        if self.default is not None and self.default not in {o.value for o in self.options}:
            raise FieldProblem("default", "a question's default is the value of one of its options")
        return self


class ReceiptStep(Card):
    title: str = Line
    status: Literal["done", "failed", "skipped"] = "done"
    summary: str | None = Field(default=None, max_length=MAX_LINE)


class Tokens(Card):
    input: int = Field(ge=0)
    output: int = Field(ge=0)


class ReceiptCard(Card):
    """What a run did: steps, tool calls, sources, tokens, cost and time."""

    steps: list[ReceiptStep] = Field(default_factory=list, max_length=200)
    tool_calls: int | None = Field(default=None, ge=0)
    sources: list[LineItem] | None = Lines
    tokens: Tokens | None = None
    cost_usd: float | None = Field(default=None, ge=0)
    duration_ms: int | None = Field(default=None, ge=0)
    upload_ids: list[Ref] | None = UploadIds  # files the run read or made


class ArtifactCard(Card):
    """A file, document, code, image or table the harness made, with its version."""

    name: str = Field(min_length=1, max_length=255)
    form: Literal["file", "document", "code", "image", "table"]
    version: int = Field(default=1, ge=1)
    language: str | None = Field(default=None, max_length=40)
    content: str | None = Field(default=None, max_length=MAX_TEXT)
    upload_id: Ref | None = None  # the artifact's file, uploaded first


class TaskCard(Card):
    """Work given to the room: a goal, its constraints, a deadline and how free to act."""

    goal: str = Line
    constraints: list[LineItem] | None = Lines
    deadline: datetime | None = None
    autonomy: Literal["ask", "suggest", "act"] = "ask"
    upload_ids: list[Ref] | None = UploadIds  # what the work starts from


class HandoffCard(Card):
    """Work handed to somebody in the room, with what they need to carry on."""

    recipient: str = Field(min_length=1, max_length=100)
    summary: str = Line
    open_items: list[LineItem] | None = Lines
    upload_ids: list[Ref] | None = UploadIds  # what is handed over


class CheckpointCard(Card):
    """A milestone reached, and what comes next: FYI."""

    milestone: str = Line
    next: str | None = Field(default=None, max_length=MAX_LINE)


class SummaryCard(Card):
    """The card at the end of a run: outcome, what changed, cost and follow-ups."""

    outcome: str = Line
    changed: list[LineItem] | None = Lines
    cost_usd: float | None = Field(default=None, ge=0)
    follow_ups: list[LineItem] | None = Lines
    upload_ids: list[Ref] | None = UploadIds  # what the run changed, as files


CARD_FIELDS = (
    "status",
    "approval",
    "question",
    "receipt",
    "artifact",
    "task",
    "handoff",
    "checkpoint",
    "summary",
)


# The cards that name files, and the field each names them in (one id, or a list).
CARD_FILE_FIELDS: dict[str, str] = {
    "artifact": "upload_id",
    "receipt": "upload_ids",
    "task": "upload_ids",
    "handoff": "upload_ids",
    "summary": "upload_ids",
}


class ExchangeFacts(BaseModel):
    """What the referee said of a message an agent sent agents (docs/product/websocket.md):
    its count since a person last acted or an agent made something new, the workspace's
    stop and hold (``allowance``), whether it goes in a circle, whether it was held, and
    the note for the turn it gives (from half the stop, or on a circle)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=1)
    stop: int | None = Field(default=None, ge=1)
    allowance: int | None = Field(default=None, ge=1)
    circle: bool | None = None
    held: bool | None = None
    note: str | None = Field(default=None, max_length=2000)


@register
class MessagePost(EventBody):
    """Words said in a space, or a card. The message's id is the event's ULID with ``msg_``.

    ``to`` is the composer's pick: harness ids, or ``"everyone"``. ``mentions`` is filled in
    by Chips from the text's @handles (a value the sender writes is replaced), and so is
    ``addressed_to``: the harnesses the message is for (docs/product/spaces.md, the five rules).
    A text or system message has ``text``; any other kind has its card in the field named
    after it, and may add ``text`` as a caption.
    """

    type: Literal["message.post"] = "message.post"
    space_id: str
    # A reply on the run (docs/product/jacobian-channel.md: "reply: message.post, on the run"): the
    # harness's run it answers in. A post naming run_id may leave space_id out; Chips fills
    # it in with the run's room, so every logged post names its room.
    run_id: RunId | None = None
    kind: Kind = "text"
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    reply_to: str | None = None
    to: list[Ref] | None = Field(default=None, max_length=50)
    mentions: list[Ref] | None = Field(default=None, max_length=200)
    # Filled in by Chips at append; what a client writes here is replaced.
    addressed_to: list[Ref] | None = Field(default=None, max_length=200)
    # Filled in by Chips when a run is live in the room (docs/product/websocket.md, Receipts).
    run_receipt: Receipt | None = None
    # Filled in by Chips for a message an agent sends agents (the referee, ADR 0083):
    # ``exchange`` from half the stop or on a circle; ``held`` past the hold or while the
    # room is paused, with ``addressed_to`` empty and ``held_for`` whom it was for.
    exchange: ExchangeFacts | None = None
    held: bool | None = None
    held_for: list[Ref] | None = Field(default=None, max_length=200)
    status: StatusCard | None = None
    approval: ApprovalCard | None = None
    question: QuestionCard | None = None
    receipt: ReceiptCard | None = None
    artifact: ArtifactCard | None = None
    task: TaskCard | None = None
    handoff: HandoffCard | None = None
    checkpoint: CheckpointCard | None = None
    summary: SummaryCard | None = None
    # Files: the sender's uploads by id, and for each one it changed, the attachment_id of
    # the version it was made from (docs/product/websocket.md, The room's files). ``attachments`` is
    # filled in by Chips from the uploads; a client does not write it.
    upload_ids: list[Ref] | None = Field(default=None, min_length=1, max_length=20)
    replaces: dict[Ref, Ref] | None = Field(default=None, max_length=20)
    attachments: list[Attachment] | None = Field(default=None, max_length=20)
    # Words an agent said while it was in no room (message.held), posted by Chips in the
    # next room it joins, with when they were said (docs/adr/0071). Chips's alone.
    held_since: datetime | None = None

    @model_validator(mode="after")
    def _one_card(self) -> MessagePost:
        given = [name for name in CARD_FIELDS if getattr(self, name) is not None]
        if self.kind in WORDED:
            # A post with files says something, words or none (docs/product/websocket.md).
            if self.text is None and not self.upload_ids and not self.attachments:
                raise FieldProblem("text", "text is required")
            if given:
                raise FieldProblem(given[0], f"a {self.kind} message carries no {given[0]} card")
        elif given != [self.kind]:
            extra = [g for g in given if g != self.kind]
            if extra:
                raise FieldProblem(extra[0], f"a {self.kind} message carries no {extra[0]} card")
            raise FieldProblem(self.kind, f"a {self.kind} message needs its {self.kind} card")
        return self


def said_on_run(event: Mapping[str, object]) -> bool:
    """A ``message.post`` that names its run and leaves its room out: a reply on the run,
    whose ``space_id`` Chips fills in with the run's room before it is checked as a post
    (docs/product/jacobian-channel.md, "reply: message.post, on the run")."""
    return (
        event.get("type") == "message.post"
        and "space_id" not in event
        and isinstance(event.get("run_id"), str)
    )


def words_of(event: dict[str, object]) -> str:
    """A message's words for a line of context or a search: text, else the card's headline."""
    text = event.get("text")
    if isinstance(text, str):
        return text
    kind = str(event.get("kind", "text"))
    card = event.get(kind)
    if not isinstance(card, dict):
        return ""
    headline = {
        "status": "verb",
        "approval": "action",
        "question": "prompt",
        "artifact": "name",
        "task": "goal",
        "handoff": "summary",
        "checkpoint": "milestone",
        "summary": "outcome",
    }.get(kind)
    return str(card.get(headline, "")) if headline else ""


@register
class TurnPassed(EventBody):
    """A harness that had nothing to say: it posted ``NO_REPLY`` alone (docs/product/websocket.md).

    Logged instead of the message. Nobody is shown it and no agent is handed it.
    """

    client_writable = False

    type: Literal["turn.passed"] = "turn.passed"
    space_id: str
    reply_to: str | None = None


@register
class MessageHeard(EventBody):
    """A turn working in a room was handed words said there to somebody else, or a message
    for its agent joined to it (docs/product/websocket.md, What a harness hears).

    Posted on the run, as its agent; Chips fills in ``space_id`` (the run's room, which
    the message must be in). The room shows "J1 heard this while working" beneath it.
    """

    type: Literal["message.heard"] = "message.heard"
    run_id: RunId
    message_id: str = Field(min_length=1, max_length=100)
    space_id: str | None = None


class _AboutAMessage(EventBody):
    space_id: str
    message_id: str = Field(min_length=1, max_length=100)


@register
class MessageEdited(_AboutAMessage):
    """The author changed a message's words; the room shows the latest, marked edited."""

    type: Literal["message.edited"] = "message.edited"
    text: str = Field(min_length=1, max_length=MAX_TEXT)


@register
class MessageDeleted(_AboutAMessage):
    """A message taken back: a tombstone stands where it was. The log keeps the words."""

    type: Literal["message.deleted"] = "message.deleted"


@register
class MessageHidden(_AboutAMessage):
    """Delete for me: the line leaves this person's room on every device, and nobody's else."""

    type: Literal["message.hidden"] = "message.hidden"


@register
class MessageShown(_AboutAMessage):
    """A line this person had hidden, put back."""

    type: Literal["message.shown"] = "message.shown"


@register
class MessagePinned(_AboutAMessage):
    """A message pinned to the top of its room."""

    type: Literal["message.pinned"] = "message.pinned"


@register
class MessageUnpinned(_AboutAMessage):
    """A pin let go."""

    type: Literal["message.unpinned"] = "message.unpinned"


Reason = Literal["wrong_facts", "missed_the_ask", "too_long", "not_finished"]


@register
class Feedback(_AboutAMessage):
    """A reaction (with its emoji) or a correction (with its note) on a message.

    A person sends it; Chips fills in ``about`` (whose message it is) and ``standing`` (the
    sender's in the space), and ``withdrawn`` when the same emoji again takes a reaction back.
    It is delivered to everyone in the room and to the harness whose message it is only
    (the harness behind the agent that said it: ``harness_id``).
    """

    type: Literal["feedback"] = "feedback"
    kind: Literal["reaction", "correction"]
    emoji: str | None = Field(default=None, min_length=1, max_length=32)
    note: str | None = Field(default=None, max_length=4_000)
    reasons: list[Reason] | None = Field(default=None, max_length=4)
    # Filled in by Chips at append; ``harness_id`` is the harness behind an agent ``about``.
    about: str | None = None
    harness_id: str | None = None
    standing: str | None = None
    withdrawn: bool | None = None

    @model_validator(mode="after")
    def _complete(self) -> Feedback:
        if self.kind == "reaction" and not self.emoji:
            raise FieldProblem("emoji", "a reaction needs its emoji")
        if self.kind == "correction" and not (self.note or "").strip() and not self.reasons:
            raise FieldProblem("note", "a correction needs its note: say what is wrong")
        return self
