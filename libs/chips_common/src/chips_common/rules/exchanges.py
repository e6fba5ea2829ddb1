"""The referee's counting of what agents say to each other (docs/product/websocket.md, ADR 0083).

Chips counts the messages agents send agents in a room since a person last did anything
there, or an agent last made something new there (a file new to the room, a question to a
person, an approval request). The workspace's settings say when it steps in: from half the
stop each counted message carries ``exchange`` (its facts and a note for the turn), at the
stop or on a circle the note says to stop, and past the hold — or while the room is paused —
the message is held: logged for nobody.

Everything here is pure: a fold over what happened in one room (:func:`step`) and the
verdict on each counted message. The eventlog runs it at the door, where it decides what is
logged (``held``, ``addressed_to``); the gateway and the referee read the same verdicts back
from what was logged. Every rule about "agents" is written over :func:`speaks_for_itself`,
so a harness counts before agents exist and an agent counts the moment it does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal, TypedDict

from chips_common.events.base import JsonObject
from chips_common.events.wire import EventJson

STOP = 16
HOLD = 48
# Half the stop is where notes begin; a workspace with no stop hears them from here.
NO_STOP_HALF = 8
# How many counted messages the circle check looks back over (a circle is short).
WINDOW = 24

SETTING_MIN = 2
SETTING_MAX = 1000

SPEAKERS = frozenset({"harness", "agent"})


def speaks_for_itself(kind: str) -> bool:
    """Whether a participant of this kind is an agent, for the referee's counting.

    Before agents exist a harness is its own one agent, so both kinds count (ADR 0070).
    """
    return kind in SPEAKERS


@dataclass(frozen=True)
class ExchangeSettings:
    """A workspace's referee: the stop, the hold (None: never) and whether circles count."""

    stop: int | None = STOP
    hold: int | None = HOLD
    circles: bool = True

    @property
    def half(self) -> int:
        """Where notes begin: half the stop, or eight with no stop."""
        if self.stop is None:
            return NO_STOP_HALF
        return max(1, self.stop // 2)

    @classmethod
    def from_body(cls, body: dict[str, object] | None) -> ExchangeSettings:
        """The settings a logged ``workspace.referee_set`` says (absent keys keep defaults,
        ``"never"`` is no stop or no hold)."""
        if not body:
            return cls()
        stop = body.get("stop", STOP)
        hold = body.get("hold", HOLD)
        circles = body.get("circles", True)
        return cls(
            stop=stop if isinstance(stop, int) else None,
            hold=hold if isinstance(hold, int) else None,
            circles=bool(circles),
        )


# What the fold is told, one room at a time.


@dataclass(frozen=True)
class Said:
    """A message posted in the room, as the counter sees it.

    ``to_agents`` is whether its addressees (as the door decided them, before any hold)
    include an agent other than the sender; ``new_files`` and ``old_files`` count the files
    it posts whose bytes are new to the room and already there; ``asks_person`` is a
    question or approval card put to a person.
    """

    sender: str
    sender_kind: str
    to_agents: bool
    words: str = ""
    new_files: int = 0
    old_files: int = 0
    asks_person: bool = False


@dataclass(frozen=True)
class PersonActed:
    """Anything a person did in the room: a message, a reaction, an edit, Let them carry on."""


@dataclass(frozen=True)
class AgentMadeNew:
    """An agent made something new in the room outside a message: a question to a person
    (``question.ask``) or an approval request (``approval.request``)."""


@dataclass(frozen=True)
class Paused:
    """The room's agents were paused: by a person, or by the system at the spend ceiling."""

    why: Literal["person", "spend"] = "person"


@dataclass(frozen=True)
class Resumed:
    """A person let the room's agents carry on (``exchange.set`` running)."""


Happened = Said | PersonActed | AgentMadeNew | Paused | Resumed


@dataclass(frozen=True)
class Turn:
    """One counted message, as the circle check remembers it."""

    sender: str
    words: str  # normalised (see :func:`gist`)


@dataclass(frozen=True)
class Exchange:
    """A room's exchange: the count since the last reset, the recent counted messages, and
    whether the room is paused (and why)."""

    count: int = 0
    recent: tuple[Turn, ...] = ()
    paused: Literal["person", "spend"] | None = None


@dataclass(frozen=True)
class Verdict:
    """What one counted message gets: its count, whether it goes in a circle, whether it is
    held, and the note its ``exchange`` carries (None when it carries none)."""

    count: int
    circle: bool = False
    held: bool = False
    stop: bool = False
    note: str | None = None
    facts: dict[str, object] = field(default_factory=dict)


_HANDLE = re.compile(r"@[\w.\-]+")
_NOT_WORD = re.compile(r"[^\w]+")


def gist(words: str) -> str:
    """Words reduced to what they say: no @handles, no case, no punctuation or spacing.

    "Thanks @Ledger!" and "thanks, @Scout" say the same thing.
    """
    without = _HANDLE.sub(" ", words.casefold())
    return " ".join(w for w in _NOT_WORD.split(without) if w and w != "_")


def makes_new(said: Said) -> bool:
    """An agent's message that makes something new: a file new to the room, or a question
    or approval put to a person."""
    return speaks_for_itself(said.sender_kind) and (said.new_files > 0 or said.asks_person)


def counted(said: Said) -> bool:
    """A message an agent sends an agent (that makes nothing new)."""
    return speaks_for_itself(said.sender_kind) and said.to_agents and not makes_new(said)


def is_circle(recent: tuple[Turn, ...], said: Said) -> bool:
    """Whether a counted message goes in a circle, given the counted messages before it.

    Two ways: the same two or three agents taking turns, and this sender saying again what
    it said before (since that earlier saying, two or three senders spoke, this one
    included); or a post of files all already in the room with nothing new beside them (no
    words, or words said before in this exchange). Taking turns alone is not a circle.
    """
    words = gist(said.words)
    repost = said.old_files > 0 and said.new_files == 0
    if repost and (not words or any(t.words == words for t in recent)):
        return True
    if not words:
        return False
    for back, turn in enumerate(reversed(recent)):
        if turn.sender == said.sender and turn.words == words:
            since = recent[len(recent) - 1 - back :]
            senders = {t.sender for t in since} | {said.sender}
            if 2 <= len(senders) <= 3:
                return True
    return False


def step(
    ex: Exchange, happened: Happened, settings: ExchangeSettings
) -> tuple[Exchange, Verdict | None]:
    """Fold one thing that happened in the room; a counted message also gets its verdict."""
    if isinstance(happened, PersonActed):
        # A person's act starts the count again; it ends a spend pause (a new job), and a
        # person's own pause lasts until they let the agents carry on (ADR 0083).
        return Exchange(paused="person" if ex.paused == "person" else None), None
    if isinstance(happened, AgentMadeNew):
        return Exchange(paused=ex.paused), None
    if isinstance(happened, Paused):
        # A person's pause outranks the ceiling's: it outlives the next job.
        paused: Literal["person", "spend"] = (
            "person" if "person" in (ex.paused, happened.why) else "spend"
        )
        return replace(ex, paused=paused), None
    if isinstance(happened, Resumed):
        return Exchange(), None
    said = happened
    if said.sender_kind == "person":
        return step(ex, PersonActed(), settings)
    if not speaks_for_itself(said.sender_kind):  # the system's or an operator's words
        return ex, None
    if makes_new(said):
        return Exchange(paused=ex.paused), None
    if not counted(said):
        return ex, None
    count = ex.count + 1
    circle = settings.circles and is_circle(ex.recent, said)
    verdict = judge(count, circle, ex.paused is not None, settings)
    recent = (*ex.recent, Turn(said.sender, gist(said.words)))[-WINDOW:]
    return Exchange(count=count, recent=recent, paused=ex.paused), verdict


def judge(count: int, circle: bool, paused: bool, settings: ExchangeSettings) -> Verdict:
    """What the ``count``-th counted message gets under ``settings``."""
    held = paused or (settings.hold is not None and count > settings.hold)
    at_stop = circle or (settings.stop is not None and count >= settings.stop)
    noted = circle or count >= settings.half
    facts: dict[str, object] = {"count": count}
    if settings.stop is not None:
        facts["stop"] = settings.stop
    if settings.hold is not None:
        facts["allowance"] = settings.hold
    if circle:
        facts["circle"] = True
    if held:
        facts["held"] = True
    note = note_for(count, circle, settings) if noted else None
    return Verdict(count=count, circle=circle, held=held, stop=at_stop, note=note, facts=facts)


def note_for(count: int, circle: bool, settings: ExchangeSettings) -> str:
    """Chips's note at the top of a turn an agent's message gives, from half the stop."""
    said = f"Agents here have sent each other {count} message{'s' if count != 1 else ''}"
    said += " since a person last acted in this space or an agent made something new."
    stop_now = (
        " Stop now: tell the person what is done and what is blocked, and ask nothing more"
        " of the other agents."
    )
    if circle:
        return (
            "You are going in a circle: this says again what was said here before."
            + stop_now
            + " "
            + said
        )
    if settings.stop is not None and count >= settings.stop:
        return said + stop_now
    tail = []
    if settings.stop is not None:
        tail.append(
            f"At {settings.stop} Chips asks you to stop and tell the person what is done"
            " and what is blocked."
        )
    if settings.hold is not None:
        tail.append(
            f"Past {settings.hold} what an agent says to an agent is held until a person acts."
        )
    if not tail:
        tail.append("Keep it short, and come back to the person when you can.")
    return said + " " + " ".join(tail)


def exchange_of(verdict: Verdict) -> dict[str, object] | None:
    """The ``exchange`` a message.new carries (facts and note), or None when it carries none."""
    if verdict.note is None:
        return None
    return {**verdict.facts, "note": verdict.note}


def ack_exchange(verdict: Verdict) -> dict[str, object]:
    """The ``exchange`` a held message's sender is told on its ack: count and allowance."""
    out: dict[str, object] = {"count": verdict.count}
    if "allowance" in verdict.facts:
        out["allowance"] = verdict.facts["allowance"]
    return out


class ExchangeJson(TypedDict, total=False):
    """A room's exchange as the door state stores it (a row written before a field was
    kept lacks it)."""

    count: int
    recent: list[list[str]]
    paused: str | None


def exchange_json(ex: Exchange) -> ExchangeJson:
    """A room's exchange as the door state stores it."""
    return {
        "count": ex.count,
        "recent": [[t.sender, t.words] for t in ex.recent],
        "paused": ex.paused,
    }


def exchange_from_json(body: ExchangeJson) -> Exchange:
    paused = body.get("paused")
    return Exchange(
        count=int(body.get("count", 0)),
        recent=tuple(Turn(str(s), str(w)) for s, w in body.get("recent", [])),
        paused="person" if paused == "person" else "spend" if paused == "spend" else None,
    )


class SettingsJson(TypedDict):
    """The referee's settings as JSON: a count, or ``"never"``."""

    stop: int | Literal["never"]
    hold: int | Literal["never"]
    circles: bool


def settings_json(settings: ExchangeSettings) -> SettingsJson:
    return {
        "stop": settings.stop if settings.stop is not None else "never",
        "hold": settings.hold if settings.hold is not None else "never",
        "circles": settings.circles,
    }


class HeldAck(TypedDict, total=False):
    """What a sender's ack adds for a post the referee held."""

    held: bool
    exchange: JsonObject


def held_ack(logged: EventJson | None) -> HeldAck:
    """What a sender's ack adds for a post the referee held: ``held`` and ``exchange``
    ``{count, allowance}`` (allowance absent in a workspace with no hold)."""
    if not logged or not logged.get("held"):
        return {}
    facts = logged.get("exchange") or {}
    exchange: JsonObject = {"count": facts.get("count")}
    if facts.get("allowance") is not None:
        exchange["allowance"] = facts["allowance"]
    return {"held": True, "exchange": exchange}
