"""``answer_json`` writes the bytes the eventlog wrote through the model, and ``brief``
keeps what it kept (docs/adr/0167)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import orjson
import pytest

from chips_common.append import ANSWER_FIELD_BYTES, AppendAnswer, answer_json, brief
from chips_common.events.base import ENVELOPE_FIELDS


def through_the_model(answer: AppendAnswer) -> bytes:
    slim = answer.model_copy(update={"events": [brief(e) for e in answer.events]})
    return slim.model_dump_json(exclude_none=True).encode()


EVENT: dict[str, Any] = {
    "id": "ev_1",
    "seq": 7,
    "type": "message.posted",
    "workspace_id": "ws_1",
    "space_id": "sp_1",
    "ts": "2026-12-04T23:00:00.000000Z",
    "actor": {"kind": "person", "id": "pa_1", "harness_id": None},
    "text": 'hello é 😀 \u2028 <b>"quoted"</b> \\ \x01',
    "bulky": "x" * (ANSWER_FIELD_BYTES + 1),
    "nested": {"a": [1, 2.5, None, True], "b": None, "c": {"d": -0.0}},
    "numbers": [0.1, 1e-7, 1e16, 1e20, 123456789.123, 10**18, -5, 1.0],
    "thread_id": None,
}


ANSWERS = [
    AppendAnswer(request_id="r1", ok=True, seqs=[7], events=[EVENT]),
    AppendAnswer(request_id="r2", ok=True, seqs=[7, 8], events=[EVENT, {**EVENT, "seq": 8}]),
    AppendAnswer(request_id="r3", ok=True, seqs=[7], events=[EVENT], duplicate=True),
    AppendAnswer(request_id="r4", ok=True),
    AppendAnswer.refused("r5", "forbidden", "not a member", "space_id"),
    AppendAnswer.refused("r6", "not_found", "no such workspace"),
    AppendAnswer.refused(
        "r7", "agent_elsewhere", "in another room", "agent_id", {"space_id": "sp_2", "n": None}
    ),
    AppendAnswer.refused("r8", "internal", "", None, {}),
    AppendAnswer(request_id="r9", ok=True, seqs=[2**70], events=[{"seq": 2**70}]),
]


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda a: a.request_id)
def test_the_same_bytes_as_through_the_model(answer: AppendAnswer) -> None:
    assert answer_json(answer) == through_the_model(answer)


def test_what_orjson_will_not_dump_goes_the_models_way() -> None:
    # An integer past 64 bits: orjson refuses it, pydantic writes it.
    answer = AppendAnswer.refused("r", "invalid_event", "bad", "x", {"n": 2**70})
    assert (
        answer_json(answer)
        == through_the_model(answer)
        == (
            b'{"request_id":"r","ok":false,"seqs":[],"events":[],"duplicate":false,'
            b'"code":"invalid_event","message":"bad","field":"x","data":{"n":1180591620717411303424}}'
        )
    )


def test_the_answer_is_left_as_it_was() -> None:
    answer = AppendAnswer(request_id="r", ok=True, seqs=[7], events=[EVENT])
    before = answer.model_dump()
    answer_json(answer)
    assert answer.model_dump() == before


def brief_as_before(event: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name, value in event.items():
        if isinstance(value, str | int | float | bool) or value is None:
            small = not isinstance(value, str) or len(value) <= ANSWER_FIELD_BYTES // 4
        else:
            small = len(orjson.dumps(value)) <= ANSWER_FIELD_BYTES
        if small or name in ENVELOPE_FIELDS:
            kept[name] = value
    return kept


class Kind(StrEnum):
    TEXT = "text"


class Big(int):
    pass


def test_brief_keeps_what_it_kept() -> None:
    long = "y" * (ANSWER_FIELD_BYTES // 4 + 1)
    events: list[dict[str, Any]] = [
        EVENT,
        {**EVENT, "text": long, "id": long, "kind": Kind.TEXT, "n": Big(3), "b": False},
        {"seq": 1, "list": list(range(400)), "small": [1, 2], "none": None, "f": 1.5},
        {"exact": "z" * (ANSWER_FIELD_BYTES // 4), "sub": Kind("text" * 1)},
        {"long_kind": StrEnum("Long", {"X": long})["X"], "ts": long},
    ]
    for event in events:
        assert brief(event) == brief_as_before(event)
        assert list(brief(event)) == list(brief_as_before(event))
