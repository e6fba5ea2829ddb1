"""``/healthz``, ``/readyz`` and ``/metrics`` for services that are not HTTP APIs.

``/healthz`` depends on nothing; ``/readyz`` runs the service's checks (each answers
whether one dependency responds) and fails with 503 naming the ones that did not.

Both also say whether the service's work is built: ``"work": "built"``, or, for a service
that runs and keeps up with the stream but does not do its job yet,
``"work": "not built: …"`` (see :func:`not_built`). A service whose work lands passes
nothing, and says ``built``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from chips_common import otel
from chips_common.events import JsonObject

Check = Callable[[], Awaitable[bool]]
# What a service says it has built, shown beside its checks on ``/readyz``.
About = Callable[[], Awaitable[JsonObject]]

BUILT = "built"


def not_built(what: str) -> str:
    """The ``work`` a service declares while its job is still to come: what is missing."""
    return f"not built: {what}"


async def run_checks(checks: Mapping[str, Check]) -> dict[str, bool]:
    results: dict[str, bool] = {}
    for name, check in checks.items():
        try:
            results[name] = await check()
        except Exception:  # a failing dependency is a "no", never a 500
            results[name] = False
    return results


def add_health_routes(
    app: FastAPI,
    checks: Mapping[str, Check],
    work: str = BUILT,
    about: About | None = None,
    parts: Callable[[], dict[str, str]] | None = None,
) -> None:
    """``/healthz`` (depends on nothing), ``/readyz`` (runs ``checks``) and ``/metrics``.

    ``parts`` adds what else the liveness answer says of the service's own work (the
    gateway: whether it has the people's app to serve).
    """

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "work": work, **(parts() if parts is not None else {})}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        results = await run_checks(checks)
        ready = all(results.values())
        body: JsonObject = {"ready": ready, "checks": dict(results), "work": work}
        if about is not None:
            try:
                body["about"] = await about()
            except Exception:  # what it says of itself never fails the probe
                body["about"] = None
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def build_health_app(
    checks: Mapping[str, Check], work: str = BUILT, about: About | None = None
) -> FastAPI:
    app = FastAPI(
        openapi_url=None, docs_url=None, redoc_url=None, telemetry=otel.FASTAPI_TELEMETRY_OFF
    )
    add_health_routes(app, checks, work, about)
    return app
