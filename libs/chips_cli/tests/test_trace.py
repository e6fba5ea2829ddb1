"""``chips trace``: which traces are whole, and where the spans file is found."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chips_cli.trace import (
    ARRIVAL_SECONDS,
    incomplete,
    keep_waiting,
    made_at,
    not_found,
    of_event,
    parse_id,
    render,
    still_arriving,
    traces_for,
    unfold_links,
)
from chips_common.ids import new_ulid

WS = "chips.workspace_id"

CHIPS = str(Path(sys.executable).parent / "chips")


def span(span_id: str, name: str, parent: str | None, start: int = 0) -> dict[str, Any]:
    return {
        "trace_id": "t1",
        "span_id": span_id,
        "parent_id": parent,
        "name": name,
        "service": name.split(".")[0],
        "start_ns": start,
        "end_ns": start + 1000,
        "attributes": {"chips.message_id": "msg_1"},
    }


WHOLE = [
    span("a", "gateway.receive event", None),
    span("b", "eventlog.append", "a", 1),
    span("c", "eventlog.commit", "b", 2),
    span("d", "projector.receive", "c", 3),
    span("e", "projector.apply", "c", 4),
    span("f", "search.receive", "c", 5),
    span("g", "referee.receive", "c", 6),
    span("h", "attachments.receive", "c", 7),
    span("i", "gateway.deliver", "c", 8),
]


def test_a_whole_trace_is_complete() -> None:
    assert incomplete(WHOLE) == []


def test_a_client_s_own_parent_does_not_make_it_incomplete() -> None:
    joined = [{**WHOLE[0], "parent_id": "clients-span"}, *WHOLE[1:]]
    assert incomplete(joined) == []


def test_a_trace_without_its_root_yet_is_incomplete() -> None:
    notes = incomplete(WHOLE[1:])
    assert notes == ["the parent of eventlog.append is not written yet"]
    assert "eventlog.append" in render("t1", WHOLE[1:])


def test_a_commit_whose_consumers_have_not_written_yet_is_incomplete() -> None:
    notes = incomplete(WHOLE[:3] + WHOLE[4:6])
    assert notes == ["no span yet from referee, attachments"]


def test_chips_trace_says_incomplete_and_finds_the_run_directory_from_anywhere(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "traces.jsonl").write_text("\n".join(json.dumps(s) for s in WHOLE[1:]) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin", "CHIPS_RUN_DIR": str(run)}
    done = subprocess.run(
        [CHIPS, "trace", "msg_1"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("trace t1")
    assert "incomplete: the parent of eventlog.append is not written yet" in done.stdout

    (run / "traces.jsonl").write_text("\n".join(json.dumps(s) for s in WHOLE) + "\n")
    done = subprocess.run(
        [CHIPS, "trace", "msg_1"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "incomplete" not in done.stdout

    # A message from long ago with no span is unknown here, said at once.
    old = "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV"
    missing = subprocess.run(
        [CHIPS, "trace", old], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert f"no span names {old} in {run / 'traces.jsonl'}, and it is too old" in missing.stderr

    # One said just now: its spans are still arriving (after waiting for them a little).
    fresh = f"msg_{new_ulid()}"
    waiting = subprocess.run(
        [CHIPS, "trace", fresh, "--wait", "1"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert waiting.returncode == 1 and "Traceback" not in waiting.stderr
    assert f"the spans of {fresh} are still arriving" in waiting.stderr

    # By its trace id too; an unknown one is said to be unknown after the wait.
    by_trace = subprocess.run(
        [CHIPS, "trace", "7" * 32, "--wait", "1"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert by_trace.returncode == 1
    assert "not a trace this stack wrote" in by_trace.stderr, by_trace.stderr


def trace_of(trace_id: str, attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**s, "trace_id": trace_id, "attributes": attributes} for s in WHOLE]


def test_any_id_a_person_has_finds_the_trace() -> None:
    mine = trace_of("a" * 32, {"chips.message_id": "msg_X", "chips.seq": 7, WS: "ws_1"})
    other = trace_of("b" * 32, {"chips.message_id": "msg_Y", "chips.seq": 7, WS: "ws_2"})
    spans = mine + other
    assert list(traces_for(parse_id("msg_X"), spans)) == ["a" * 32]
    assert list(traces_for(parse_id("A" * 32), spans)) == ["a" * 32]
    # A seq is one workspace's: read back from the log to its event first.
    seven = of_event(parse_id("7"), {"workspace_id": "ws_2", "seq": 7}, None)
    assert list(traces_for(seven, spans)) == ["b" * 32]
    as_message = of_event(parse_id("7"), {"workspace_id": "ws_1", "message_id": "msg_X"}, None)
    assert list(traces_for(as_message, spans)) == ["a" * 32]
    assert traces_for(parse_id("msg_Z"), spans) == {}


@pytest.mark.parametrize("raw", ["", "0", "-3", "abc", "spc_1", "a" * 31, "seq 7"])
def test_what_is_not_an_id_is_said_in_one_sentence(raw: str) -> None:
    with pytest.raises(ValueError, match="not something to trace"):
        parse_id(raw)


def test_still_arriving_while_young_then_unknown() -> None:
    wanted = parse_id("msg_01ARYZ6S41" + "0" * 16)
    born = made_at(wanted.id)
    assert born == 1469918176.385  # the ULID's first ten digits are its milliseconds
    assert abs(made_at(f"msg_{new_ulid()}") - time.time()) < 1  # type: ignore[operator]
    assert wanted.made_at == born
    assert still_arriving(wanted, born + 1) is True
    assert still_arriving(wanted, born + ARRIVAL_SECONDS) is False
    code, sentence = not_found(wanted, born + 4, 4, "t.jsonl")
    assert code == "not_ready" and "are still arriving (it is 4 s old" in sentence
    code, sentence = not_found(wanted, born + 3600, 0, "t.jsonl")
    assert code == "not_found" and "too old for its spans to be on their way" in sentence
    # A trace id tells no age: unknown once the wait is over.
    code, sentence = not_found(parse_id("c" * 32), 0, 10, "t.jsonl")
    assert (code, still_arriving(parse_id("c" * 32), 0)) == ("not_found", None)
    assert sentence.startswith(f"no span of trace {'c' * 32} is in t.jsonl, after waiting 10 s")


def test_waits_while_more_may_come() -> None:
    young = f"msg_{new_ulid()}"
    now = time.time()
    assert keep_waiting(parse_id(young), {}, now) is True
    assert keep_waiting(parse_id("c" * 32), {}, now) is True  # no age: up to --wait
    assert keep_waiting(parse_id("msg_01ARYZ6S41" + "0" * 16), {}, now) is False
    started = int(now * 1e9)
    partial = [{**s, "start_ns": started + s["start_ns"]} for s in WHOLE[:3]]
    assert keep_waiting(parse_id("c" * 32), {"t1": partial}, now + 1) is True
    assert keep_waiting(parse_id("c" * 32), {"t1": partial}, now + ARRIVAL_SECONDS) is False
    whole = [{**s, "start_ns": started + s["start_ns"]} for s in WHOLE]
    assert keep_waiting(parse_id(young), {"t1": whole}, now + 1) is False


def test_a_reader_that_stops_early_is_no_error(tmp_path: Path) -> None:
    """`chips trace ID | head -3`: the rest is not wanted, and that is not a failure."""
    many = [span(f"s{i}", "gateway.deliver", None, i) for i in range(5000)]
    spans = tmp_path / "traces.jsonl"
    spans.write_text("\n".join(json.dumps(s) for s in many) + "\n")
    env = {"PATH": "/usr/bin:/bin", "CHIPS_TRACE_FILE": str(spans)}
    reading = subprocess.Popen(
        [CHIPS, "trace", "msg_1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reading.stdout is not None and reading.stderr is not None
    assert reading.stdout.readline().startswith("trace t1")
    reading.stdout.close()
    assert reading.wait(timeout=30) == 0
    assert reading.stderr.read() == ""


def test_a_consumer_s_batch_span_is_drawn_in_every_trace_it_links_to(tmp_path: Path) -> None:
    """One projector span of a batch of two events from two traces: each trace finds it
    under its own append span, with its own seq, and is whole."""
    one = [{**s, "trace_id": "a" * 32} for s in WHOLE if s["service"] != "projector"]
    two = [{**s, "trace_id": "b" * 32, "attributes": {}} for s in one]
    batch = {
        **span("z", "projector.receive", None, 9),
        "trace_id": "c" * 32,
        "links": [
            {"trace_id": "a" * 32, "span_id": "c", "attributes": {"chips.seq": 2}},
            {"trace_id": "b" * 32, "span_id": "c", "attributes": {"chips.seq": 7}},
        ],
    }
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in [*one, *two, batch]))
    from chips_cli.trace import spans_from_file

    found = traces_for(parse_id("b" * 32), spans_from_file(path))
    spans = found["b" * 32]
    drawn = next(s for s in spans if s["name"] == "projector.receive")
    assert drawn["parent_id"] == "c" and drawn["attributes"]["chips.seq"] == 7
    assert incomplete(spans) == []
    assert "projector.receive" in render("b" * 32, spans)
    assert unfold_links(one[0]) == [one[0]]
