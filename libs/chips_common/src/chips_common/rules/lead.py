"""A room's lead, who of its agents is working, and the hand-off of what is nobody's turn.

docs/product/websocket.md, Who leads, and who is working: "When the last words in a room with a
lead are an agent's that reached nobody, and nobody has been working for twenty seconds,
Chips hands those words to the lead … Not the lead's own words, words that named anybody,
an answer to a person who asked that agent alone, anything the referee holds, nor the same
words twice." And: "A turn nothing has been heard from for ten minutes is not counted."

Pure: :func:`fold` takes a room's :class:`Room` and one logged event (a dict, as the log
holds it) to the next ``Room``; :func:`handoff_at`, :func:`working` and :func:`facts` read
it as of a moment. The referee folds each room with them and keeps the result; the gateway
words the note from the facts (docs/adr/0090). Agents are told apart from people by their
ids' prefixes (``agt_``, ``hrn_``): a harness is its own one agent until it has agents.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from chips_common.events.wire import ActorJson, EventJson, RestingJson, WorkingJson
from chips_common.ids import message_id_for
from chips_common.rules.lead_json import RoomRow, TellingJson, TurnRow, WordsRow
from chips_common.rules.scope import standings_of

QUIET_SECONDS = 20  # nobody working this long before the lead is handed the words
SILENT_SECONDS = 600  # a turn nothing was heard from this long is not counted

AGENT_PREFIXES = ("agt_", "hrn_")
RUN_ENDS = frozenset({"run.completed", "run.failed", "run.cancel"})
# What is heard from a turn going: anything naming its run.
HEARD = frozenset({"run.status", "step.log", "run.paused", "run.resumed", "usage"})


def is_agent(pid: str) -> bool:
    """Whether a participant speaks for itself: an agent, or a harness (its one agent)."""
    return pid.startswith(AGENT_PREFIXES)


def parse_ts(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def ts_of(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class Turn:
    """A turn going: whose, since when, when it was last heard from (and at which seq),
    and the last step it said it was on."""

    run_id: str
    agent_id: str
    since: str
    heard_at: str
    heard_seq: int
    last_step: str | None = None


@dataclass(frozen=True)
class Words:
    """The room's last words, when they are an agent's that reached nobody and are not
    one of the exceptions: the only words the lead may be handed."""

    message_id: str
    seq: int
    sender: str
    at: str


@dataclass(frozen=True)
class Room:
    """What the referee keeps of one room.

    ``agents``: the agents in it, each with the moment it was last without a turn (its
    joining, or its last turn's end). ``quiet_since``: when the room's last turn ended.
    ``asked_alone``: agents a person asked alone whose answer is still to come.
    ``told``: the turns the room was last told are going, each with its last step
    (room.working / room.idle). ``changed``: the seq of the last event that started or
    ended a turn or changed its step (what a telling of it is keyed by).
    """

    lead: str | None = None
    agents: dict[str, str] = field(default_factory=dict)
    turns: dict[str, Turn] = field(default_factory=dict)
    words: Words | None = None
    handed: str | None = None
    paused: str | None = None
    quiet_since: str | None = None
    asked_alone: frozenset[str] = frozenset()
    told: tuple[str, ...] = ()
    changed: int = 0

    # --- storage -------------------------------------------------------------------

    def to_json(self) -> RoomRow:
        return {
            "lead": self.lead,
            "agents": dict(self.agents),
            "turns": [turn_row(t) for t in self.turns.values()],
            "words": words_row(self.words) if self.words else None,
            "handed": self.handed,
            "paused": self.paused,
            "quiet_since": self.quiet_since,
            "asked_alone": sorted(self.asked_alone),
            "told": list(self.told),
            "changed": self.changed,
        }

    @classmethod
    def from_json(cls, body: RoomRow) -> Room:
        return cls(
            lead=body.get("lead"),
            agents=dict(body.get("agents") or {}),
            turns={t["run_id"]: Turn(**t) for t in body.get("turns") or ()},
            words=Words(**words) if (words := body.get("words")) else None,
            handed=body.get("handed"),
            paused=body.get("paused"),
            quiet_since=body.get("quiet_since"),
            asked_alone=frozenset(body.get("asked_alone") or ()),
            told=tuple(body.get("told") or ()),
            changed=int(body.get("changed") or 0),
        )


def _actor(event: EventJson) -> ActorJson | dict[str, str]:
    return event.get("actor") or {}


def reaches_nobody(event: EventJson) -> bool:
    """Whether a post's words reached nobody and named nobody: for no agent, with no @ of
    anybody, sent to nobody by name, and not held by the referee."""
    if event.get("kind") not in (None, "text"):
        return False  # a card asks somebody, a status or a summary is no turn's words
    return (
        event.get("addressed_to") == []
        and not event.get("mentions")
        and not event.get("to")
        and not event.get("held")
        and bool((event.get("text") or "").strip())
    )


def fold(room: Room, event: EventJson) -> Room:
    """The room once ``event`` (one of its events, in seq order) is logged."""
    kind = event.get("type")
    actor = _actor(event)
    who = str(actor.get("id", ""))
    at = str(event.get("ts", ""))
    if actor.get("kind") == "person" and room.paused == "spend":
        room = replace(room, paused=None)  # a person's act ends a pause for spend
    if kind in ("space.created", "membership.added"):
        # A harness standing behind its agents in the room (standing "agents") is them,
        # not an agent of its own (docs/adr/0070).
        came = [p for p, standing in standings_of(event).items() if standing != "agents"]
        agents = {**room.agents, **{p: at for p in came if is_agent(p)}}
        return replace(room, agents=agents)
    if kind == "membership.removed":
        gone = event["participant_id"]
        agents = {p: s for p, s in room.agents.items() if p != gone}
        turns = {r: t for r, t in room.turns.items() if t.agent_id != gone}
        changed = int(event.get("seq", 0)) if turns != room.turns else room.changed
        return replace(room, agents=agents, turns=turns, changed=changed)
    if kind == "membership.replaced":
        old, new = event["replaced"], event["participant_id"]
        agents = {p: s for p, s in room.agents.items() if p != old}
        agents[new] = room.agents.get(old, at)
        lead = new if room.lead == old else room.lead
        return replace(room, agents=agents, lead=lead)
    if kind == "space.lead_set":
        return replace(room, lead=event.get("agent_id"))
    if kind == "exchange.set":
        paused = (event.get("why") or "person") if event.get("state") == "paused" else None
        return replace(room, paused=paused)
    if kind == "lead.handed":
        return replace(room, handed=event.get("message_id"))
    if kind in ("room.working", "room.idle"):
        told = told_of(
            Turn(w["run_id"], w["agent_id"], "", "", 0, w.get("last_step"))
            for w in event.get("working") or ()
        )
        return replace(room, told=told)
    if kind == "run.started" and is_agent(who):
        seq = int(event.get("seq", 0))
        turn = Turn(event["run_id"], who, at, at, seq)
        return replace(room, turns={**room.turns, turn.run_id: turn}, changed=seq)
    if kind in RUN_ENDS:
        ended = room.turns.get(str(event.get("run_id", "")))
        if ended is None:
            return room
        turns = {r: t for r, t in room.turns.items() if r != ended.run_id}
        agents = dict(room.agents)
        if ended.agent_id in agents and not any(
            t.agent_id == ended.agent_id for t in turns.values()
        ):
            agents[ended.agent_id] = at
        changed = int(event.get("seq", 0))
        return replace(room, turns=turns, agents=agents, quiet_since=at, changed=changed)
    if kind in HEARD:
        return heard(room, event)
    if kind == "message.post":
        return said(heard(room, event), event)
    return room


def heard(room: Room, event: EventJson) -> Room:
    """Something heard from a turn going (an event naming its run)."""
    turn = room.turns.get(str(event.get("run_id", "")))
    if turn is None:
        return room
    step = turn.last_step
    if event.get("type") == "step.log":
        summary = event.get("summary")
        step = event.get("title") or (summary if isinstance(summary, str) else None) or step
    elif event.get("type") == "run.status":
        step = event.get("verb") or event.get("text") or step
    seq = int(event.get("seq", 0))
    now = replace(turn, heard_at=str(event.get("ts", "")), heard_seq=seq, last_step=step)
    changed = seq if step != turn.last_step else room.changed
    return replace(room, turns={**room.turns, turn.run_id: now}, changed=changed)


def said(room: Room, event: EventJson) -> Room:
    """A message posted: the room's last words, and who a person asked alone."""
    actor = _actor(event)
    who = str(actor.get("id", ""))
    addressed = event.get("addressed_to") or []
    if actor.get("kind") == "person":
        asked = {a for a in addressed if is_agent(a)}
        alone = room.asked_alone - asked
        if len(asked) == 1 and len(addressed) == 1:
            alone = alone | asked
        return replace(room, words=None, asked_alone=frozenset(alone))
    if not is_agent(who):
        return replace(room, words=None)
    answered = who in room.asked_alone
    room = replace(room, asked_alone=room.asked_alone - {who})
    if answered or room.paused is not None or not reaches_nobody(event):
        return replace(room, words=None)
    words = Words(message_id_for(event["id"]), int(event["seq"]), who, str(event.get("ts", "")))
    return replace(room, words=words)


def told_of(turns: Iterable[Turn]) -> tuple[str, ...]:
    """What a telling says of the turns going: each run with its last step."""
    return tuple(sorted(f"{t.run_id} {t.last_step or ''}" for t in turns))


def told_key(space_id: str, changed: int, runs: Iterable[str]) -> str:
    """The key a room's telling of who works is appended under: one per room, change and
    set of runs told of (``runs`` as :func:`told_of` gives them, or their bare ids).

    The runs are named by a digest of their sorted ids, a fixed 32 characters: a key that
    listed them grew with every run going and passed the log's 200 characters at about
    five, so the referee failed on that room until some ended.
    """
    ids = sorted({r.split(" ", 1)[0] for r in runs})
    going = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:32] if ids else "-"
    return f"room:{space_id}:{changed}:{going}"


