"""API keys: a named, expiring key for a script (docs/adr/0125).

The key is paired as a device of the caller's own (``devices.pair_own``), so it is listed
and revoked as one (``GET /v1/devices``, ``DELETE /v1/devices/{id}``). Its secret is shown
once, in the answer, and kept only as a hash.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter
from pydantic import BaseModel, Field

from chips_common.append import IssuedCredential
from chips_common.ids import new_id, new_token
from chips_common.tokens import hash_token
from chips_gateway.answers.people import ApiKey
from chips_gateway.api.devices import pair_own
from chips_gateway.api.people import Name, need_person
from chips_gateway.context import Caller, Ctx, IdempotencyKey, check_write_rate

router = APIRouter(prefix="/v1")


class ApiKeyIn(BaseModel):
    name: Name
    expires_in_days: float = Field(default=90, gt=0, le=366)


@router.post("/api-keys", status_code=201)
async def create_api_key(
    body: ApiKeyIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> ApiKey:
    """A named, expiring key for a script, shown once; listed and revoked as a device."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    token = new_token("pt")
    key_id = new_id("crd")
    expires = datetime.now(UTC) + timedelta(days=body.expires_in_days)
    await pair_own(
        ctx,
        caller,
        idempotency_key,
        IssuedCredential(
            credential_id=key_id,
            participant_id=caller.participant_id,
            token_hash=hash_token(token),
            kind="api_key",
            name=body.name,
            expires_at=expires,
        ),
    )
    return ApiKey(
        id=key_id, name=body.name, token=token, expires_at=expires.isoformat(timespec="seconds")
    )
