"""The gateway's room window gives the same context and room as the log would.

DESIGN.md §4: replay and live delivery must produce the same frames. The window is the live
fast path; the reference here works from the whole history the way the log path does
(spec/websocket.md, What you're told with a question).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from chips_common.rules.context import Budget, fit
from chips_common.rules.context_lines import lines_of
from chips_common.rules.handles import Member
from chips_common.rules.room import JOINING, news_for, room_for, speaker
from chips_common.rules.scope import opened_with, standings_of
from chips_gateway.windows import KEEP, RoomWindow, shown, who

pytestmark = pytest.mark.unit

PEOPLE = {
    "usr_a": {"id": "usr_a", "kind": "person", "name": "Arjun"},
    "usr_m": {"id": "usr_m", "kind": "person", "name": "Maya"},
    **{f"hrn_{i}": {"id": f"hrn_{i}", "kind": "harness", "name": f"Bot {i}"} for i in range(4)},
}


def reference(
    history: list[dict[str, Any]], pid: str, event: dict[str, Any], budget: Budget
) -> dict[str, Any]:
    """Context and room worked out from the whole history, as the log path does.

    Membership is the room's (``spc``), also for a turn in its thread (``thr``); turns and
    lines are those of the event's own space.
    """
    seq, space = event["seq"], event["space_id"]
    before = [e for e in history if e["seq"] < seq]
    since = 0
    asked: int | None = None  # the first message for pid since its turn last ended
    members: dict[str, Member] = {}
    for e in before:
        if e["space_id"] != "spc" and e["space_id"] != space:
            continue
        added = (
            opened_with(e)
            if e["type"] == "space.created"
            else ([e["participant_id"]] if e["type"] == "membership.added" else [])
        )
        for p in added:
            members[p] = Member(p, PEOPLE[p]["kind"], PEOPLE[p]["name"], standings_of(e)[p])
            if p == pid:
                since, asked = e["seq"], None
        if e["type"] == "membership.removed":
            members.pop(e["participant_id"], None)
        if e["space_id"] != space:
            continue
        author = e["actor"]["id"]
        if e["type"] == "message.post" and author != pid and pid in e["addressed_to"]:
            asked = e["seq"] if asked is None else asked
        if e["type"] in ("message.post", "turn.passed") and author == pid:
            since, asked = (asked if asked is not None else e["seq"]), None
    lines = [
        line
        for line in lines_of(
            [e for e in before if e["seq"] > since and e["space_id"] == space],
            lambda p: who(PEOPLE, p),
        )
        if not (line["kind"] == "said" and line["from"]["id"] == pid)
    ]
    kept, truncated = fit(lines, budget)
    inside = list(members.values())
    joinings = [
        e for e in before if e["space_id"] == space and e["seq"] >= since and e["type"] in JOINING
    ]
    talked = any(
        e["type"] == "message.post" and e["space_id"] == space and e["seq"] < since for e in before
    )
    news = news_for(
        pid,
        event,
        inside,
        joinings,
        since,
        talked,
        lambda p: who(PEOPLE, p)["name"],
        len(kept) if truncated and budget.lines else None,
    )
    shaped: dict[str, Any] = {
        "from": speaker(event, inside),
        "room": room_for([pid], inside, {pid: news}),
    }
    if budget.lines:
        shaped["context"] = {
            "lines": kept,
            "since_seq": since,
            "truncated": truncated,
            "before": kept[0]["seq"] if kept else seq,
        }
    return shaped


def history(rng: random.Random, count: int, thread_at: int | None = None) -> list[dict[str, Any]]:
    """A room's random history; from ``thread_at`` on, words also go to a thread of it."""
    events: list[dict[str, Any]] = [
        {
            "seq": 1,
            "ts": "t1",
            "type": "space.created",
            "space_id": "spc",
            "actor": {"id": "usr_a", "kind": "person"},
            "members": ["hrn_0", "hrn_1"],
        }
    ]
    inside = {"usr_a", "hrn_0", "hrn_1"}
    harnesses = {p for p, known in PEOPLE.items() if known["kind"] == "harness"}
    standing: dict[str, tuple[str, str]] = {}  # message id → (author, space), not taken back
    spaces = ["spc"]
    for seq in range(2, count + 2):
        if seq == thread_at:
            events.append(
                {
                    "seq": seq,
                    "ts": f"t{seq}",
                    "type": "space.created",
                    "space_id": "thr",
                    "kind": "thread",
                    "parent_space_id": "spc",
                    "actor": {"id": "hrn_0", "kind": "harness"},
                }
            )
            spaces.append("thr")
            continue
        roll = rng.random()
        outside = sorted(set(PEOPLE) - inside)
        if roll < 0.05 and outside:
            pid = rng.choice(outside)
            inside.add(pid)
            events.append(
                {
                    "seq": seq,
                    "ts": f"t{seq}",
                    "type": "membership.added",
                    "space_id": "spc",
                    "actor": {"id": "usr_a", "kind": "person"},
                    "participant_id": pid,
                }
            )
        elif roll < 0.08 and len(inside) > 2:
            pid = rng.choice(sorted(inside - {"usr_a"}))
            inside.discard(pid)
            events.append(
                {
                    "seq": seq,
                    "ts": f"t{seq}",
                    "type": "membership.removed",
                    "space_id": "spc",
                    "actor": {"id": pid, "kind": PEOPLE[pid]["kind"]},
                    "participant_id": pid,
                }
            )
        elif roll < 0.14 and standing:
            # An edit, or a take-back, of a message still standing.
            target = rng.choice(sorted(standing))
            author, where = standing[target]
            kind = "message.edited" if rng.random() < 0.6 else "message.deleted"
            change = {
                "seq": seq,
                "ts": f"t{seq}",
                "type": kind,
                "space_id": where,
                "actor": {"id": author, "kind": PEOPLE[author]["kind"]},
                "message_id": target,
            }
            if kind == "message.edited":
                change["text"] = "e" * rng.randint(1, 300)
            else:
                del standing[target]
            events.append(change)
        elif roll < 0.18 and inside & harnesses:
            author = rng.choice(sorted(inside & harnesses))
            events.append(
                {
                    "seq": seq,
                    "ts": f"t{seq}",
                    "type": "turn.passed",
                    "space_id": rng.choice(spaces),
                    "actor": {"id": author, "kind": "harness"},
                }
            )
        else:
            author = rng.choice(sorted(inside))
            others = sorted((inside & harnesses) - {author})
            where = rng.choice(spaces)
            events.append(
                {
                    "seq": seq,
                    "ts": f"t{seq}",
                    "type": "message.post",
                    "space_id": where,
                    "actor": {"id": author, "kind": PEOPLE[author]["kind"]},
                    "message_id": f"msg_{seq}",
                    "text": "w" * rng.randint(1, 300),
                    "addressed_to": rng.sample(others, rng.randint(0, len(others))),
                }
            )
            standing[f"msg_{seq}"] = (author, where)
    return events