def working(room: Room, now: datetime, silent: float = SILENT_SECONDS) -> list[Turn]:
    """The turns counted as going at ``now``: each heard from within ``silent`` seconds."""
    limit = timedelta(seconds=silent)
    return sorted(
        (t for t in room.turns.values() if now - parse_ts(t.heard_at) < limit),
        key=lambda t: (t.since, t.run_id),
    )


def forget_silent(room: Room, now: datetime, after: float) -> Room:
    """The room without the turns nothing was heard from for ``after`` seconds (a harness
    that went away mid-turn never ends it): they count for nothing any more."""
    limit = timedelta(seconds=after)
    kept = {r: t for r, t in room.turns.items() if now - parse_ts(t.heard_at) < limit}
    return room if len(kept) == len(room.turns) else replace(room, turns=kept)


def next_silence(room: Room, now: datetime, silent: float = SILENT_SECONDS) -> datetime | None:
    """When the next of the turns counted at ``now`` stops being counted."""
    going = working(room, now, silent)
    if not going:
        return None
    return min(parse_ts(t.heard_at) for t in going) + timedelta(seconds=silent)


def handoff_at(
    room: Room, quiet: float = QUIET_SECONDS, silent: float = SILENT_SECONDS
) -> datetime | None:
    """When the room's last words are to be handed to its lead, or None when they never
    are as things stand: no lead (or one no longer here), no words that reached nobody,
    the lead's own words, a paused room, or words already handed.

    It is the moment nobody has been working for ``quiet`` seconds since the words: the
    later of the words, the last turn's end and each turn going falling silent, plus
    ``quiet``.
    """
    words = room.words
    if words is None or room.lead is None or room.lead not in room.agents:
        return None
    if words.sender == room.lead or room.paused is not None or room.handed == words.message_id:
        return None
    moments = [parse_ts(words.at)]
    if room.quiet_since is not None:
        moments.append(parse_ts(room.quiet_since))
    moments += [parse_ts(t.heard_at) + timedelta(seconds=silent) for t in room.turns.values()]
    return max(moments) + timedelta(seconds=quiet)


