"""The gateway's room window gives the same context and room as the log would.

docs/architecture/design.md §4: replay and live delivery must produce the same frames. The window is
the live fast path; the reference here works from the whole history the way the log path does
(docs/product/websocket.md, What you're told with a question).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from chips_common.db.spend_reads import HELD_READ, JobRead
from chips_common.rules.context import Budget, fit
from chips_common.rules.context_lines import lines_of
from chips_common.rules.handles import Member
from chips_common.rules.room import JOINING, news_for, room_for, speaker
from chips_common.rules.scope import opened_with, standings_of
from chips_common.rules.spend import add_usage, ceiling_of, new_job
from chips_gateway.windows import KEEP, JobFold, RoomWindow, shown, who

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
    """A thread's window follows its room's membership (docs/product/messages.md, Threads): every
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


# --- the room's job and its held posts (docs/adr/0083) --------------------------------


def reference_job(history: list[dict[str, Any]], space: str, upto: int) -> JobRead:
    """The room's job as of ``upto`` as ``spend_reads.read_job`` reads it from the log: the
    last ceiling set, the last act of a person (else the room's first event), and the
    room's usage after it."""
    room = [e for e in history if e.get("space_id") == space and e["seq"] <= upto]
    ceilings = [e for e in room if e["type"] == "space.spend_ceiling_set"]
    usd = ceilings[-1].get("usd") if ceilings else None
    acts = [e["seq"] for e in room if e["actor"]["id"].startswith("usr_")]
    started = acts[-1] if acts else (room[0]["seq"] if room else 0)
    job = new_job(started)
    for e in room:
        if e["seq"] > started and e["type"] == "usage":
            job = add_usage(job, str(e.get("run_id")), e.get("cost_usd"))
    return JobRead(job, ceiling_of(usd))


def reference_held(history: list[dict[str, Any]], space: str, seq: int) -> list[dict[str, Any]]:
    """The held posts a person's act at ``seq`` hands on, as ``held_since_last_person``
    reads them: after the last person's act before it, newest first, at most HELD_READ."""
    room = [e for e in history if e.get("space_id") == space and e["seq"] < seq]
    before = max((e["seq"] for e in room if e["actor"]["id"].startswith("usr_")), default=0)
    held = [
        e
        for e in room
        if e["seq"] > before and e["type"] == "message.post" and e.get("held") is True
    ]
    return list(reversed(held))[:HELD_READ]


def spend_history(
    rng: random.Random, count: int, opener: str = "usr_a", quiet: tuple[int, int] = (0, 0)
) -> list[dict[str, Any]]:
    """A room's random history of words, usage, ceilings and held posts. Between the seqs
    of ``quiet`` no person acts, so held posts pile up past what a read hands on."""
    harnesses = ["hrn_0", "hrn_1", "hrn_2"]
    events: list[dict[str, Any]] = [
        {
            "seq": 1,
            "ts": "t1",
            "type": "space.created",
            "space_id": "spc",
            "actor": {"id": opener, "kind": PEOPLE[opener]["kind"]},
            "members": ["usr_a", *harnesses],
        }
    ]
    for seq in range(2, count + 2):
        person_may = not (quiet[0] <= seq < quiet[1])
        roll = rng.random()
        bot = rng.choice(harnesses)
        actor = {"id": bot, "kind": "harness"}
        event: dict[str, Any] = {"seq": seq, "ts": f"t{seq}", "space_id": "spc"}
        if roll < 0.12 and person_may:
            who_ = rng.choice(["usr_a", "usr_m"])
            actor = {"id": who_, "kind": "person"}
            if rng.random() < 0.3:
                usd = rng.choice([None, 0.25, 1, 2.5, 100])
                event.update(type="space.spend_ceiling_set", usd=usd)
            else:
                event.update(type="message.post", message_id=f"msg_{seq}", text="w")
                event["addressed_to"] = rng.sample(harnesses, rng.randint(0, 2))
        elif roll < 0.45:
            cost = rng.choice([None, 0.0, 0.01, 0.1, 0.333, 1.5])
            event.update(type="usage", run_id=f"run_{rng.randint(1, 6)}", tokens_in=1)
            event.update(tokens_out=1, cost_usd=cost)
        elif roll < 0.75 or not person_may:
            for_ = rng.sample([h for h in harnesses if h != bot], rng.randint(1, 2))
            event.update(type="message.post", message_id=f"msg_{seq}", text="w")
            event.update(addressed_to=[], held=True, held_for=for_)
        elif roll < 0.85:
            event.update(type="message.post", message_id=f"msg_{seq}", text="w")
            event["addressed_to"] = rng.sample(harnesses, 1)
        elif roll < 0.92:
            event.update(type="turn.passed")
        else:  # another room's usage: none of this room's
            event.update(type="usage", space_id="other", run_id="run_9", cost_usd=5.0)
            event.update(tokens_in=1, tokens_out=1)
        events.append({**event, "actor": actor})
    return events


