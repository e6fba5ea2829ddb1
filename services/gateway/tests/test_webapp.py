"""The people's app served at ``/`` (docs/adr/0033): files with their policy, and a gateway
whose app is not built still answering, saying so."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from chips_gateway.webapp import mount_web


def app_at(web_dir: Path) -> TestClient:
    app = FastAPI()

    @app.get("/v1/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    mount_web(app, web_dir)
    return TestClient(app)


def build(web_dir: Path) -> None:
    (web_dir / "assets").mkdir(parents=True)
    (web_dir / "index.html").write_text('<div id="app"></div>')
    (web_dir / "assets" / "index-abc.js").write_text("console.log(1)")


def test_a_gateway_without_the_app_says_so(tmp_path: Path) -> None:
    client = app_at(tmp_path / "dist")
    answer = client.get("/")
    assert answer.status_code == 503
    assert "not built" in answer.text and "make web" in answer.text
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert client.get("/v1/ping").json() == {"pong": "yes"}


def test_the_app_is_served_once_built_without_a_restart(tmp_path: Path) -> None:
    web = tmp_path / "dist"
    client = app_at(web)
    assert client.get("/").status_code == 503
    build(web)
    index = client.get("/")
    assert index.status_code == 200 and 'id="app"' in index.text
    assert index.headers["cache-control"] == "no-cache"
    assert "frame-ancestors 'none'" in index.headers["content-security-policy"]
    assert index.headers["x-content-type-options"] == "nosniff"
    asset = client.get("/assets/index-abc.js")
    assert asset.status_code == 200 and "immutable" in asset.headers["cache-control"]


def test_api_paths_stay_api_errors(tmp_path: Path) -> None:
    web = tmp_path / "dist"
    build(web)
    client = app_at(web)
    assert client.get("/v1/ping").json() == {"pong": "yes"}
    missing = client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json() == {"code": "not_found", "message": "no such endpoint: /v1/nothing-here"}
    assert client.get("/no-such-file.png").status_code == 404
