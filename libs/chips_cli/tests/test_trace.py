"""``chips trace``: which traces are whole, and where the spans file is found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from chips_cli.trace import incomplete, render

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

    missing = subprocess.run(
        [CHIPS, "trace", "msg_2"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "no trace names msg_2 yet" in missing.stderr
