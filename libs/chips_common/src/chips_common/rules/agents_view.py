"""The view a harness that has not declared ``agents`` is shown (docs/adr/0070, 0079).

docs/product/websocket.md, Saying you speak agents: until a harness declares the capability
``agents``, Chips shows it the view it knew before agents, on the socket and over HTTP
alike. Its own agents are its own id wherever an id is written, any other agent is a
participant of kind ``harness``, and it is never sent the agent events nor
``message.held``. So a harness written before agents goes on working unchanged.

Chips gives a harness with no agents of its own one agent per room, declared ``agents``
or not (docs/adr/0146, 0154). A given agent is the harness in that room as far as a
harness before agents can tell: its own given agents read as its own id, and so does
another harness's given agent read as that harness's id (a participant of kind
``harness``, as the room held before), so an old harness sees nothing change.

This module is pure: one function over an event (or any answer shaped like one), given
the harness and the agents it is to be shown as somebody else (its own, as itself;
others' given ones, as their harness), so the gateway applies the same translation to a
live frame, a replayed one and an HTTP read. A socket may pass what it made of its rooms'
lines before (:class:`Walked`, memory only, no I/O) so that a line is translated once.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

import orjson

from chips_common.events.agents import AGENT_EVENTS
from chips_common.events.base import JsonObject
from chips_common.events.wire import DeliveredJson
from chips_common.rules.handles import display_handle

# An event as a socket sends it, or a read's answer over HTTP (any JSON object).
Seen = TypeVar("Seen", DeliveredJson, JsonObject)

# What a pre-agents harness is never sent (docs/product/websocket.md, Saying you speak agents).
NEVER_SENT = frozenset(AGENT_EVENTS)
# Keys that name the harness behind an agent: a pre-agents harness knows no such thing.
HARNESS_OF_AGENT = ("harness_id", "harness")
# The key of an agent Chips gave a harness for a room: ``chips:<space id>`` (docs/adr/0146).
GIVEN_KEY = "chips:"
# An agent's id as JSON writes it, to find many stand-ins in an encoding at once.
AGENT_ID = re.compile(rb'"(agt_[^"\\]*)"')
# Past this many stand-ins, the encoding is searched once for agent ids, not once per id.
FEW = 8
# Keys naming who a mapping is about, whose ``name`` and ``handle`` go with it.
WHO = ("participant_id", "id")
# How many levels down the walk asks ``untouched`` of each mapping and list before walking
# it: an event's room, its context, and each of the context's lines.
SKIM = 3

# The agents a harness before agents is shown as somebody else: its own (as itself) as a
# set of ids, or a mapping of agent id to the id shown for it (others' given agents, as
# their harness).
StandIns = Collection[str] | Mapping[str, str]


def stand_ins(
    harness_id: str, own: Collection[str], given: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Each agent a harness before agents is shown as somebody else, and who: its own
    agents as itself, another harness's given agent as that harness (docs/adr/0154)."""
    shown = {agent: owner for agent, owner in (given or {}).items() if owner != harness_id}
    shown.update(dict.fromkeys(own, harness_id))
    return shown


def own_of(view: Mapping[str, str] | None, harness_id: str) -> frozenset[str]:
    """The harness's own agents among its stand-ins."""
    return frozenset(a for a, who in (view or {}).items() if who == harness_id)


def _as_mapping(harness_id: str, ids: StandIns) -> Mapping[str, str]:
    if isinstance(ids, Mapping):
        return ids
    return dict.fromkeys(ids, harness_id)


class Walked:
    """What the walk made of a room's context lines for one view, by the lines' identity.

    A room's lines are the very same objects in every delivery of the room (the gateway's
    window makes each once, and an edit or an attach makes a new one), and a harness's
    line is most often addressed to an agent it is shown as itself: each delivery walked
    every line again, most of a harness socket's CPU per message. One of these per socket
    keeps each line's translation while the view (the harness, its stand-ins and their
    names) stays as it was, at most ``LIMIT`` of them.
    """

    __slots__ = ("made", "view")
    LIMIT = 512

    def __init__(self) -> None:
        self.view: tuple[str, dict[str, str], dict[str, str]] | None = None
        self.made: dict[int, tuple[Any, Any]] = {}

    def of(
        self, harness_id: str, own: Mapping[str, str], names: Mapping[str, str]
    ) -> dict[int, tuple[Any, Any]]:
        """The translations made under this view (none, when the view changed)."""
        view = self.view
        if view is None or view[0] != harness_id or view[1] != own or view[2] != names:
            self.view = (harness_id, dict(own), dict(names))
            self.made = {}
        return self.made


