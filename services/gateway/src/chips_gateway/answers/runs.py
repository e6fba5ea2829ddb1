"""What the run routes answer: runs, their cards, steps, lanes and spending."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chips_common.events import JsonObject
from chips_gateway.answers.base import Answer, absent


class RunProgress(Answer):
    phase: str | None
    verb: str | None
    progress: float | None
    text: str | None


class RunSpending(Answer):
    tokens_in: int
    tokens_out: int
    cost_usd: float
    uncosted: int


class Spending(RunSpending):
    reports: int


class RunRow(Answer):
    run_id: str
    space_id: str
    harness_id: str
    agent_id: str | None
    goal: str
    session_id: str | None
    message_id: str | None
    chips: Any = None
    state: str
    status: RunProgress
    summary: str | None
    why: str | None
    started_seq: int
    started_at: str
    ended_seq: int | None
    ended_at: str | None
    usage: RunSpending


class Step(Answer):
    step_id: str
    status: Literal["started", "done", "failed"]
    title: str | None
    summary: str | None
    started_seq: int
    last_seq: int | None


class RunCard(Answer):
    """An approval or a question a run asked, and its answer once given."""

    kind: Literal["approval", "question"]
    id: str
    run_id: str
    space_id: str
    harness_id: str | None
    asked_seq: int
    expires_at: str | None
    card: JsonObject
    answered_by: str | None
    answer: Any
    answered_seq: int | None


class Lane(Answer):
    lane_id: str
    run_id: str | None
    from_space_id: str
    to_space_id: str | None
    opener_id: str | None
    task: str | None
    worker: str | None
    working_run_id: str | None
    state: str
    summary: str | None
    why: str | None
    cost_usd: float | None
    ended_by: str | None
    opened_seq: int
    opened_at: str
    ended_seq: int | None
    ended_at: str | None
    direction: Literal["out", "in"] | None = absent()


class RunMessage(Answer):
    message_id: str
    seq: int
    author_id: str
    kind: str
    text: str | None
    ts: str
    edited: bool
    deleted: bool


class Run(RunRow):
    """``GET /v1/runs/{run_id}``: a run as its receipt."""

    lane_id: str | None
    steps: list[Step]
    cards: list[RunCard]
    lanes: list[Lane]
    messages: list[RunMessage]
    as_of_seq: int


class SpaceRuns(Answer):
    runs: list[RunRow]
    usage: Spending
    as_of_seq: int


class DaySpending(Spending):
    day: str = Field(description="a UTC day, 2026-12-03")


class HarnessUsage(Answer):
    harness_id: str
    usage: Spending
    days: list[DaySpending] = Field(
        description="the last days (``days``, 30 unless asked) to today, oldest first"
    )
    as_of_seq: int


class SpaceLanes(Answer):
    lanes: list[Lane]
    as_of_seq: int


class Approvals(Answer):
    approvals: list[RunCard]
    as_of_seq: int
