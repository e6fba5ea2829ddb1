"""The lead hand-off and who is working (chips_common.rules.lead; docs/adr/0090)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chips_common.append import Actor, AppendRequest
from chips_common.rules.lead import (
    LEAD_YOU,
    Room,
    facts,
    fold,
    forget_silent,
    handoff_at,
    lead_sentence,
    parse_ts,
    told_key,
    ts_of,
    working,
    working_sentence,
)

T0 = datetime(2026, 10, 2, 18, 0, tzinfo=UTC)
PERSON, J1, O1, LEAD = "usr_A", "agt_J1", "agt_O1", "agt_L"
ROOM = "spc_1"


class Log:
    """Events of one room, a second apart unless told otherwise."""

    def __init__(self) -> None:
        self.seq = 0
        self.at = T0
        self.room = Room()

    def add(self, event: dict[str, Any], after: float = 1) -> dict[str, Any]:
        self.seq += 1
        self.at += timedelta(seconds=after)
        full = {"seq": self.seq, "id": f"evt_{self.seq:026d}", "ts": ts_of(self.at), **event}
        full.setdefault("space_id", ROOM)
        self.room = fold(self.room, full)
        return full

    def by(self, who: str, kind: str, **fields: Any) -> dict[str, Any]:
        k = "person" if who.startswith("usr_") else "agent"
        return self.add({"type": kind, "actor": {"kind": k, "id": who}, **fields})

    def say(self, who: str, text: str, addressed: list[str] | None = None, **f: Any) -> str:
        e = self.by(who, "message.post", text=text, addressed_to=addressed or [], **f)
        return "msg_" + e["id"][4:]


def led() -> Log:
    log = Log()
    log.by(PERSON, "space.created", members=[J1, O1, LEAD])
    log.by(PERSON, "space.lead_set", agent_id=LEAD)
    return log


def test_an_agents_words_to_nobody_go_to_the_lead_after_the_quiet_spell() -> None:
    log = led()
    said = log.say(J1, "The alphabet is drawn.")
    assert log.room.words is not None and log.room.words.message_id == said
    assert handoff_at(log.room, quiet=20) == log.at + timedelta(seconds=20)


def test_the_exceptions_are_never_handed() -> None:
    log = led()
    log.say(LEAD, "I said this myself.")
    assert handoff_at(log.room) is None  # the lead's own words
    log.say(J1, "@Arjun done", mentions=[PERSON])
    assert handoff_at(log.room) is None  # named somebody
    log.say(J1, "@O1 over to you", addressed=[O1], mentions=[O1])
    assert handoff_at(log.room) is None  # reached somebody
    log.say(J1, "held", held=True)
    assert handoff_at(log.room) is None  # held by the referee
    log.say(PERSON, "J1, what is left?", addressed=[J1])
    log.say(J1, "Only the Z.")
    assert handoff_at(log.room) is None  # an answer to a person who asked it alone
    log.say(J1, "And now the Z is drawn too.")
    assert handoff_at(log.room) is not None  # its next words are nobody's turn again


def test_a_person_asking_two_agents_leaves_neither_answer_excepted() -> None:
    log = led()
    log.say(PERSON, "both of you", addressed=[J1, O1])
    log.say(J1, "Done.")
    assert handoff_at(log.room) is not None


def test_a_paused_room_hands_nothing_until_it_runs_again() -> None:
    log = led()
    log.say(J1, "Done.")
    log.add({"type": "exchange.set", "actor": {"kind": "system", "id": "system"},
             "state": "paused", "why": "spend"})  # fmt: skip
    assert handoff_at(log.room) is None
    log.add({"type": "exchange.set", "actor": {"kind": "person", "id": PERSON},
             "state": "running"})  # fmt: skip
    assert handoff_at(log.room) is not None
    log.by(PERSON, "exchange.set", state="paused")
    log.say(J1, "Said while paused.")
    log.by(PERSON, "exchange.set", state="running")
    assert handoff_at(log.room) is None  # words said while paused are never handed


def test_words_are_handed_once() -> None:
    log = led()
    said = log.say(J1, "Done.")
    log.add({"type": "lead.handed", "actor": {"kind": "system", "id": "system"},
             "message_id": said, "agent_id": LEAD, "said_by": J1, "quiet_seconds": 20})  # fmt: skip
    assert handoff_at(log.room) is None


def test_a_turn_going_puts_it_off_until_it_ends_or_falls_silent() -> None:
    log = led()
    log.by(O1, "run.started", run_id="run_1", goal="draw")
    log.say(J1, "Done.")
    assert handoff_at(log.room, quiet=20, silent=600) == parse_ts(
        log.room.turns["run_1"].heard_at
    ) + timedelta(seconds=620)
    log.by(O1, "run.completed", run_id="run_1", after=30)
    assert handoff_at(log.room, quiet=20) == log.at + timedelta(seconds=20)


def test_no_lead_or_a_lead_gone_hands_nothing() -> None:
    log = Log()
    log.by(PERSON, "space.created", members=[J1, LEAD])
    log.say(J1, "Done.")
    assert handoff_at(log.room) is None
    log.by(PERSON, "space.lead_set", agent_id=LEAD)
    assert handoff_at(log.room) is not None
    log.by(PERSON, "membership.removed", participant_id=LEAD)
    assert handoff_at(log.room) is None


def test_working_facts_change_with_turns_and_silence() -> None:
    log = led()
    log.by(O1, "run.started", run_id="run_1", goal="draw")
    log.by(O1, "step.log", run_id="run_1", step_id="s1", status="started", title="Editing a.html")
    found = facts(log.room, log.at)
    assert found is not None
    body, runs = found
    assert body["type"] == "room.working" and runs == ("run_1 Editing a.html",)
    assert body["working"][0]["last_step"] == "Editing a.html"
    assert {r["agent_id"] for r in body["idle"]} == {J1, LEAD}
    log.add({"type": "room.working", "actor": {"kind": "system", "id": "system"}, **body})
    assert facts(log.room, log.at) is None  # told already
    later = log.at + timedelta(seconds=601)
    assert working(log.room, later) == []
    gone = facts(log.room, later)
    assert gone is not None and gone[0]["type"] == "room.idle"


def test_the_note_says_who_works_and_who_does_not() -> None:
    names = {J1: "J1", O1: "O1", LEAD: "Lead"}
    told = {
        "working": [
            {"agent_id": O1, "run_id": "r", "since": ts_of(T0), "heard_at": ts_of(T0),
             "silent_at": ts_of(T0 + timedelta(minutes=10)),
             "last_step": "Editing ascii-alphabet.html"},
        ],
        "idle": [{"agent_id": J1, "since": ts_of(T0 - timedelta(minutes=1))}],
    }  # fmt: skip
    at = ts_of(T0 + timedelta(minutes=2))
    assert working_sentence(LEAD, told, names, at) == (
        "Working now: O1, 2 minutes in (last step: Editing ascii-alphabet.html). "
        "Not working: J1 for 3 minutes."
    )
    assert working_sentence(O1, told, names, at) == "Not working: J1 for 3 minutes."
    late = ts_of(T0 + timedelta(minutes=12))
    assert working_sentence(LEAD, told, names, late) == (
        "Not working: J1 for 13 minutes, O1 for 2 minutes."
    )
    assert lead_sentence(LEAD, LEAD, names) == LEAD_YOU
    assert lead_sentence(J1, LEAD, names) == (
        "Lead leads here: it hands out the work, and what is nobody's turn goes to it."
    )


def test_a_room_survives_storage() -> None:
    log = led()
    log.by(O1, "run.started", run_id="run_1", goal="draw")
    log.say(PERSON, "J1?", addressed=[J1])
    log.say(O1, "Done.")
    assert Room.from_json(log.room.to_json()) == log.room


# --- against a simple model ---------------------------------------------------------------

ACTS = st.lists(
    st.tuples(
        st.sampled_from(["say", "say_at", "person", "start", "end", "lead", "pause", "run"]),
        st.sampled_from([J1, O1, LEAD]),
        st.integers(min_value=1, max_value=40),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(ACTS)
def test_handoff_matches_a_rescan_of_the_history(acts: list[tuple[str, str, int]]) -> None:
    """The fold's answer equals one read off the whole history at the end."""
    log = led()
    history: list[dict[str, Any]] = []
    runs = 0
    for act, who, gap in acts:
        if act == "say":
            history.append(log.by(who, "message.post", text="words", addressed_to=[]))
        elif act == "say_at":
            history.append(log.by(who, "message.post", text="@x", addressed_to=[J1], mentions=[J1]))
        elif act == "person":
            history.append(log.by(PERSON, "message.post", text="hi", addressed_to=[]))
        elif act == "start":
            runs += 1
            history.append(log.by(who, "run.started", run_id=f"run_{runs}", goal="g"))
        elif act == "end" and runs:
            history.append(log.by(who, "run.completed", run_id=f"run_{runs}"))
        elif act == "lead":
            history.append(log.by(PERSON, "space.lead_set", agent_id=who))
        elif act == "pause":
            history.append(log.by(PERSON, "exchange.set", state="paused"))
        elif act == "run":
            history.append(log.by(PERSON, "exchange.set", state="running"))
        log.at += timedelta(seconds=gap)
    assert handoff_at(log.room, quiet=20, silent=600) == model(history, 20, 600)


