"""Wiring of the gateway: ``build_app(settings)`` opens every client in its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import WebSocketRoute

from chips_common import otel
from chips_common.db.engine import build_direct, build_engine
from chips_common.nats.connect import build_nats, jetstream
from chips_common.nats.nudge import Nudge
from chips_common.nats.streams import Names, declare_streams
from chips_common.service.health import add_health_routes
from chips_common.service.runner import freeze_the_wiring
from chips_gateway import asyncapi, openapi
from chips_gateway.api import (
    api_keys,
    attachments,
    devices,
    events,
    identity,
    invites,
    oidc,
    passkeys,
    people,
    spaces,
)
from chips_gateway.api import notifications as notifications_api
from chips_gateway.api import runs as runs_api
from chips_gateway.api import search as search_api
from chips_gateway.appender import AppendClient
from chips_gateway.auth import Tickets
from chips_gateway.config import GatewaySettings
from chips_gateway.context import Context
from chips_gateway.edge import Edge, cors_options
from chips_gateway.errors import (
    DATABASE_AWAY,
    ChipsError,
    JsonBodies,
    chips_error_handler,
    data_error_handler,
    database_error_handler,
    http_error_handler,
    validation_error_handler,
)
from chips_gateway.fastpost import FastPost
from chips_gateway.feeds import Feeds
from chips_gateway.files import FileLinks
from chips_gateway.known import Known
from chips_gateway.notifications import Inbox
from chips_gateway.ratelimit import CredentialLimiter
from chips_gateway.reader import LogReader
from chips_gateway.restarts import Restarts
from chips_gateway.search import IndexProgress, SearchReader
from chips_gateway.sockets import Sockets
from chips_gateway.webapp import default_web_dir, mount_web, web_built
from chips_gateway.ws import serve_socket


def build_app(settings: GatewaySettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            engine = build_engine(settings)
            stack.push_async_callback(engine.dispose)
            # Searches' own: each is one statement in autocommit, with no round trip to
            # check a connection out (a dead one is tried once more) and no prepared
            # statements (every search is planned for its words: a rare word and a common
            # one want different plans). docs/adr/0066.
            search_engine = build_engine(
                settings,
                pool_size=5,
                pre_ping=False,
                autocommit=True,
                connect_args={"prepare_threshold": None},
            )
            stack.push_async_callback(search_engine.dispose)
            # Who a token is, on every request: one statement in autocommit on psycopg
            # itself (docs/adr/0120); a dead connection is tried once more.
            auth = build_direct(settings, size=5)
            stack.push_async_callback(auth.close)
            # The index's checkpoints as they commit, so a search waiting for the index
            # ends its wait at once (docs/adr/0111).
            progress = IndexProgress(settings.database_url)
            await progress.start()
            stack.push_async_callback(progress.stop)
            # Short timeouts: Redis holds tickets and rate counters only, and a write or a
            # ticket must not hang on it while it is away (docs/architecture/design.md §3).
            redis = Redis.from_url(
                settings.redis_url, socket_timeout=1.0, socket_connect_timeout=1.0
            )
            stack.push_async_callback(redis.aclose)
            nc = await build_nats(settings, name=f"chips-gateway-{settings.replica_id()}")
            stack.push_async_callback(nc.drain)
            js = jetstream(nc)
            names = Names.from_settings(settings)
            await declare_streams(js, names)
            appender = AppendClient(
                nc, names, settings.replica_id(), settings.append_timeout_seconds
            )
            await appender.start()
            stack.push_async_callback(appender.stop)
            reader = LogReader(engine, settings.replay_batch_size)
            feeds = Feeds(reader, nc, names, settings.feed_tail_check_seconds)
            await feeds.start()
            stack.push_async_callback(feeds.stop)
            app.state.attachments_client = attachments.build_client(settings.attachments_url)
            stack.push_async_callback(app.state.attachments_client.aclose)
            sockets = Sockets()
            await sockets.start(nc, names.disconnected_subject)
            # What waits for each person, and its live frames (docs/adr/0132).
            inbox = Inbox(engine, sockets, names.subject_prefix)
            await inbox.start(nc)
            app.state.inbox = inbox
            restarts = Restarts(
                redis,
                settings.redis_prefix,
                settings.replica_id(),
                settings.presence_ttl_seconds,
                settings.restart_wait_seconds,
            )
            await restarts.start(nc, names.restart_subject)
            stack.push_async_callback(restarts.stop)
            nudge = Nudge(nc, names)
            known = Known(settings.principal_cache_seconds)
            await known.start(
                nc, names.principals_subject, names.gateways_subject, settings.replica_id()
            )
            stack.push_async_callback(known.stop)
            app.state.ctx = Context(
                settings=settings,
                engine=engine,
                auth=auth,
                redis=redis,
                appender=appender,
                reader=reader,
                feeds=feeds,
                tickets=Tickets(redis, settings.redis_prefix, settings.ticket_ttl_seconds),
                limiter=CredentialLimiter(
                    redis,
                    settings.redis_prefix,
                    settings.credential_write_rate,
                    settings.credential_write_burst,
                ),
                links=FileLinks(settings.signing_key, settings.gateway_url),
                search=SearchReader(search_engine, progress, settings.signing_key, nudge),
                restarts=restarts,
                sockets=sockets,
                nudge=nudge,
                known=known,
            )
            app.state.nc = nc
            freeze_the_wiring()  # the gateway wired: out of the collector's reach (ADR 0165)
            yield

    app = FastAPI(
        title="Chips gateway",
        version="0.1.0",
        lifespan=lifespan,
        telemetry=otel.FASTAPI_TELEMETRY_OFF,
        generate_unique_id_function=openapi.operation_id,
    )
    # Innermost: POST /v1/events with a JSON object body, answered past FastAPI's routing
    # and dependencies (fastpost.FastPost, docs/adr/0164); the rest handed on to them.
    app.add_middleware(FastPost)
    # Then: a body without a JSON Content-Type is read as JSON (errors.JsonBodies).
    app.add_middleware(JsonBodies)
    # Last added runs first: the edge checks come before CORS, routing and authentication.
    if settings.origins():
        app.add_middleware(CORSMiddleware, **cors_options(settings.origins()))
    app.add_middleware(
        Edge,
        max_body_bytes=settings.max_body_bytes,
        allowed_origins=settings.origins(),
        public_url=settings.public_url,
    )
    app.add_exception_handler(ChipsError, chips_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(DataError, data_error_handler)
    for away in DATABASE_AWAY:
        app.add_exception_handler(away, database_error_handler)
    app.add_exception_handler(StarletteHTTPException, http_error_handler)
    app.include_router(identity.router)
    app.include_router(invites.router)
    app.include_router(devices.router)
    app.include_router(people.router)
    app.include_router(api_keys.router)
    app.include_router(passkeys.router)
    app.include_router(oidc.router)
    app.include_router(events.router)
    app.include_router(spaces.router)
    app.include_router(runs_api.router)
    app.include_router(attachments.router)
    app.include_router(search_api.router)
    app.include_router(notifications_api.router)
    openapi.install(app)
    asyncapi.install(app)

    async def db_ok() -> bool:
        async with app.state.ctx.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    async def nats_ok() -> bool:
        return bool(app.state.nc.is_connected)

    web_dir = Path(settings.web_dir) if settings.web_dir else default_web_dir()

    def web_part() -> dict[str, str]:
        return {"web": "built" if web_built(web_dir) else "not built"}

    # Redis is not among the checks: it holds tickets and rate counters only, and a
    # readiness that followed it would take every gateway out of service with it.
    add_health_routes(app, {"postgres": db_ok, "nats": nats_ok}, parts=web_part)

    async def socket(ws: WebSocket) -> None:
        await serve_socket(ws, app.state.ctx)

    # Starlette's route, not FastAPI's: the socket takes no dependencies, and FastAPI's
    # wrapper would hold its exit stacks for the socket's whole life (docs/adr/0159).
    app.router.routes.append(WebSocketRoute("/v1/ws", socket))

    mount_web(app, web_dir)
    return app
