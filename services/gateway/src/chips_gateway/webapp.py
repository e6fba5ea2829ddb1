"""The people's app: the built web app (``web/dist``) served as static files at ``/``.

The app is a client of the public API like any other (docs/architecture/design.md §11); the gateway
only hands out its files, with a Content-Security-Policy that lets them talk to this origin and
nothing else. A gateway whose app was not built still starts: ``/`` then says how to build
it, and ``/healthz`` says ``web: not built`` (docs/adr/0033).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.responses import FileResponse, Response
from starlette.routing import Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

log = logging.getLogger(__name__)

# Scripts, styles, images and sockets from this origin only; no framing, no plugins, no
# inline script (the build emits none). 'self' covers ws(s):// to this host.
CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "media-src 'self' blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Chips</title></head>
<body><main><h1>Chips</h1>
<p>The people's app is not built on this gateway. Build it with <code>make web</code>
(or <code>make up</code>, which builds it), or point <code>CHIPS_WEB_DIR</code> at a
built copy. The API at <code>/v1</code> works without it.</p></main></body></html>
"""


# The app's icon (web/public/, copied into the build), linked from index.html.
ICON = "favicon.svg"


def default_web_dir() -> Path:
    """``web/dist`` of the checkout this package runs from (an editable install)."""
    return Path(__file__).resolve().parents[4] / "web" / "dist"


class AppFiles(StaticFiles):
    """The app's files, with its security headers; hashed assets are cached for good.

    Whether the app is built is asked on each request, so a gateway started before
    ``make web`` serves the app as soon as it is there.
    """

    async def check_config(self) -> None:
        # A missing build is answered per request (below), not refused once and for all.
        if web_built(Path(str(self.directory))):
            await super().check_config()

    async def get_response(self, path: str, scope: Scope) -> Response:
        if path == "v1" or path.startswith("v1/"):
            # An API path no route answers stays an API error, not a page: 405 naming
            # the methods it takes when it is a path of the API, else 404.
            allowed = methods_of(scope.get("router"), f"/{path}")
            if allowed:
                return JSONResponse(
                    {
                        "code": "invalid_request",
                        "message": f"{scope['method']} is not taken by /{path}",
                    },
                    status_code=405,
                    headers={"Allow": ", ".join(sorted(allowed))},
                )
            return JSONResponse(
                {"code": "not_found", "message": f"no such endpoint: /{path}"}, status_code=404
            )
        web_dir = Path(str(self.directory))
        if not web_built(web_dir):
            return HTMLResponse(NOT_BUILT, status_code=503, headers=SECURITY_HEADERS)
        if path == "favicon.ico" and (web_dir / ICON).is_file():
            # A browser asks for /favicon.ico whatever the page links: it gets the app's icon.
            return FileResponse(
                web_dir / ICON,
                media_type="image/svg+xml",
                headers={**SECURITY_HEADERS, "Cache-Control": "public, max-age=86400"},
            )
        response = await super().get_response(path, scope)
        response.headers.update(SECURITY_HEADERS)
        immutable = path.startswith("assets/") and response.status_code == 200
        response.headers["Cache-Control"] = (
            "public, max-age=31536000, immutable" if immutable else "no-cache"
        )
        return response


def methods_of(router: Any, path: str) -> set[str]:
    """The methods the API's routes take at ``path`` (none when no route has it): each
    method is matched against the routes, the app's own mount left out."""
    found: set[str] = set()
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        probe: Scope = {"type": "http", "path": path, "root_path": "", "method": method}
        for route in getattr(router, "routes", ()):
            if not isinstance(route, Mount) and route.matches(probe)[0] is Match.FULL:
                found.add(method)
                break
    return found


def web_built(web_dir: Path) -> bool:
    return (web_dir / "index.html").is_file()


def mount_web(app: FastAPI, web_dir: Path) -> None:
    """Serve the app at ``/`` (mounted last, so every API route is matched first)."""
    if not web_built(web_dir):
        log.warning("the people's app is not built (%s has no index.html): / says so", web_dir)
    app.mount("/", AppFiles(directory=web_dir, html=True, check_dir=False), name="web")