def as_seen_by(
    event: Seen,
    harness_id: str,
    own_agent_ids: StandIns,
    encoded: str | bytes | None = None,
    names: Mapping[str, str] | None = None,
    walked: Walked | None = None,
) -> Seen | None:
    """``event`` as a harness that has not declared ``agents`` sees it, or None when it is
    not sent it at all.

    ``own_agent_ids``: its own agents (shown as ``harness_id``), or a mapping of each agent
    it is shown as somebody else to that one's id (:func:`stand_ins`). ``names``: the
    name of each id an agent is shown as (the harness's own, another harness's): where an
    agent's id is shown as its harness's, so are its name and handle, in a member, a
    speaker, a line's author, and in the notes a room carries (docs/adr/0154).

    A harness stands behind its agents in a room with a row of its own (standing
    ``agents``); so an agent of its own coming or going is not news to it, while that row
    coming or going is, and reads as an ordinary membership (standing ``member``; its leave
    without the standing), as does another harness's (a standing the harness never knew).

    The event is returned unchanged (the very object) when nothing in it differs, so a
    frame encoded once for every socket stays shared. ``walked``: the socket's
    translations of its rooms' lines, kept between events (:class:`Walked`).
    """
    if hidden_from(event, own_agent_ids):
        return None
    given = event
    if event.get("standing") == "agents":
        if event.get("type") == "membership.added":
            event = {**event, "standing": "member"}
        elif event.get("type") == "membership.removed":
            event = {**event}
            del event["standing"]
    own = _as_mapping(harness_id, own_agent_ids)
    if untouched(event, own, encoded if event is given else None):
        return event
    names = names or {}
    memo = walked.of(harness_id, own, names) if walked is not None else None
    seen: Seen = _translate(event, harness_id, own, names, SKIM, memo)
    return seen


def untouched(
    event: Mapping[str, object] | list[Any],
    own: Collection[str],
    encoded: str | bytes | None = None,
) -> bool:
    """Whether the translation would leave ``event`` as it is, decided on its JSON.

    The walk below changes a value only where a string is an own agent's id (as a key or a
    value) or a mapping's ``kind`` is ``"agent"``; in JSON each of those is a quoted string
    of its own, so an event whose encoding holds neither ``"agent"`` nor any ``"<own id>"``
    comes out the very same object. Encoding is one call in C; the walk is Python over
    every value, and a harness's event carries its room's recent lines (most of the
    gateway's time per harness socket went on it). Anything JSON cannot say is walked.

    ``encoded``: JSON already made of the event, or of a frame that holds it and only
    ``"frame"`` and ``"event"`` besides (the feed's encoding, shared by every socket), so
    that each socket does not encode the same event again.
    """
    if isinstance(encoded, str):
        data = encoded.encode()
    elif encoded is not None:
        data = encoded
    else:
        try:
            data = orjson.dumps(event)
        except TypeError:
            return False
    if b'"agent"' in data:
        return False
    if len(own) > FEW:
        return not any(m.decode() in own for m in AGENT_ID.findall(data))
    return not any(b'"' + agent.encode() + b'"' in data for agent in own)


def hidden_from(event: Mapping[str, object], own_agent_ids: Collection[str]) -> bool:
    """Whether a harness that has not declared ``agents`` is not sent ``event`` at all."""
    kind = event.get("type")
    if kind in NEVER_SENT:
        return True
    return (
        kind in ("membership.added", "membership.removed")
        and event.get("participant_id") in own_agent_ids
    )


def _translate(
    value: Any,
    harness_id: str,
    own: Mapping[str, str],
    names: Mapping[str, str],
    skim: int = 0,
    memo: dict[int, tuple[Any, Any]] | None = None,
) -> Any:
    """``value`` with own agents' ids made the harness's (others' given agents their
    harness's), and agents made harnesses, with the names ``names`` gives them.

    Returns the same object when nothing changed. ``skim``: for that many levels, a
    mapping or list inside is first asked :func:`untouched` and kept as it is when so,
    not walked: a harness's event with a given agent in its room's members is walked
    there, not through every line of its context. ``memo``: the translations of lines
    (mappings with a ``seq``) made before under the same view, by identity.
    """
    if isinstance(value, str):
        return own.get(value, value)
    if isinstance(value, list):
        kept = [item for item in value if not _stand_in_moved(item, own)]
        items = [_walk(item, harness_id, own, names, skim, memo) for item in kept]
        if len(kept) == len(value) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return _dedupe(items)
    if isinstance(value, dict):
        changed = False
        out: JsonObject = {}
        agent_like = value.get("kind") == "agent"
        renamed = _renamed(value, own, names)
        notes = _notes_renamed(value, own, names)
        for k, v in value.items():
            if agent_like and k in HARNESS_OF_AGENT:
                changed = True
                continue
            new_key = own.get(k, k)
            if agent_like and k == "kind":
                new_v: Any = "harness"
            elif renamed is not None and k == "name":
                new_v = renamed
            elif renamed is not None and k == "handle":
                new_v = display_handle(renamed) or v
            elif notes is not None and k == "notes":
                new_v = _translate(notes, harness_id, own, names)
            else:
                new_v = _walk(v, harness_id, own, names, skim, memo)
            if new_key is not k or new_v is not v:
                changed = True
            if new_key in out:  # two own agents keyed alike: the first one stands
                changed = True
                continue
            out[new_key] = new_v
        return out if changed else value
    return value