def model(history: list[dict[str, Any]], quiet: float, silent: float) -> datetime | None:
    lead: str | None = LEAD
    paused = False
    said_paused = False  # whether the last post was said while the room was paused
    for e in history:
        if e["type"] == "space.lead_set":
            lead = e["agent_id"]
        if e["type"] == "exchange.set":
            paused = e["state"] == "paused"
        if e["type"] == "message.post":
            said_paused = paused
    posts = [e for e in history if e["type"] == "message.post"]
    if not posts or paused or said_paused or lead is None:
        return None
    last = posts[-1]
    if last["actor"]["kind"] == "person" or last["actor"]["id"] == lead or last["addressed_to"]:
        return None
    started: dict[str, dict[str, Any]] = {}
    ended_at: list[datetime] = []
    for e in history:
        if e["type"] == "run.started":
            started[e["run_id"]] = e
        elif e["type"] == "run.completed" and e["run_id"] in started:
            del started[e["run_id"]]
            ended_at.append(parse_ts(e["ts"]))
    moments = [parse_ts(last["ts"]), *ended_at[-1:]]
    moments += [parse_ts(s["ts"]) + timedelta(seconds=silent) for s in started.values()]
    return max(moments) + timedelta(seconds=quiet)


def test_turns_long_silent_are_forgotten() -> None:
    log = led()
    log.by(O1, "run.started", run_id="run_1", goal="draw")
    assert forget_silent(log.room, log.at + timedelta(seconds=10), 620).turns
    assert not forget_silent(log.room, log.at + timedelta(seconds=621), 620).turns