def resting(room: Room, going: Iterable[Turn]) -> list[RestingJson]:
    """Each agent with no turn counted, and since when it has been without one."""
    busy = {t.agent_id for t in going}
    return [
        {"agent_id": pid, "since": since}
        for pid, since in sorted(room.agents.items())
        if pid not in busy
    ]


def turn_row(turn: Turn) -> TurnRow:
    return {
        "run_id": turn.run_id,
        "agent_id": turn.agent_id,
        "since": turn.since,
        "heard_at": turn.heard_at,
        "heard_seq": turn.heard_seq,
        "last_step": turn.last_step,
    }


def words_row(words: Words) -> WordsRow:
    return {
        "message_id": words.message_id,
        "seq": words.seq,
        "sender": words.sender,
        "at": words.at,
    }


def working_json(turn: Turn, silent: float) -> WorkingJson:
    """A turn going, as ``room.working`` tells it."""
    told: WorkingJson = {
        "agent_id": turn.agent_id,
        "run_id": turn.run_id,
        "since": turn.since,
        "heard_at": turn.heard_at,
        "silent_at": ts_of(parse_ts(turn.heard_at) + timedelta(seconds=silent)),
    }
    if turn.last_step:
        told["last_step"] = turn.last_step
    return told


def facts(
    room: Room, now: datetime, silent: float = SILENT_SECONDS
) -> tuple[TellingJson, tuple[str, ...]] | None:
    """The room.working or room.idle event the room calls for at ``now`` (with the runs it
    tells of), or None when the room was last told the same.

    A turn gone silent rests from the moment it fell silent; the room is idle from the
    latest of those moments and the last turn's end. A room with one agent is told
    nothing: only another agent's note says who works (docs/adr/0090).
    """
    if len(room.agents) < 2 and not room.told:
        return None
    going = working(room, now, silent)
    runs = told_of(going)
    if runs == room.told:
        return None
    if going:
        body: TellingJson = {
            "type": "room.working",
            "working": [working_json(t, silent) for t in going],
            "idle": resting(room, going),
        }
        return body, runs
    ends = [parse_ts(t.heard_at) + timedelta(seconds=silent) for t in room.turns.values()]
    if room.quiet_since is not None:
        ends.append(parse_ts(room.quiet_since))
    since = ts_of(max(ends)) if ends else ts_of(now)
    idle: list[RestingJson] = [
        {**r, "since": max(r["since"], since)} if r["agent_id"] in silenced(room) else r
        for r in resting(room, going)
    ]
    return {"type": "room.idle", "since": since, "idle": idle}, runs


