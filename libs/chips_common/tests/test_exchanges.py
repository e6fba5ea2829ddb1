"""The referee's counting (rules/exchanges.py), against the product's numbers and a simple model.

docs/product/websocket.md: "It counts the messages agents send agents in a room since a person last
did anything there, or an agent last made something new … From half the stop (eight when
there is no stop), and on a circle while circles count … each message.new an agent sent
carries exchange … At the stop, or on a circle, the note says to stop … Past the hold, or
while a person has paused them, Chips posts the next with addressed_to: [] and held: true."
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips_common.rules.exchanges import (
    WINDOW,
    AgentMadeNew,
    Exchange,
    ExchangeSettings,
    Happened,
    Paused,
    PersonActed,
    Resumed,
    Said,
    Verdict,
    ack_exchange,
    exchange_of,
    gist,
    speaks_for_itself,
    step,
)

pytestmark = pytest.mark.unit

DEFAULT = ExchangeSettings()


def run(
    happenings: list[Happened], s: ExchangeSettings = DEFAULT
) -> tuple[Exchange, list[Verdict | None]]:
    ex = Exchange()
    out: list[Verdict | None] = []
    for h in happenings:
        ex, verdict = step(ex, h, s)
        out.append(verdict)
    return ex, out


def chat(sender: str, words: str, kind: str = "agent", **kw: object) -> Said:
    return Said(sender=sender, sender_kind=kind, to_agents=True, words=words, **kw)  # type: ignore[arg-type]


def fresh(n: int, senders: tuple[str, ...] = ("a", "b")) -> list[Happened]:
    """n agent-to-agent messages, each saying something new, taking turns."""
    return [chat(senders[i % len(senders)], f"step {i} done, next is {i + 1}") for i in range(n)]


# The product's numbers


def test_both_kinds_that_speak_for_themselves_count() -> None:
    assert speaks_for_itself("harness") and speaks_for_itself("agent")
    assert not speaks_for_itself("person") and not speaks_for_itself("system")


def test_defaults_are_stop_16_hold_48_half_8() -> None:
    assert (DEFAULT.stop, DEFAULT.hold, DEFAULT.circles, DEFAULT.half) == (16, 48, True, 8)
    assert ExchangeSettings(stop=None).half == 8
    assert ExchangeSettings(stop=10).half == 5


def test_notes_begin_at_half_the_stop_and_say_stop_at_the_stop() -> None:
    _, verdicts = run(fresh(20))
    assert all(v is not None for v in verdicts)
    notes = [v.note if v else None for v in verdicts]
    assert notes[:7] == [None] * 7
    assert notes[7] is not None and "Stop now" not in notes[7]
    assert all(n and "Stop now" not in n for n in notes[7:15])
    assert all(n and "Stop now" in n for n in notes[15:])
    assert [v.stop for v in verdicts if v][15] and not any(v.stop for v in verdicts[:15] if v)


def test_past_the_hold_a_message_is_held_and_its_ack_says_count_and_allowance() -> None:
    _, verdicts = run(fresh(50))
    held = [v.held for v in verdicts if v]
    assert held[:48] == [False] * 48 and held[48:] == [True, True]
    last = verdicts[48]
    assert last is not None
    assert ack_exchange(last) == {"count": 49, "allowance": 48}


def test_a_workspace_with_no_hold_never_holds_and_its_ack_has_no_allowance() -> None:
    s = ExchangeSettings(hold=None)
    _, verdicts = run(fresh(100), s)
    assert not any(v.held for v in verdicts if v)
    assert ack_exchange(verdicts[-1]) == {"count": 100}  # type: ignore[arg-type]


def test_with_no_stop_notes_begin_at_eight_and_never_say_stop() -> None:
    _, verdicts = run(fresh(30), ExchangeSettings(stop=None))
    assert verdicts[6] and verdicts[6].note is None
    assert all(v and v.note and "Stop now" not in v.note for v in verdicts[7:])


def test_a_person_acting_starts_the_count_again() -> None:
    ex, verdicts = run([*fresh(10), PersonActed(), *fresh(3)])
    assert ex.count == 3
    assert verdicts[-1] and verdicts[-1].count == 3 and verdicts[-1].note is None


def test_a_persons_message_is_a_person_acting() -> None:
    ex, _ = run([*fresh(10), chat("usr_priya", "how is it going?", kind="person")])
    assert ex.count == 0


def test_an_agent_making_something_new_starts_the_count_again() -> None:
    for new in (
        chat("a", "here is the draft", new_files=1),
        chat("a", "may I?", asks_person=True),
        AgentMadeNew(),
    ):
        ex, verdicts = run([*fresh(10), new])
        assert ex.count == 0
        assert verdicts[-1] is None


def test_a_message_to_the_people_is_not_counted() -> None:
    to_people = Said(sender="a", sender_kind="agent", to_agents=False, words="done")
    ex, verdicts = run([*fresh(3), to_people])
    assert ex.count == 3 and verdicts[-1] is None


def test_the_system_neither_counts_nor_resets() -> None:
    ex, _ = run([*fresh(3), Said("system", "system", to_agents=True, words="x")])
    assert ex.count == 3


# Circles


def test_two_agents_thanking_each_other_go_in_a_circle() -> None:
    _, verdicts = run([chat("a", "Thanks @B!"), chat("b", "Thanks @A!"), chat("a", "thanks, @B")])
    assert [v.circle for v in verdicts if v] == [False, False, True]
    assert verdicts[-1] and verdicts[-1].note and "Stop now" in verdicts[-1].note
    assert exchange_of(verdicts[-1]) is not None  # before half the stop, still a note


def test_taking_turns_alone_is_not_a_circle() -> None:
    _, verdicts = run(fresh(15))
    assert not any(v.circle for v in verdicts if v)


def test_repeating_yourself_to_nobody_answering_is_not_a_circle() -> None:
    _, verdicts = run([chat("a", "are you there @B"), chat("a", "are you there @B")])
    assert not any(v.circle for v in verdicts if v)


def test_four_agents_taking_turns_are_not_the_same_two_or_three() -> None:
    words = ["one", "two", "three", "four"]
    said = [chat(s, w) for s, w in zip("abcd", words, strict=True)]
    _, verdicts = run([*said, chat("a", "one")])
    assert not any(v.circle for v in verdicts if v)
    _, verdicts = run([*said[:3], chat("a", "one")])
    assert verdicts[-1] and verdicts[-1].circle


def test_a_file_already_here_with_nothing_new_beside_it_is_a_circle() -> None:
    _, verdicts = run([chat("a", "", old_files=1)])
    assert verdicts[-1] and verdicts[-1].circle
    _, verdicts = run([chat("a", "here is v2 with the fix", old_files=1)])
    assert verdicts[-1] and not verdicts[-1].circle


def test_with_circles_off_nothing_is_a_circle() -> None:
    s = ExchangeSettings(circles=False)
    _, verdicts = run([chat("a", "ok"), chat("b", "ok"), chat("a", "ok")], s)
    assert not any(v.circle for v in verdicts if v)


# Pauses


def test_while_paused_every_counted_message_is_held() -> None:
    _, verdicts = run([Paused("person"), *fresh(2)])
    assert all(v and v.held for v in verdicts[1:])


def test_a_person_acting_ends_a_spend_pause_but_not_their_own() -> None:
    ex, _ = run([Paused("spend"), PersonActed()])
    assert ex.paused is None
    ex, _ = run([Paused("person"), PersonActed()])
    assert ex.paused == "person"
    ex, _ = run([Paused("person"), Resumed()])
    assert ex.paused is None


def test_gist_drops_handles_case_and_punctuation() -> None:
    assert gist("Thanks @Ledger!") == gist("thanks, @Scout") == "thanks"


# Against a simple model: the whole history, scanned each time.


@dataclass
class Model:
    s: ExchangeSettings
    since: list[Said]
    paused: str | None = None

    def act(self, h: Happened) -> Verdict | None:
        if isinstance(h, Resumed):
            self.since, self.paused = [], None
            return None
        if isinstance(h, Paused):
            self.paused = "person" if h.why == "person" or self.paused == "person" else "spend"
            return None
        if isinstance(h, PersonActed) or (isinstance(h, Said) and h.sender_kind == "person"):
            self.since = []
            self.paused = "person" if self.paused == "person" else None
            return None
        if isinstance(h, AgentMadeNew):
            self.since = []
            return None
        if h.sender_kind not in ("harness", "agent"):
            return None
        if h.new_files or h.asks_person:
            self.since = []
            return None
        if not h.to_agents:
            return None
        earlier = self.since[-WINDOW:]
        self.since.append(h)
        n = len(self.since)
        circle = False
        if self.s.circles:
            g = gist(h.words)
            if h.old_files and not h.new_files and (not g or g in [gist(e.words) for e in earlier]):
                circle = True
            for i in range(len(earlier)):
                e = earlier[i]
                if g and e.sender == h.sender and gist(e.words) == g:
                    who = {x.sender for x in earlier[i:]} | {h.sender}
                    if len(who) in (2, 3):
                        circle = True
        half = self.s.stop // 2 if self.s.stop else 8
        held = self.paused is not None or (self.s.hold is not None and n > self.s.hold)
        stop = circle or (self.s.stop is not None and n >= self.s.stop)
        return Verdict(
            count=n, circle=circle, held=held, stop=stop, note="?" if circle or n >= half else None
        )


senders = st.sampled_from(["a", "b", "c", "d", "usr_p"])
phrases = st.sampled_from(["ok", "thanks", "done", "next", "Thanks!", "", "step two"])


@st.composite
def happenings(draw: st.DrawFn) -> Happened:
    choice = draw(st.integers(0, 19))
    if choice == 0:
        return PersonActed()
    if choice == 1:
        return AgentMadeNew()
    if choice == 2:
        return Paused(draw(st.sampled_from(["person", "spend"])))
    if choice == 3:
        return Resumed()
    sender = draw(senders)
    kind = "person" if sender.startswith("usr_") else draw(st.sampled_from(["agent", "harness"]))
    words = draw(phrases)
    if draw(st.booleans()):
        words = f"{words} {draw(st.integers(0, 30))}"
    return Said(
        sender=sender,
        sender_kind=kind,
        to_agents=draw(st.integers(0, 9)) > 0,
        words=words,
        new_files=1 if draw(st.integers(0, 29)) == 0 else 0,
        old_files=draw(st.integers(0, 1)) if draw(st.integers(0, 5)) == 0 else 0,
        asks_person=draw(st.integers(0, 39)) == 0,
    )


referees = st.builds(
    ExchangeSettings,
    stop=st.one_of(st.none(), st.integers(2, 20)),
    hold=st.one_of(st.none(), st.integers(2, 40)),
    circles=st.booleans(),
)


@settings(max_examples=300)
@given(st.lists(happenings(), max_size=120), referees)
def test_the_fold_agrees_with_the_model(seq: list[Happened], s: ExchangeSettings) -> None:
    model = Model(s, [])
    ex = Exchange()
    for h in seq:
        ex, got = step(ex, h, s)
        want = model.act(h)
        if want is None:
            assert got is None
            continue
        assert got is not None
        assert (got.count, got.circle, got.held, got.stop) == (
            want.count,
            want.circle,
            want.held,
            want.stop,
        )
        assert (got.note is None) == (want.note is None)
        assert ex.paused == model.paused


@given(st.lists(happenings(), max_size=80), referees)
def test_the_count_never_passes_the_counted_messages(
    seq: list[Happened], s: ExchangeSettings
) -> None:
    ex, verdicts = run(seq, s)
    assert ex.count <= sum(1 for v in verdicts if v is not None)
    assert len(ex.recent) <= WINDOW
