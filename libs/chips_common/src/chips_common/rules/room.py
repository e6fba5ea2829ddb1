"""Who is in the room, and the note Chips words for each harness taking a turn.

docs/product/websocket.md, Who is in the room: members with the handle that reaches each, people
first and then harnesses, each group by name; a note per taker, which opens with what is
news to it (its joining, who joined since its last turn, why the message is its turn,
lines left out of its context) and ends with the room's rules. Chips words the note itself
so that every harness tells its model the same thing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from chips_common.events.wire import ActorJson, EventJson, RoomJson, RoomMemberJson, SpeakerJson
from chips_common.rules.handles import Member, display_handle, handles_of, resolve_mentions
from chips_common.rules.lead import lead_sentence, working_sentence
from chips_common.rules.scope import opened_with

RULE_READ = "Everyone here reads what you write."
RULE_ACT = (
    "Everyone here reads what you write; only those you @-mention act on it. To hand work "
    "to an agent or ask it something, @-mention it."
)
RULE_PASS = (
    "If a message asks nothing of you now, as when it names a step that is yours later, "
    "answer NO_REPLY and nothing else: the space shows nothing, and nobody needs to hear "
    "that you are ready or waiting."
)


@dataclass(frozen=True)
class Joining:
    """Somebody who came into the room: who, who added them (None: they came themselves)
    and when (the event's ``ts``)."""

    member: Member
    added_by: str | None
    at: str


@dataclass(frozen=True)
class TurnNews:
    """What is news to the harness taking a turn, as the note opens with it.

    ``joined``: the taker joined a room already talking and has had no turn there yet.
    ``new``: who joined since its last turn. ``reach``: why the message is its turn when
    that is not an @ of it ("all": a person chose every agent; "no_at": it was chosen
    without an @). ``kept``: how many lines its context kept, when older ones were left out.
    """

    sender: str = ""
    at: str = ""
    joined: Joining | None = None
    new: tuple[Joining, ...] = field(default_factory=tuple)
    reach: Literal["all", "no_at"] | None = None
    kept: int | None = None


def ordered(members: Sequence[Member]) -> list[Member]:
    """People first, then harnesses, each by name (case aside)."""
    return sorted(members, key=lambda m: (m.kind != "person", m.name.casefold(), m.id))


def harness_shown(member: Member) -> str | None:
    """The name of the harness an agent runs on, as the room shows it: only for an agent
    whose name is not its harness's own (docs/product/websocket.md, Who is in the room)."""
    if member.kind != "agent" or not member.harness:
        return None
    if handles_of(member.name) == handles_of(member.harness):
        return None
    return member.harness


@dataclass(frozen=True)
class Led:
    """Who leads the room (None: nobody) and the last room.working / room.idle before the
    message (None: never told), as of the message at ``at`` (docs/adr/0090)."""

    lead: str | None = None
    told: EventJson | None = None
    at: str = ""


def room_members(members: Sequence[Member], lead: str | None = None) -> list[RoomMemberJson]:
    out = []
    for member in ordered(members):
        entry: RoomMemberJson = {
            "participant_id": member.id,
            "kind": member.kind,
            "name": member.name,
        }
        if (harness := harness_shown(member)) is not None:
            entry["harness"] = harness
        if member.standing:
            entry["standing"] = member.standing
        handle = display_handle(member.name)
        if handle:
            entry["handle"] = handle
        if lead is not None and member.id == lead:
            entry["lead"] = True
        out.append(entry)
    return out


def rules_for(taker_id: str, members: Sequence[Member]) -> str:
    """How the room works for this taker: shorter when no other harness is here."""
    others = [m for m in members if m.kind != "person" and m.id != taker_id]
    if not others:
        return RULE_READ
    return f"{RULE_ACT} {RULE_PASS}"


def describe(member: Member, *, you: bool) -> str:
    harness = harness_shown(member)
    kind = "person" if member.kind == "person" else f"{harness} agent" if harness else "agent"
    handle = display_handle(member.name)
    said = f"{member.name} ({kind}, {handle})" if handle else f"{member.name} ({kind})"
    return f"you, {said}" if you else said


def listed(names: Sequence[str]) -> str:
    if len(names) > 2:
        return ", ".join(names[:-1]) + ", and " + names[-1]
    return " and ".join(names) if names else "nobody else"


def ago(then: str, now: str) -> str:
    """How long before ``now`` ``then`` was, in the words a person would use."""
    try:
        seconds = (parse_ts(now) - parse_ts(then)).total_seconds()
    except ValueError:
        return "a while ago"
    minutes = int(seconds // 60)
    if minutes < 1:
        return "less than a minute ago"
    for size, unit in ((60 * 24, "day"), (60, "hour"), (1, "minute")):
        if minutes >= size:
            count = minutes // size
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "a while ago"  # pragma: no cover - minutes >= 1 always matches


def parse_ts(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def news_of(news: TurnNews) -> list[str]:
    """The sentences a note opens with: what is news to the taker, in the product's words."""
    said: list[str] = []
    if news.joined is not None:
        by = f", added by {news.joined.added_by}" if news.joined.added_by else ""
        said.append(f"You joined this space {ago(news.joined.at, news.at)}{by}.")
    elif news.new:
        came = [
            describe(j.member, you=False) + (f", added by {j.added_by}" if j.added_by else "")
            for j in news.new
        ]
        said.append("New since your last turn: " + "; ".join(came) + ".")
    if news.reach == "all":
        said.append(
            f"{news.sender} sent this message to every agent here, so each of you has it: "
            "answer it yourself, and don\u2019t pass it on with an @."
        )
    elif news.reach == "no_at":
        said.append(f"{news.sender} sent this message to you without an @: it is yours to answer.")
    if news.kept is not None:
        said.append(
            f"Only the newest {news.kept} lines of what was said here since your last turn "
            "come with this one: older lines were left out."
        )
    return said


def note_for(
    taker_id: str,
    members: Sequence[Member],
    news: TurnNews | None = None,
    led: Led | None = None,
) -> str:
    """The note for one taker: what is news to it, who is here (the taker named as you,
    last), who leads and who is working (``led``), then the rules."""
    others = [describe(m, you=False) for m in ordered(members) if m.id != taker_id]
    taker = next((m for m in members if m.id == taker_id), None)
    names = [*others, describe(taker, you=True)] if taker else others
    said = [f"In this space: {listed(names)}."]
    if led is not None:
        agents = {m.id: m.name for m in members if m.kind != "person"}
        said += [
            s
            for s in (
                lead_sentence(taker_id, led.lead, agents),
                working_sentence(taker_id, led.told, agents, led.at) if led.at else None,
            )
            if s
        ]
    opening = news_of(news) if news is not None else []
    return " ".join([*opening, *said, rules_for(taker_id, members)])


def reach_of(
    event: EventJson, taker_id: str, members: Sequence[Member]
) -> Literal["all", "no_at"] | None:
    """Why a message is this taker's turn, when the note must say so: only beside other
    agents, since alone in a room every message is the harness's (docs/product/websocket.md)."""
    if not any(m.kind != "person" and m.id != taker_id for m in members):
        return None
    actor = event.get("actor") or {}
    _, said_all = resolve_mentions(event.get("text") or "", members)
    chose_all = said_all or "everyone" in (event.get("to") or ())
    if actor.get("kind") == "person" and chose_all:
        return "all"
    if taker_id not in (event.get("mentions") or ()):
        return "no_at"
    return None


def speaker(event: EventJson, members: Sequence[Member]) -> SpeakerJson:
    """Who said a message, with their standing in the room (spec: "who said it, with their
    role in the room")."""
    actor = event.get("actor") or {}
    found = next((m for m in members if m.id == actor.get("id")), None)
    if found is None:
        return {"id": actor.get("id", ""), "kind": actor.get("kind", "")}
    said: SpeakerJson = {"id": found.id, "kind": found.kind, "name": found.name}
    if found.standing:
        said["standing"] = found.standing
    return said


def room_for(
    takers: Sequence[str],
    members: Sequence[Member],
    news: dict[str, TurnNews] | None = None,
    led: Led | None = None,
) -> RoomJson:
    """The ``room`` a message.new carries for the harnesses taking the turn."""
    lead = led.lead if led is not None else None
    return {
        "members": room_members(members, lead),
        "notes": {t: note_for(t, members, (news or {}).get(t), led) for t in takers},
        "rules": {t: rules_for(t, members) for t in takers},
    }


JOINING = ("space.created", "membership.added")


def joined_by(event: EventJson) -> list[str]:
    """Who an event brings into its room."""
    if event.get("type") == "membership.added":
        return [event["participant_id"]]
    if event.get("type") == "space.created":
        return opened_with(event)
    return []


def news_for(
    taker_id: str,
    event: EventJson,
    members: Sequence[Member],
    joinings: Sequence[EventJson],
    since: int,
    talked_before: bool,
    name_of: Callable[[str], str],
    kept: int | None,
) -> TurnNews:
    """What is news to ``taker_id`` taking its turn on ``event``.

    ``joinings`` are the room's events that brought somebody in, from ``since`` (where the
    taker's context starts: its joining, or where its last turn began) up to the message;
    ``talked_before`` says whether anything was said in the room before ``since``.
    """
    sender = name_of((event.get("actor") or {}).get("id", ""))
    by_id = {m.id: m for m in members}
    joined: Joining | None = None
    new: list[Joining] = []
    for came in joinings:
        adder = (came.get("actor") or {}).get("id", "")
        for pid in joined_by(came):
            who = by_id.get(pid)
            if who is None:
                continue  # gone again by the message
            joining = Joining(who, name_of(adder) if adder != pid else None, came.get("ts", ""))
            if pid == taker_id and came["seq"] == since:
                joined = joining if talked_before else None
            elif pid != taker_id and came["seq"] > since:
                new.append(joining)
    return TurnNews(
        sender=sender,
        at=event.get("ts", ""),
        joined=joined,
        new=() if joined is not None or since_is_joining(joinings, since, taker_id) else tuple(new),
        reach=reach_of(event, taker_id, members),
        kept=kept,
    )


class Comebacks:
    """Which ``membership.added`` of a room bring back an agent its archive released, read
    from the room's events in seq order (docs/adr/0154).

    An archive releases every agent in the room (``agent.released``, reason ``archived``,
    then its ``membership.removed``) and the unarchive brings each back: the agent was
    never out of the room as far as its harness can tell (a harness behind only its given
    agent stays in the archived room), so such a comeback is not a joining: a context does
    not start there, nor is it news. The log path reads the same from ``membership_log``
    (``LogReader.context_start``): the agent's last move in the room before it was its
    removal right after its release by the archive.
    """

    def __init__(self) -> None:
        self.released: str | None = None  # the agent the event just folded released
        self.out: set[str] = set()  # agents the archive took out, not yet back

    def fold(self, event: EventJson) -> bool:
        """Fold one event of the room; whether it is a comeback."""
        kind = event.get("type")
        released, self.released = self.released, None
        if kind == "agent.released":
            if event.get("reason") == "archived":
                self.released = event.get("agent_id")
        elif kind == "membership.removed":
            pid = event.get("participant_id")
            if pid is not None and pid == released:
                self.out.add(pid)
            else:
                self.out.discard(str(pid))
        elif kind == "membership.added" and event.get("participant_id") in self.out:
            self.out.discard(event["participant_id"])
            return True
        return False


def credited(
    joinings: Sequence[EventJson], owner_of: Callable[[str], str | None]
) -> list[EventJson]:
    """A room's joinings (oldest first, from its first), each agent Chips gave a harness
    credited to whoever brought its harness in (docs/adr/0154).

    Chips logs a given agent's ``membership.added`` as its harness's act, right after what
    brought the harness in as itself (a person adding it, a room opened with it, the
    upgrade that gave harnesses their agents): the news says who added the harness, and
    that the agent came itself where the harness did. An agent whose harness stood in the
    room only behind its agents (standing ``agents``) is not such a gift: it is left as
    logged.
    """
    brought: dict[str, tuple[ActorJson, bool]] = {}  # pid: (who brought it, as itself)
    out: list[EventJson] = []
    for came in joinings:
        actor: ActorJson = came["actor"]
        if came.get("type") == "membership.added":
            pid = came["participant_id"]
            harness = owner_of(pid)
            by = brought.get(harness) if harness is not None else None
            if by is not None and by[1] and actor.get("id") == harness:
                adder = by[0]
                if adder.get("id") == harness:  # it came itself: so did its agent
                    adder = {"id": pid, "kind": "agent", "harness_id": harness}
                came = {**came, "actor": adder}
            brought[pid] = (actor, came.get("standing") != "agents")
        else:
            for pid in joined_by(came):
                brought[pid] = (actor, True)
        out.append(came)
    return out


def since_is_joining(joinings: Sequence[EventJson], since: int, taker_id: str) -> bool:
    """Whether the taker's context starts at its own joining (it has had no turn since)."""
    return any(e["seq"] == since and taker_id in joined_by(e) for e in joinings)