def silenced(room: Room) -> set[str]:
    """Agents whose only turns are ones gone silent (still in ``turns``)."""
    return {t.agent_id for t in room.turns.values()}


# --- the note's words (docs/product/websocket.md, Who leads, and who is working) ------------------

LEAD_YOU = (
    "You lead here: you hand out the work, and what is nobody's turn goes to you. "
    "A step one agent has handed to another needs no word from you until it comes back to you."
)


def lead_sentence(taker_id: str, lead_id: str | None, name_of: dict[str, str]) -> str | None:
    """What the note says of the room's lead, to ``taker_id``."""
    if lead_id is None or lead_id not in name_of:
        return None
    if lead_id == taker_id:
        return LEAD_YOU
    return (
        f"{name_of[lead_id]} leads here: it hands out the work, and what is nobody's turn "
        "goes to it."
    )


def span(seconds: float) -> str:
    """A duration as a person says it: "less than a minute", "3 minutes", "2 hours"."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "less than a minute"
    for size, unit in ((60 * 24, "day"), (60, "hour"), (1, "minute")):
        if minutes >= size:
            count = minutes // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return "a while"  # pragma: no cover - minutes >= 1 always matches


def working_sentence(
    taker_id: str,
    told: EventJson | None,
    name_of: dict[str, str],
    at: str,
) -> str | None:
    """ "Working now: O1, 2 minutes in (last step: …). Not working: J1 for 3 minutes." for
    the agents in the room other than the taker, from the last room.working / room.idle
    before the message (``told``), as of the message's ``at``. A turn past its
    ``silent_at`` by then (nothing heard from it for ten minutes, as the referee counts) is
    not counted; an agent the room has not told of yet is left out. None when there is
    nobody to tell of."""
    if told is None:
        return None
    now = parse_ts(at)
    going: list[str] = []
    rest: list[tuple[str, str]] = []
    for w in told.get("working") or ():
        pid = w["agent_id"]
        if pid == taker_id or pid not in name_of:
            continue
        fell_silent = parse_ts(w["silent_at"])
        if now >= fell_silent:
            rest.append((pid, ts_of(fell_silent)))
            continue
        step = f" (last step: {w['last_step']})" if w.get("last_step") else ""
        going.append(
            f"{name_of[pid]}, {span((now - parse_ts(w['since'])).total_seconds())} in{step}"
        )
    for r in told.get("idle") or ():
        if r["agent_id"] != taker_id and r["agent_id"] in name_of:
            rest.append((r["agent_id"], r["since"]))
    said: list[str] = []
    if going:
        said.append("Working now: " + "; ".join(going) + ".")
    if rest:
        idle = [
            f"{name_of[pid]} for {span(max(0.0, (now - parse_ts(since)).total_seconds()))}"
            for pid, since in sorted(rest, key=lambda r: name_of[r[0]].casefold())
        ]
        said.append("Not working: " + ", ".join(idle) + ".")
    return " ".join(said) or None


def handed_opening(sender: str, quiet_seconds: int) -> str:
    """The opening of the lead's note on words handed to it (docs/product/websocket.md)."""
    return (
        f"Nobody has this turn: {sender} said it with no @, and nobody here has worked for "
        f"{quiet_seconds} seconds since. As the lead, see that it is done: take it, or hand "
        "it on with an @."
    )