def assert_as_the_log(window: RoomWindow, history: list[dict[str, Any]], i: int) -> None:
    event = history[i]
    seq = event["seq"]
    assert window.spend.job_at(seq) == reference_job(history, "spc", seq)
    held = window.spend.held_at(seq)
    assert held is not None
    assert [e for e, _ in held] == reference_held(history, "spc", seq)
    if event["type"] == "message.post" and event.get("held") is True and window.spend.held:
        # Kept with the job as of it, for the turn it is handed as (read once: it is frozen).
        newest, job = window.spend.held[-1]
        assert newest is event and job == reference_job(history, "spc", seq)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("opener", ["usr_a", "hrn_0"])
def test_the_window_s_job_and_held_posts_are_the_log_s(seed: int, opener: str) -> None:
    """After every event of the room, the window's job (context.spend, the note's spend
    sentence) and the held posts a person's act would hand on equal what the log reads
    as of it, also once the room has outgrown the window and past HELD_READ held posts in
    a row."""
    rng = random.Random(300 + seed)
    events = spend_history(rng, KEEP + 150, opener, quiet=(100, 150 + 2 * HELD_READ))
    window = RoomWindow("spc", {}, [], True, {})
    spent = handed = 0
    for i, event in enumerate(events):
        if event["space_id"] != "spc":
            continue
        window.apply(event, PEOPLE)
        assert_as_the_log(window, events, i)
        job = window.spend.job_at(event["seq"])
        assert job is not None
        spent += job.job.spent > 0
        handed += len(window.spend.held_at(event["seq"]) or ())
    # The comparisons were of jobs that spent, and of held posts handed on.
    assert spent > 100 and handed > HELD_READ
    assert window.spend.held_at(events[-1]["seq"] - 1) is None  # only as of the last event


@pytest.mark.parametrize("seed", range(3))
def test_a_window_loaded_mid_room_goes_on_from_the_log_s_reads(seed: int) -> None:
    """A window loaded with part of a room (RoomWindow.load) is told the job and held
    posts as the log read them just before, and folds on from there exactly; one told
    nothing says it cannot tell."""
    rng = random.Random(400 + seed)
    events = spend_history(rng, KEEP + 300, quiet=(150, 200 + 2 * HELD_READ))
    start = rng.randint(KEEP // 2, KEEP + 100)
    before = events[start]["seq"]
    read = reference_job(events, "spc", before - 1)
    held = [(e, None) for e in reversed(reference_held(events, "spc", before))]
    older = [e for e in events[:start] if e["space_id"] == "spc"][-KEEP:]
    loaded = RoomWindow("spc", {}, older, False, {}, spend=JobFold(read, held))
    blind = RoomWindow("spc", {}, older, False, {})
    for i in range(start, len(events)):
        event = events[i]
        if event["space_id"] != "spc":
            continue
        loaded.apply(event, PEOPLE)
        blind.apply(event, PEOPLE)
        assert_as_the_log(loaded, events, i)
        assert blind.spend.job_at(event["seq"]) is None
        assert blind.spend.held_at(event["seq"]) is None


def test_as_of_tells_a_turn_its_job_and_a_person_s_act_its_held_posts() -> None:
    """``as_of`` gives a turn its room, context and job, a person's act the held posts it
    hands on, and nothing else asks for either."""
    rng = random.Random(7)
    events = spend_history(rng, 200)
    window = RoomWindow("spc", {}, [], True, {})
    told = 0
    for event in events:
        if event["space_id"] != "spc":
            continue
        window.apply(event, PEOPLE)
        for pid in ("hrn_0", "hrn_1"):
            turn = event["type"] == "message.post" and pid in event.get("addressed_to", [])
            got = window.as_of([pid] if turn else [], event, Budget(), PEOPLE, {})
            assert (got.job is not None) == turn
            if turn:
                assert got.job == reference_job(events, "spc", event["seq"])
            assert (got.held is not None) == (event["actor"]["kind"] == "person")
            if got.held is not None:
                told += 1
                assert [e for e, _ in got.held] == reference_held(events, "spc", event["seq"])
    assert told > 10