def test_a_harness_behind_its_agents_is_not_an_agent_of_its_own() -> None:
    log = Log()
    log.by(PERSON, "space.created", members=[])
    log.by(PERSON, "membership.added", participant_id="hrn_S", standing="agents")
    log.by(PERSON, "membership.added", participant_id=J1)
    assert set(log.room.agents) == {J1}
    log.by(J1, "run.started", run_id="run_1", goal="g")
    assert facts(log.room, log.at) is None  # one agent: nobody else's note needs it


def test_a_telling_s_key_is_bounded_however_many_runs_are_going() -> None:
    longest = [f"run_{i:03d}{'x' * 97}" for i in range(50)]  # run ids are at most 104
    key = told_key("spc_01JD5X3ZQ9W8Y7V6T5S4R3Q2P1", 2**62, longest)
    assert len(key) <= 100
    # The log takes it: an idempotency key is at most 200 characters.
    AppendRequest(
        request_id="req_1",
        workspace_id="ws_1",
        credential_id="crd_referee",
        actor=Actor(kind="system", id="system"),
        idempotency_key=key,
        events=[{"type": "room.working"}],
    )
    assert len(told_key(ROOM, 7, ["run_1"])) == len(told_key(ROOM, 7, longest))


def test_a_telling_s_key_names_the_set_of_runs_not_their_order_or_steps() -> None:
    assert told_key(ROOM, 7, ["run_b Drawing", "run_a "]) == told_key(ROOM, 7, ["run_a", "run_b"])
    assert told_key(ROOM, 7, ["run_a"]) != told_key(ROOM, 7, ["run_a", "run_b"])
    assert told_key(ROOM, 7, ["run_a"]) != told_key(ROOM, 8, ["run_a"])
    assert told_key(ROOM, 7, ["run_a"]) != told_key("spc_2", 7, ["run_a"])
    # Nobody working is a key of its own.
    assert told_key(ROOM, 7, []) == "room:spc_1:7:-"
