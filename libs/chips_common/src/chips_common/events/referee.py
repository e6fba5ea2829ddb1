"""The referee and a room's spend (docs/product/websocket.md; docs/adr/0083).

What a workspace's referee counts to (``workspace.referee_set``), what a room allows a job
(``space.spend_ceiling_set``), a room's agents being paused or let carry on
(``exchange.set``), and the warnings Chips gives as a job's spend nears its ceiling
(``budget.warning``); a room's lead (``space.lead_set``), who of its agents is working
(``room.working`` / ``room.idle``) and what nobody's turn the lead was handed
(``lead.handed``): docs/adr/0090.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chips_common.events.base import EventBody, FieldProblem, register


@register
class WorkspaceRefereeSet(EventBody):
    """An owner or admin set when the referee steps in: the stop and the hold (a count, or
    ``"never"``) and whether circles count. A field left out keeps its default (16, 48, on).
    """

    in_space: ClassVar[bool] = False

    type: Literal["workspace.referee_set"] = "workspace.referee_set"
    stop: Annotated[int, Field(ge=2, le=1000)] | Literal["never"] = 16
    hold: Annotated[int, Field(ge=2, le=1000)] | Literal["never"] = 48
    circles: bool = True


@register
class SpaceSpendCeilingSet(EventBody):
    """A person in the room set what it allows a job, in US dollars (null: the default, $3)."""

    type: Literal["space.spend_ceiling_set"] = "space.spend_ceiling_set"
    space_id: str
    usd: float | None = None

    @model_validator(mode="after")
    def _in_range(self) -> SpaceSpendCeilingSet:
        if self.usd is not None and not 0.25 <= self.usd <= 100:
            raise FieldProblem("usd", "a room's spend ceiling is from $0.25 to $100")
        return self


class JobSpend(BaseModel):
    """A job's spend as of an event: its ceiling, what it spent, since when, and how many of
    its runs reported no cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ceiling_usd: float = Field(ge=0)
    spent_usd: float = Field(ge=0)
    since_seq: int = Field(ge=0)
    uncounted_runs: int = Field(default=0, ge=0)


@register
class ExchangeSet(EventBody):
    """A room's agents paused, or let carry on (Let them carry on).

    A person pauses or resumes them; Chips pauses them at the spend ceiling, saying
    ``why: "spend"`` and the job's spend.
    """

    type: Literal["exchange.set"] = "exchange.set"
    space_id: str
    state: Literal["paused", "running"]
    why: Literal["person", "spend"] | None = None
    spend: JobSpend | None = None

    @model_validator(mode="after")
    def _why(self) -> ExchangeSet:
        if self.state == "running" and (self.why is not None or self.spend is not None):
            raise FieldProblem("why", "letting a room's agents carry on needs no why")
        return self


class BudgetLimit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    limit_usd: float = Field(ge=0)
    spent_usd: float = Field(ge=0)


@register
class BudgetWarning(EventBody):
    """A job's spend reached 80% of the room's ceiling (warn), or all of it (pause).

    Told once per job to everyone in the room. With no scope, or ``harness``, it is about a
    harness's own budget.
    """

    client_writable: ClassVar[bool] = False

    type: Literal["budget.warning"] = "budget.warning"
    space_id: str
    budget: BudgetLimit
    threshold: Literal[80, 100]
    action: Literal["warn", "pause"]
    scope: Literal["job", "harness"] | None = "job"
    since_seq: int | None = Field(default=None, ge=0)


@register
class SpaceLeadSet(EventBody):
    """A person in the room chose its lead: the agent that hands out the work there and is
    handed what is nobody's turn (``agent_id`` null: no lead). A room asked of a harness is
    led, from its claim, by who claimed it (docs/product/websocket.md, Who leads)."""

    type: Literal["space.lead_set"] = "space.lead_set"
    space_id: str
    agent_id: Annotated[str, Field(max_length=100)] | None = None


class Working(BaseModel):
    """An agent with a turn going: since when, the last step it said it was on, when
    anything was last heard from the turn, and when it stops being counted if nothing more
    is heard (``silent_at``: ten minutes after, as the referee is set)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str
    run_id: str
    since: str
    heard_at: str
    silent_at: str
    last_step: str | None = None


class Resting(BaseModel):
    """An agent with no turn going, and since when (its last turn's end, or its joining)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str
    since: str


@register
class RoomWorking(EventBody):
    """Who of the room's agents has a turn going, and how long the rest have been without
    one, each time that changes while somebody works (a turn silent ten minutes is not
    counted). Chips's own, written by the referee."""

    client_writable: ClassVar[bool] = False

    type: Literal["room.working"] = "room.working"
    space_id: str
    working: list[Working] = Field(min_length=1)
    idle: list[Resting] = Field(default_factory=list)


@register
class RoomIdle(EventBody):
    """Nobody in the room is working any more (``since``: the moment the last turn ended or
    went silent), with how long each agent has been without a turn."""

    client_writable: ClassVar[bool] = False

    type: Literal["room.idle"] = "room.idle"
    space_id: str
    since: str
    idle: list[Resting] = Field(default_factory=list)


@register
class LeadHanded(EventBody):
    """Chips handed the lead an agent's words that reached nobody, once nobody had worked
    in the room for the quiet spell (``quiet_seconds``). The room shows one quiet line
    under them; the lead's harness is sent the words as ``message.new`` with ``handed``
    and ``lead`` (docs/product/websocket.md, Who leads, and who is working)."""

    client_writable: ClassVar[bool] = False

    type: Literal["lead.handed"] = "lead.handed"
    space_id: str
    message_id: str
    agent_id: str
    said_by: str
    quiet_seconds: int = Field(ge=0)


REFEREE_EVENTS = (
    "workspace.referee_set",
    "space.spend_ceiling_set",
    "exchange.set",
    "budget.warning",
    "space.lead_set",
    "room.working",
    "room.idle",
    "lead.handed",
)
