"""What an event makes of the read models, decided without a database.

The ``apply_*`` functions of ``store``, ``runs``, ``words`` and ``erase`` write rows; what
those rows say (who a new room's members are, what a run's end records, which usage
scopes a report counts in, which copy of a lane event is folded…) is decided here, by
pure functions of the event, so each rule is a unit test with no Postgres
(``services/projector/tests/test_rules.py``), as the door's rules are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Required, TypedDict

from pydantic import JsonValue

from chips_common.events import JsonObject, words_of
from chips_common.events.messages import CARD_FIELDS
from chips_common.events.wire import EventJson, fields_of

Event = EventJson

# The standing of a harness's row in a room it is in only behind its agents (docs/adr/0070):
# kept in rm_members, as the door keeps it, but never listed and drawing no line.
BEHIND_AGENTS = "agents"

# What an agent's row keeps of its registration, beside its name (docs/adr/0070).
AGENT_FACTS = ("key", "state", "main", "forked_from", "made_for", "face")

ENDED = {"run.completed": "completed", "run.failed": "failed", "run.cancel": "cancelled"}
LANE_ENDED = {"lane.completed": "completed", "lane.failed": "failed", "lane.cancelled": "cancelled"}


def ts_of(event: Event) -> datetime:
    return datetime.fromisoformat(str(event["ts"]).replace("Z", "+00:00"))


def first_members(event: Event) -> list[tuple[str, str]]:
    """Who a new room holds, and with what standing: its owner (the person a harness opened
    it for, else whoever opened it), the harness that opened it for somebody else, and the
    members it was opened with."""
    actor = event["actor"]["id"]
    owner = event.get("opened_for") or actor
    members = [(owner, "owner")]
    if owner != actor:
        members.append((actor, "member"))
    members += [(member, "member") for member in event.get("members", [])]
    return members


def draws_a_line(standing: str | None) -> bool:
    """Whether a member coming or going draws a line: not a harness behind its agents."""
    return standing != BEHIND_AGENTS


def moves_behind_agents(event: Event) -> bool:
    """Whether a ``membership.replaced`` puts a harness behind its agents (docs/adr/0071):
    an agent replaced by another leaves by its own ``membership.removed``."""
    return str(event["replaced"]).startswith("hrn_")


class SpaceChanges(TypedDict, total=False):
    """What a ``space.updated`` changes of its ``rm_spaces`` row."""

    last_seq: Required[int]
    title: str
    state: str
    moved_by: str
    moved_seq: int


def space_changes(event: Event) -> SpaceChanges:
    """What a ``space.updated`` changes of its room: the title it gives, and the state with
    who moved it and when; the room's last seq in any case."""
    changes: SpaceChanges = {"last_seq": event["seq"]}
    if "title" in event:
        changes["title"] = event["title"]
    if "state" in event:
        changes["state"] = event["state"]
        changes["moved_by"] = event["actor"]["id"]
        changes["moved_seq"] = event["seq"]
    return changes


def agent_facts(event: Event) -> JsonObject:
    """The facts an ``agent.registered`` row keeps: those the event gave."""
    given: Mapping[str, JsonValue] = fields_of(event)
    return {k: given[k] for k in AGENT_FACTS if given.get(k) is not None}


class AgentChanges(TypedDict, total=False):
    """What an ``agent.updated`` changes of an agent's ``rm_participants`` row."""

    agent: JsonObject
    name: str


def agent_changes(facts: Mapping[str, JsonValue] | None, event: Event) -> AgentChanges:
    """What an ``agent.updated`` changes of an agent's row, given the facts it has: its
    name, and its state, who named it and its face merged into the facts (an empty face
    takes it off). Empty when nothing changes."""
    changes: AgentChanges = {}
    merged = dict(facts or {})
    given = fields_of(event)
    for name in ("state", "name_by"):
        value = given.get(name)
        if value is not None:
            merged[name] = value
    face = given.get("face")
    if face == "":
        merged.pop("face", None)
    elif face is not None:
        merged["face"] = face
    if merged != dict(facts or {}):
        changes["agent"] = merged
    if event.get("name") is not None:
        changes["name"] = event["name"]
    return changes


class PostRow(TypedDict):
    """A ``message.post``'s row of ``rm_messages``."""

    id: str
    workspace_id: str
    space_id: str
    seq: int
    author_id: str
    kind: str
    text: str
    reply_to: str | None
    ts: str
    card: JsonValue
    run_id: str | None


def post_row(event: Event) -> PostRow:
    """A ``message.post``'s row of ``rm_messages``: its words as the room reads them, and
    its card when its kind has one (JSON's null otherwise)."""
    kind = event.get("kind", "text")
    return {
        "id": event["message_id"],
        "workspace_id": event["workspace_id"],
        "space_id": event["space_id"],
        "seq": event["seq"],
        "author_id": event["actor"]["id"],
        "kind": kind,
        "text": words_of(dict(event)),
        "reply_to": event.get("reply_to"),
        "ts": event["ts"],
        "card": fields_of(event).get(kind) if kind in CARD_FIELDS else None,
        "run_id": event.get("run_id"),
    }