OPENINGS = (
    "New since your last turn",
    "You joined this space",
    "without an @",
    "to every agent here",
    "Only the newest",
)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("budget", [Budget(), Budget(5, 600), Budget(200, 32_000)])
def test_the_window_answers_as_the_whole_history_would(seed: int, budget: Budget) -> None:
    """Every turn's context and room from the window equal the reference, also once the
    room has outgrown the window; when the window cannot tell, it says so (None)."""
    rng = random.Random(seed)
    events = history(rng, KEEP * 2)
    window = RoomWindow("spc", {}, [], True, {})
    answered = 0
    news: set[str] = set()
    for i, event in enumerate(events):
        window.apply(event, PEOPLE)
        if event["type"] != "message.post":
            continue
        for pid in sorted(window.members):
            if pid == event["actor"]["id"] or PEOPLE[pid]["kind"] != "harness":
                continue
            got = window.extras([pid], event, budget, PEOPLE, {})
            if got is None:
                continue
            answered += 1
            assert got == reference(events[: i + 1], pid, event, budget)
            note = got["room"]["notes"][pid]
            news.update(s for s in OPENINGS if s in note)
    assert answered > 100
    # The notes compared carried news of each kind, so the news was compared too.
    assert news >= {"New since your last turn", "You joined this space", "without an @"}
    if budget == Budget(5, 600):
        assert "Only the newest" in news


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("budget", [Budget(), Budget(5, 600)])
def test_a_thread_s_window_answers_as_the_whole_history_would(seed: int, budget: Budget) -> None:
    """A thread's window follows its room's membership (spec/messages.md, Threads): every
    turn in the thread gets the room's members and the thread's own lines, as the log says.
    Opening the thread is nobody's joining."""
    rng = random.Random(100 + seed)
    events = history(rng, KEEP, thread_at=40)
    room = RoomWindow("spc", {}, [], True, {})
    thread: RoomWindow | None = None
    joined: dict[str, int] = {}
    answered = 0
    for i, event in enumerate(events):
        if event["space_id"] == "spc":
            room.apply(event, PEOPLE)
            added = opened_with(event) if event["type"] == "space.created" else []
            if event["type"] == "membership.added":
                added = [event["participant_id"]]
            joined.update({pid: event["seq"] for pid in added})
            if thread is not None:
                thread.follow_room(event, PEOPLE)
            continue
        if thread is None:  # made as the feed makes it: the room's members, as they joined
            thread = RoomWindow(
                "thr", dict(room.members), [], True, {p: joined[p] for p in room.members}
            )
            thread.fresh.update(room.members)
        thread.apply(event, PEOPLE)
        if event["type"] != "message.post":
            continue
        for pid in sorted(thread.members):
            if pid == event["actor"]["id"] or PEOPLE[pid]["kind"] != "harness":
                continue
            got = thread.extras([pid], event, budget, PEOPLE, {})
            if got is None:
                continue
            answered += 1
            assert got == reference(events[: i + 1], pid, event, budget)
    assert answered > 50


def test_a_member_renamed_since_it_joined_is_shown_by_its_name_now() -> None:
    """An agent renamed after it joined (agent.updated) is shown as the log reads it."""
    joined = Member("agt_1", "agent", "OpenClaw", "member")
    names = {"agt_1": {"id": "agt_1", "kind": "agent", "name": "OpenClaw Prime"}}
    [member] = shown([joined], names, {"agt_1": "hrn_scout"})
    assert member.name == "OpenClaw Prime"
    assert member.harness_id == "hrn_scout"
