"""Wiring of the attachments service: its HTTP API, and its consumer of committed events.

It is stateless: uploads are spooled to a temporary file and then live in S3, metadata in
Postgres; any number of replicas may run behind the gateway (docs/adr/0043).
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import text

from chips_attachments.api import build_router
from chips_attachments.appender import Appender
from chips_attachments.config import AttachmentsSettings
from chips_attachments.consumer import build_handler
from chips_attachments.hearing import Hearing
from chips_attachments.service import Service, database_away_response
from chips_attachments.store import Blobs
from chips_attachments.voice import engine_named
from chips_common import otel
from chips_common.db.away import DATABASE_AWAY
from chips_common.db.engine import build_direct
from chips_common.service.health import add_health_routes
from chips_common.service.worker import Worker

log = logging.getLogger(__name__)

# What this service does, as its health answer says (docs/operations.md).
BUILT = (
    "uploads",
    "sniffing",
    "metadata_stripping",
    "thumbnails",
    "digest_dedupe",
    "caps",
    "signed_urls",
    "fetch_audit",
    "erasure",
    "voice_notes",
)


def build_app(service: Service, nats_ok: object) -> FastAPI:
    app = FastAPI(
        title="Chips attachments",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        telemetry=otel.FASTAPI_TELEMETRY_OFF,
    )

    async def db_ok() -> bool:
        async with service.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    async def s3_ok() -> bool:
        return await service.blobs.ping()

    add_health_routes(app, {"postgres": db_ok, "nats": nats_ok, "s3": s3_ok})  # type: ignore[dict-item]

    @app.get("/v1/attachments-service", include_in_schema=False)
    async def built() -> dict[str, object]:
        return {"service": "attachments", "built": list(BUILT)}

    app.include_router(build_router(service))
    app.add_exception_handler(RequestValidationError, invalid_request)
    # Postgres away (restarting, failing over): an upload or a fetch is told unavailable
    # with a retry hint, never a 500 (docs/operations.md, When Postgres restarts).
    for away in DATABASE_AWAY:
        app.add_exception_handler(away, database_away_response)
    return app


async def invalid_request(_: Request, exc: Exception) -> JSONResponse:
    """A query the routes cannot take (a name past 255 characters) in the API's one error
    shape, ``{code, message, field}`` 400, as the gateway answers its own."""
    assert isinstance(exc, RequestValidationError)
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"] if p not in ("body", "query", "header"))
    return JSONResponse(
        {"code": "invalid_request", "message": f"{field}: {err['msg']}", "field": field},
        status_code=400,
    )


async def _ready_bucket(blobs: Blobs) -> None:
    for attempt in range(60):
        try:
            await blobs.ensure_bucket()
            return
        except Exception:
            if attempt == 0:
                log.warning("the S3 endpoint is not answering yet; waiting")
            await asyncio.sleep(0.5)
    await blobs.ensure_bucket()


async def run(settings: AttachmentsSettings) -> None:
    async with Worker.wired(settings, "attachments", pool_size=8) as worker:
        blobs = Blobs(settings)
        await _ready_bucket(blobs)
        appender = Appender(worker.nc, worker.names, settings.append_timeout_seconds)
        await worker.start_appender(appender)
        service = Service(settings, worker.engine, blobs, appender)
        handler = build_handler(worker.engine, blobs)
        # The hearing's idle look on psycopg itself (docs/adr/0166).
        direct = build_direct(settings, size=1)
        worker.stack.push_async_callback(direct.close)
        hearing = Hearing(
            settings, worker.engine, blobs, appender, engine_named(settings.transcriber), direct
        )

        async def work(stop: asyncio.Event) -> None:
            # It acts only on erasures: every other event is acked unread. Posted voice
            # notes are heard beside it (docs/adr/0137).
            heard = asyncio.create_task(hearing.run(stop))
            try:
                # Asked for at most every CHIPS_CONSUMER_HOLD_SECONDS (docs/adr/0168).
                await worker.consume(
                    handler,
                    stop,
                    wanted=frozenset({"space.erased"}),
                    pace=settings.consumer_hold_seconds,
                )
            finally:
                stop.set()
                await heard

        await worker.serve(build_app(service, worker.checks()["nats"]), work)