def harness_of(event: Event) -> str:
    """The harness behind an event's actor: the agent's, or the actor itself."""
    return str(event["actor"].get("harness_id") or event["actor"]["id"])


class RunState(TypedDict, total=False):
    """What a run's pause, resume or end records on its ``rm_runs`` row."""

    state: Required[str]
    ended_seq: int
    ended_at: datetime
    summary: str | JsonObject | None
    why: str | None


def run_state_changes(event: Event) -> RunState:
    """What a run's pause, resume or end records on its row: an end its state, seq and
    time, with the summary of a completion or the why of a failure or cancel."""
    kind = event["type"]
    if kind not in ENDED:
        return {"state": "paused" if kind == "run.paused" else "running"}
    values: RunState = {
        "state": ENDED[kind],
        "ended_seq": event["seq"],
        "ended_at": ts_of(event),
    }
    if kind == "run.completed":
        values["summary"] = event.get("summary")
    else:
        values["why"] = event.get("why")
    return values


def step_replaces(event: Event) -> list[str]:
    """The columns a step reported again replaces: its status and last seq always, its
    title and summary only when the report gives them."""
    return ["status", "last_seq"] + [n for n in ("title", "summary") if event.get(n) is not None]


class Usage(TypedDict):
    """A usage report's counts, as each of its scopes adds them up."""

    tokens_in: int
    tokens_out: int
    cost_usd: float
    uncosted: int


def usage_of(event: Event) -> Usage:
    """A usage report's counts: tokens, the cost (0 when unknown) and whether it was
    uncosted (a run Chips could not price counts nothing, and is counted as such)."""
    cost = event.get("cost_usd")
    return {
        "tokens_in": event["tokens_in"],
        "tokens_out": event["tokens_out"],
        "cost_usd": cost or 0,
        "uncosted": 1 if cost is None else 0,
    }


def usage_scopes(event: Event, room_stands: bool) -> list[tuple[str, str]]:
    """Where a usage report is counted: its room, unless the room was erased since (what it
    spent stays on the harness's account), its harness, and its harness's day (the UTC day
    it was logged, ``hrn_x/2026-12-03``: the harness's page draws its spend over time)."""
    harness = harness_of(event)
    scopes = [("harness", harness), ("harness_day", f"{harness}/{str(event['ts'])[:10]}")]
    if room_stands:
        scopes.insert(0, ("space", str(event["space_id"])))
    return scopes


def card_kind(event: Event) -> str:
    """``approval`` or ``question``: the card an ask or an answer is about."""
    return "approval" if event["type"] in ("approval.request", "approval.resolved") else "question"


def answer_of(event: Event) -> JsonObject:
    """What an answer records on its card: those of its fields that say the answer."""
    fields = (
        "decision",
        "edited",
        "note",
        "value",
        "values",
        "text",
        "rule",
        "autonomy",
        "default_taken",
    )
    given = fields_of(event)
    answer: JsonObject = {k: given[k] for k in fields if k in given}
    if event["type"] == "question.expired":  # ADR 0131: the card says it expired
        answer["expired"] = True
    return answer


def at_home(event: Event) -> bool:
    """A lane event is logged in both its rooms (ADR 0017); the copy at home is folded."""
    return bool(event["space_id"] == event["to_space_id"])


class LaneEnd(TypedDict):
    """What a lane's end records on its ``rm_lanes`` row."""

    state: str
    summary: str | JsonObject | None
    why: str | None
    cost_usd: float | None
    ended_by: str
    ended_seq: int
    ended_at: datetime


def lane_end_changes(event: Event) -> LaneEnd:
    """What a lane's end records: how it ended, its summary or why, its cost, who and when."""
    return {
        "state": LANE_ENDED[event["type"]],
        "summary": event.get("summary"),
        "why": event.get("why"),
        "cost_usd": event.get("cost_usd"),
        "ended_by": event["actor"]["id"],
        "ended_seq": event["seq"],
        "ended_at": ts_of(event),
    }


def erased_spaces(event: Event) -> list[str]:
    """The rooms a ``space.erased`` takes out of the read models: the room and its threads."""
    return [event["space_id"], *(event.get("threads") or [])]


def hides(event: Event) -> bool:
    """Whether a delete-for-me event hides its message (``message.shown`` brings it back)."""
    return bool(event["type"] == "message.hidden")


def pins(event: Event) -> bool:
    """Whether a pin event pins its message (``message.unpinned`` lets it go)."""
    return bool(event["type"] == "message.pinned")
