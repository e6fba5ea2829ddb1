"""A body without a JSON Content-Type is read as JSON; Starlette's errors get our shape."""

from __future__ import annotations

from typing import Annotated, Any

import psycopg
import pytest
import sqlalchemy.exc
from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from starlette.exceptions import HTTPException as StarletteHTTPException

from chips_gateway.errors import (
    DATABASE_AWAY,
    JsonBodies,
    database_error_handler,
    http_error_handler,
    validation_error_handler,
)

pytestmark = pytest.mark.unit


def app() -> FastAPI:
    built = FastAPI()
    built.add_exception_handler(RequestValidationError, validation_error_handler)
    built.add_exception_handler(StarletteHTTPException, http_error_handler)
    built.add_middleware(JsonBodies)

    @built.post("/v1/uploads")
    async def upload(request: Request) -> dict[str, Any]:
        return {"content_type": request.headers.get("content-type")}

    @built.post("/v1/echo")
    async def echo(body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        return body

    return built


@pytest.mark.parametrize(
    "content_type", [None, "application/x-www-form-urlencoded", "application/json"]
)
def test_json_is_read_whatever_the_form_header_says(content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    r = TestClient(app()).post("/v1/echo", content=b'{"a": 1}', headers=headers)
    assert r.status_code == 200 and r.json() == {"a": 1}


def test_a_body_that_is_not_json_says_which_header() -> None:
    r = TestClient(app()).post(
        "/v1/echo", content=b"a=1", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400
    assert r.json()["code"] == "invalid_request"
    assert "Content-Type: application/json" in r.json()["message"]


def test_other_content_types_are_left_alone() -> None:
    r = TestClient(app()).post(
        "/v1/echo", content=b'{"a": 1}', headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"


def test_unknown_paths_and_methods_answer_code_and_message() -> None:
    client = TestClient(app())
    r = client.get("/v1/nowhere")
    assert r.status_code == 404
    assert r.json() == {"code": "not_found", "message": "no such path: /v1/nowhere"}
    r = client.get("/v1/echo")
    assert r.status_code == 405 and r.json()["code"] == "invalid_request"


def test_an_upload_keeps_the_type_it_came_with() -> None:
    r = TestClient(app()).post("/v1/uploads", content=b"\x89PNG")
    assert r.json() == {"content_type": None}


def test_a_database_that_does_not_answer_is_unavailable_with_a_retry_hint() -> None:
    built = FastAPI()
    for away in DATABASE_AWAY:
        built.add_exception_handler(away, database_error_handler)
    reasons = {
        "dns": psycopg.OperationalError("failed to resolve host 'db.invalid'"),
        "dropped": sqlalchemy.exc.OperationalError("SELECT 1", {}, OSError("reset")),
    }

    @built.get("/v1/read/{why}")
    async def read(why: str) -> None:
        raise reasons[why]

    for why in reasons:
        r = TestClient(built).get(f"/v1/read/{why}")
        assert r.status_code == 503 and r.headers["retry-after"] == "2"
        assert r.json() == {
            "code": "unavailable",
            "message": "Chips cannot answer that right now: its database does not answer; "
            "try again in a few seconds",
            "retry_after": 2,
        }
