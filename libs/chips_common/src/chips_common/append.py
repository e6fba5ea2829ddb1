"""The append protocol between the gateway (or any writer) and the eventlog.

An :class:`AppendRequest` travels on ``CHIPS_APPEND`` with a reply subject in its
headers; the eventlog answers on it with an :class:`AppendAnswer` after the commit.
A request holds one event from a client, or a few that Chips writes together (a new
harness and its direct space) under one idempotency key.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from chips_common.events.base import ENVELOPE_FIELDS, JsonObject

ActorKind = Literal["person", "harness", "agent", "operator", "system"]


class Actor(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ActorKind
    id: str
    # An agent's harness, set by the gateway from the token (docs/adr/0070).
    harness_id: str | None = None


class IssuedCredential(BaseModel):
    """A credential to store with the participant or device a request creates: a token,
    as a hash, or a paired device's public key (docs/adr/0125)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    credential_id: str
    participant_id: str
    token_hash: str | None = None
    kind: str = "token"
    name: str | None = Field(default=None, max_length=120)
    public_key: str | None = Field(default=None, max_length=400)
    user_agent: str | None = Field(default=None, max_length=400)
    expires_at: datetime | None = None


class InviteSecret(BaseModel):
    """Beside an invite's request, never in its event: the hash of its secret, and the
    email it was sent to; or, to use one, the hash of the secret presented."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    secret_hash: str = Field(min_length=64, max_length=64)
    email: str | None = Field(default=None, max_length=200)


def fingerprint_of(request: Any) -> str:
    """The fingerprint of a request as its sender made it: the SHA-256 of its canonical
    JSON (keys sorted, no spaces), so the same request always gives the same one.

    Stored with the idempotency key, it tells a request sent again (answered
    ``duplicate``) from another request under a used key (refused
    ``idempotency_key_reused``; docs/adr/0126).
    """
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


class AppendRequest(BaseModel):
    """One request to the log.

    ``fingerprint`` is :func:`fingerprint_of` what the client sent (the gateway sets it);
    None for Chips' own writers, whose keys are derived from what they decide, so their
    key is not compared with a body.
    """

    model_config = ConfigDict(extra="forbid")

    request_id: str
    workspace_id: str
    credential_id: str
    actor: Actor
    idempotency_key: str = Field(min_length=1, max_length=200)
    events: list[dict[str, Any]] = Field(min_length=1, max_length=16)
    credentials: list[IssuedCredential] = Field(default_factory=list)
    invite: InviteSecret | None = None
    fingerprint: str | None = Field(default=None, max_length=128)


# A field of a logged event whose compact JSON is longer than this is left out of the
# answer: the writer has the body it sent, and the log has the event (docs/architecture/design.md
# §2, "the eventlog's answer never repeats bulky bodies").
ANSWER_FIELD_BYTES = 1024


def brief(event: JsonObject) -> JsonObject:
    """A logged event as an answer carries it: its envelope and its small fields only."""
    kept: JsonObject = {}
    for name, value in event.items():
        # The plain JSON types by ``type()`` first (an event is made of them), then as
        # before: a field's test costs no call but ``len`` for a string (docs/adr/0167).
        if type(value) is str:
            small = len(value) <= ANSWER_FIELD_BYTES // 4
        elif value is None or type(value) in _SCALARS:
            small = True
        elif isinstance(value, str | int | float | bool):
            small = not isinstance(value, str) or len(value) <= ANSWER_FIELD_BYTES // 4
        else:
            small = len(orjson.dumps(value)) <= ANSWER_FIELD_BYTES
        if small or name in ENVELOPE_FIELDS:
            kept[name] = value
    return kept


_SCALARS = (int, float, bool)


class AppendAnswer(BaseModel):
    """What the eventlog says about a request: the events it logged, or why not.

    ``events`` are :func:`brief` copies: ids, seqs and small fields, never the bulk.
    """

    model_config = ConfigDict(extra="forbid")

    request_id: str
    ok: bool
    seqs: list[int] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    duplicate: bool = False
    code: str | None = None
    message: str | None = None
    field: str | None = None
    # What a refusal tells beside its sentence (``agent_elsewhere``: the agent's room).
    data: JsonObject | None = None

    @classmethod
    def refused(
        cls,
        request_id: str,
        code: str,
        message: str,
        field: str | None = None,
        data: JsonObject | None = None,
    ) -> AppendAnswer:
        return cls(
            request_id=request_id, ok=False, code=code, message=message, field=field, data=data
        )


def answer_json(answer: AppendAnswer) -> bytes:
    """The answer as the eventlog sends it: its events :func:`brief`, ``None`` fields left
    out; the bytes of ``answer.model_copy(update={"events": [brief(e) ...]})
    .model_dump_json(exclude_none=True)``, made without a model copy or its validation
    (docs/adr/0167).

    The fields in their declared order, dumped by orjson (the same compact JSON, UTF-8
    unescaped, as pydantic's). What orjson will not dump (a non-string key, an integer
    past 64 bits) goes the model's way.
    """
    events = [brief(e) for e in answer.events]
    out: dict[str, object] = {
        "request_id": answer.request_id,
        "ok": answer.ok,
        "seqs": answer.seqs,
        "events": events,
        "duplicate": answer.duplicate,
    }
    if answer.code is not None:
        out["code"] = answer.code
    if answer.message is not None:
        out["message"] = answer.message
    if answer.field is not None:
        out["field"] = answer.field
    if answer.data is not None:
        out["data"] = answer.data
    try:
        return orjson.dumps(out)
    except TypeError:  # orjson.JSONEncodeError
        slim = answer.model_copy(update={"events": events})
        return slim.model_dump_json(exclude_none=True).encode()
