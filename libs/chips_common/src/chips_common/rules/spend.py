"""What a room's job has spent, and the ceiling it is weighed against (docs/product/websocket.md,
"What the job has spent", "At the ceiling"; ADR 0083).

A job is the work a room's agents do after the last thing a person did there, or after a
brief was handed into the room. Its spend is the cost the room's usage reports said since
then, every harness's together; a run whose usage carried no cost counts nothing, and is
counted as uncounted. Each room allows a job $3 unless a person in the room set another
ceiling, from $0.25 to $100. Pure: the referee weighs the job as it stands
(:func:`standing`) to decide its warnings, and the gateway folds it to say ``context.spend``
and to answer ``GET /v1/spaces/:id/spend``; :func:`weigh` is the same rule told once per
job, the model the referee's keyed appends are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Literal, TypedDict

DEFAULT_CEILING = 3.0
MIN_CEILING = 0.25
MAX_CEILING = 100.0
WARN_AT: Literal[80] = 80  # percent of the ceiling
PAUSE_AT: Literal[100] = 100


@dataclass(frozen=True)
class Job:
    """One room's job so far: where it began, what it spent, and what it was told."""

    since_seq: int = 0
    spent: Decimal = Decimal(0)
    priced_runs: frozenset[str] = frozenset()
    unpriced_runs: frozenset[str] = frozenset()
    warned: bool = False
    paused: bool = False

    @property
    def spent_usd(self) -> float:
        return float(round(self.spent, 6))

    @property
    def uncounted_runs(self) -> int:
        """Runs of this job whose usage carried no cost at all."""
        return len(self.unpriced_runs - self.priced_runs)


@dataclass(frozen=True)
class Crossing:
    """A threshold the job crossed: 80 (warn) or 100 (pause)."""

    threshold: Literal[80, 100]
    spent_usd: float
    ceiling_usd: float
    since_seq: int

    @property
    def action(self) -> Literal["warn", "pause"]:
        return "warn" if self.threshold == WARN_AT else "pause"


def new_job(seq: int) -> Job:
    """A job beginning at ``seq``: a person's act, or a brief handed into the room."""
    return Job(since_seq=seq)


def add_usage(job: Job, run_id: str, cost_usd: float | None) -> Job:
    """A usage report in the room: its cost counts; without one its run may go uncounted."""
    if cost_usd is None:
        return replace(job, unpriced_runs=job.unpriced_runs | {run_id})
    return replace(
        job,
        spent=job.spent + Decimal(str(cost_usd)),
        priced_runs=job.priced_runs | {run_id},
    )


def standing(job: Job, ceiling_usd: float) -> Crossing | None:
    """The highest threshold the job has reached as it stands: 100 at the ceiling, 80 from
    80% of it, None below.

    The referee tells it under a key of the room, the job and the threshold, so however
    often it weighs the same job, each threshold is logged once (docs/adr/0083).
    """
    ceiling = Decimal(str(ceiling_usd))
    if job.spent >= ceiling:
        return Crossing(PAUSE_AT, job.spent_usd, ceiling_usd, job.since_seq)
    if job.spent * 100 >= ceiling * WARN_AT:
        return Crossing(WARN_AT, job.spent_usd, ceiling_usd, job.since_seq)
    return None


def weigh(job: Job, ceiling_usd: float) -> tuple[Job, Crossing | None]:
    """Weigh the job against the ceiling after a usage: what it crosses, once per job.

    At the ceiling the pause is told (and the 80% warning is not told after it: a warning to
    finish the step is no use once the room is held). Below it, 80% is told once.
    """
    if job.paused:
        return job, None
    crossing = standing(job, ceiling_usd)
    if crossing is None:
        return job, None
    if crossing.threshold == PAUSE_AT:
        return replace(job, paused=True, warned=True), crossing
    if job.warned:
        return job, None
    return replace(job, warned=True), crossing


def ceiling_of(usd: float | None) -> float:
    """The room's ceiling: what a person set, else the default."""
    return DEFAULT_CEILING if usd is None else usd


def valid_ceiling(usd: float) -> bool:
    return MIN_CEILING <= usd <= MAX_CEILING


class SpendFacts(TypedDict):
    """What a room's job has spent, against its ceiling."""

    ceiling_usd: float
    spent_usd: float
    since_seq: int
    uncounted_runs: int


def spend_facts(job: Job, ceiling_usd: float) -> SpendFacts:
    """``context.spend`` and the answer of ``GET /v1/spaces/:id/spend``."""
    return {
        "ceiling_usd": ceiling_usd,
        "spent_usd": job.spent_usd,
        "since_seq": job.since_seq,
        "uncounted_runs": job.uncounted_runs,
    }


def dollars(usd: float) -> str:
    return f"${usd:,.2f}"


def spend_sentence(job: Job, ceiling_usd: float) -> str:
    """The note's last sentence about the job's spend (and the 80% line, and uncounted runs)."""
    out = (
        f"This job has spent {dollars(job.spent_usd)} of the {dollars(ceiling_usd)} this space"
        f" allows a job; at {dollars(ceiling_usd)} Chips holds the agents until a person acts."
    )
    if job.spent * 100 >= Decimal(str(ceiling_usd)) * WARN_AT:
        out += " Most of it is spent: finish the step you are on, and say what is left."
    n = job.uncounted_runs
    if n:
        which = (
            "1 run of this job reported no cost, so it counts"
            if n == 1
            else (f"{n} runs of this job reported no cost, so they count")
        )
        out += f" {which} nothing here."

    return out


def with_spend_line(note: str, rules: str, sentence: str) -> str:
    """A room note with the spend sentence said last before its rules, so the note still
    ends with them (a session that keeps them says the note without them)."""
    if rules and note.endswith(rules):
        head = note[: len(note) - len(rules)].rstrip()
        return f"{head} {sentence} {rules}" if head else f"{sentence} {rules}"
    return f"{note} {sentence}"
