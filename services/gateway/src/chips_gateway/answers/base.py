"""The base of every answer model, and the mark of a field a route leaves out."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


def absent(description: str | None = None) -> Any:
    """A field the route leaves out when it does not apply, and never sends as null: the
    document calls it optional and not nullable (``openapi.type_answers``)."""
    return Field(default=None, description=description, json_schema_extra={ABSENT: True})


ABSENT = "x-absent"


class Answer(BaseModel):
    """A success body. Its schema does not forbid other fields: a field the gateway adds
    later is one a client built from this document ignores."""
