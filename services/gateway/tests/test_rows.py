"""Each typed row a read builds (``chips_gateway.rows``) has the fields of the answer
model the OpenAPI document gives it (``chips_gateway.answers``), required the same way: a
field a read leaves out when it does not apply is ``NotRequired`` there and ``absent()``
here. So the two descriptions of one answer cannot drift apart."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from chips_gateway import rows
from chips_gateway.answers import ABSENT, base, events, harnesses, people, runs
from chips_gateway.answers import rooms as room_answers

# The answer models, by name, from each topic's module (docs/adr/0141).
MODELS: dict[str, type[BaseModel]] = {
    name: model
    for module in (base, events, harnesses, people, room_answers, runs)
    for name, model in vars(module).items()
    if isinstance(model, type) and issubclass(model, BaseModel)
}

pytestmark = pytest.mark.unit


def pairs() -> list[tuple[type, type[BaseModel]]]:
    """Every row type, with the answer model of its name."""
    found = []
    for name, row in vars(rows).items():
        if name in rows.NOT_ANSWERS:
            continue
        if typing.is_typeddict(row) and row.__module__ == rows.__name__:
            model = MODELS[rows.ANSWER_NAMES.get(name, name)]
            found.append((row, model))
    return found


def model_fields(model: type[BaseModel]) -> dict[str, str]:
    """Each field's name on the wire, and whether the document calls it ``required``,
    ``absent`` (left out when it does not apply, never null) or ``optional`` (a default:
    left out by some reads, null by others)."""
    out = {}
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get(ABSENT):
            out[field.alias or name] = "absent"
        else:
            out[field.alias or name] = "required" if field.is_required() else "optional"
    return out


def row_fields(row: type) -> dict[str, bool]:
    """Each key of the row, and whether it is always there."""
    required: frozenset[str] = row.__required_keys__  # type: ignore[attr-defined]
    optional: frozenset[str] = row.__optional_keys__  # type: ignore[attr-defined]
    return {**{k: True for k in required}, **{k: False for k in optional}}


def test_there_are_rows() -> None:
    assert len(pairs()) > 10


@pytest.mark.parametrize(("row", "model"), pairs(), ids=lambda x: x.__name__)
def test_each_row_has_its_answers_fields(row: type, model: type[BaseModel]) -> None:
    keys, fields = row_fields(row), model_fields(model)
    assert sorted(keys) == sorted(fields)
    # A field the document requires is always there; one it calls absent is left out.
    assert [k for k, how in fields.items() if how == "required" and not keys[k]] == []
    assert [k for k, how in fields.items() if how == "absent" and keys[k]] == []