def _walk(
    value: Any,
    harness_id: str,
    own: Mapping[str, str],
    names: Mapping[str, str],
    skim: int,
    memo: dict[int, tuple[Any, Any]] | None,
) -> Any:
    """A value inside what ``_translate`` walks: kept as it is when skimming finds it
    untouched, else walked (skimming one level less). A line (a mapping with a ``seq``)
    is translated once per view when there is a ``memo``, and held there with its
    translation, so that its identity is not another's while it is remembered."""
    line = memo is not None and type(value) is dict and "seq" in value
    if line:
        assert memo is not None
        made = memo.get(id(value))
        if made is not None and made[0] is value:
            return made[1]
    if skim and isinstance(value, (dict, list)) and untouched(value, own):
        translated = value
    else:
        translated = _translate(value, harness_id, own, names, skim - 1 if skim else 0, memo)
    if line:
        assert memo is not None
        if len(memo) >= Walked.LIMIT:
            memo.clear()
        memo[id(value)] = (value, translated)
    return translated


def _stand_in_moved(item: object, own: Mapping[str, str]) -> bool:
    """Whether ``item`` is a context line of an agent shown as somebody else joining or
    leaving: its coming and going is that one's row's, as its membership events are not
    sent (:func:`hidden_from`), so a context shows it no more than the log does."""
    if not isinstance(item, dict) or item.get("kind") not in ("joined", "left"):
        return False
    said_by = item.get("from")
    return "seq" in item and isinstance(said_by, dict) and said_by.get("id") in own


def _renamed(
    value: Mapping[str, Any], own: Mapping[str, str], names: Mapping[str, str]
) -> str | None:
    """The name a mapping about an agent shown as somebody else bears (that one's), or
    None when it names nobody so shown or bears no name."""
    if not names or not isinstance(value.get("name"), str):
        return None
    for key in WHO:
        who = value.get(key)
        if isinstance(who, str) and who in own:
            name = names.get(own[who])
            return name if name != value["name"] else None
    return None


def _notes_renamed(
    room: Mapping[str, Any], own: Mapping[str, str], names: Mapping[str, str]
) -> dict[str, object] | None:
    """A room's ``notes`` with each agent shown as somebody else described as that one is
    (``rules/room.describe``: a harness reads as ``Name (agent, @Handle)``) and named by
    its name; None when nothing in them changes."""
    notes, members = room.get("notes"), room.get("members")
    if not names or not isinstance(notes, dict) or not isinstance(members, list):
        return None
    swaps: list[tuple[str, str]] = []
    bare: list[tuple[str, str]] = []
    for m in members:
        if not isinstance(m, dict) or m.get("participant_id") not in own:
            continue
        name, shown = m.get("name"), names.get(own[m["participant_id"]])
        if not isinstance(name, str) or shown is None or shown == name:
            continue
        kind = f"{m['harness']} agent" if m.get("harness") else "agent"
        handle, handle_shown = m.get("handle"), display_handle(shown)
        old = f"{name} ({kind}, {handle})" if handle else f"{name} ({kind})"
        new = f"{shown} (agent, {handle_shown})" if handle_shown else f"{shown} (agent)"
        swaps.append((old, new))
        bare.append((name, shown))
    if not swaps:
        return None
    out: dict[str, object] = {}
    for taker, note in notes.items():
        if isinstance(note, str):
            for old, new in swaps:
                note = note.replace(old, new)
            for name, shown in bare:
                note = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", shown, note)
        out[taker] = note
    return out if out != notes else None


def _dedupe(items: list[Any]) -> list[Any]:
    """A list with what now names the same participant twice said once.

    A string is kept once; of the members naming one participant (``participant_id``),
    the first is kept; any other item is kept once if equal to an earlier one.
    """
    out: list[Any] = []
    ids: set[str] = set()
    members: set[str] = set()
    for item in items:
        if isinstance(item, str):
            if item in ids:
                continue
            ids.add(item)
        elif isinstance(item, dict) and isinstance(item.get("participant_id"), str):
            if item["participant_id"] in members:
                continue
            members.add(item["participant_id"])
        elif item in out:
            continue
        out.append(item)
    return out
