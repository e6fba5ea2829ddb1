"""The OpenAPI document says what the API takes and answers, checked two ways.

What the document holds (the body of ``POST /v1/events``, security, headers, the files'
bodies, the limits the server enforces, names a generator turns into good names), read
from the running gateway; and Schemathesis, a tool nobody here wrote, with every one of
its checks on, against the running gateway with real ids (a workspace, a room, a message,
a harness, a file made first), bounded in time, with zero failures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from chips_common.events import CATALOGUE
from chips_common.rules.search import MAX_QUERY_CHARS
from chips_devstack.stack import Stack

OPERATOR = {"X-Chips-Operator-Secret": "chips-dev-operator-secret"}


def document(stack: Stack) -> dict[str, Any]:
    r = httpx.get(f"{stack.gateway_a}/openapi.json", timeout=20)
    assert r.status_code == 200
    return dict(r.json())


def test_the_events_body_is_the_catalogue_by_type(stack: Stack) -> None:
    doc = document(stack)
    body = doc["paths"]["/v1/events"]["post"]["requestBody"]["content"]["application/json"]
    union = doc["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[1]]
    assert union["discriminator"]["propertyName"] == "type"
    mapping = union["discriminator"]["mapping"]
    writable = {name for name, cls in CATALOGUE.items() if cls.client_writable}
    assert set(mapping) == writable and "message.post" in mapping
    post = doc["components"]["schemas"][mapping["message.post"].rsplit("/", 1)[1]]
    assert "idempotency_key" in post["required"]
    assert post["properties"]["idempotency_key"]["maxLength"] == 200
    ack = doc["paths"]["/v1/events"]["post"]["responses"]["200"]["content"]["application/json"]
    acked = doc["components"]["schemas"][ack["schema"]["$ref"].rsplit("/", 1)[1]]
    assert {"space_id", "message_id", "seq", "duplicate"} <= set(acked["properties"])


def test_the_document_names_security_headers_files_and_limits(stack: Stack) -> None:
    doc = document(stack)
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    assert doc["security"] == [{"bearer": []}]
    paths = doc["paths"]
    assert paths["/v1/workspaces"]["post"]["security"] == [{"operator": []}]
    for methods in paths.values():
        for operation in methods.values():
            limited = operation["responses"]["429"]
            assert "Retry-After" in limited["headers"]
            error = operation["responses"]["422"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/Error"}
    assert "seq" in doc["components"]["schemas"]["Error"]["properties"]

    upload = paths["/v1/uploads"]["post"]
    assert "application/octet-stream" in upload["requestBody"]["content"]
    assert {p["name"] for p in upload["parameters"]} >= {"name", "keep_metadata"}
    made = upload["responses"]["201"]["content"]["application/json"]["schema"]
    assert made == {"$ref": "#/components/schemas/Upload"}
    fetched = paths["/v1/attachments/{attachment_id}"]["get"]["responses"]["200"]["content"]
    assert set(fetched) == {"application/octet-stream", "*/*"}

    # The limits are the server's: a search is at most MAX_QUERY_CHARS characters.
    [q] = [p for p in paths["/v1/search"]["get"]["parameters"] if p["name"] == "q"]
    assert q["schema"]["maxLength"] == MAX_QUERY_CHARS
    too_long = httpx.get(
        f"{stack.gateway_a}/v1/search", params={"q": "a" * (MAX_QUERY_CHARS + 1)}, timeout=20
    )
    assert too_long.status_code in (400, 401)

    # Names a generator turns into good ones: operations after their routes, and schemas
    # named by their models (no "Response Read Events V1 Events Get").
    ids = [op["operationId"] for methods in paths.values() for op in methods.values()]
    assert len(ids) == len(set(ids))
    assert "post_event" in ids and "read_events" in ids
    assert not [i for i in ids if "_v1_" in i]
    assert not [n for n in doc["components"]["schemas"] if "V1" in n or "__" in n]


def untyped_answers(doc: dict[str, Any]) -> list[str]:
    """Every success response whose body is not a named schema that declares its fields
    (a file's bytes, a binary string, are typed as such)."""
    schemas = doc["components"]["schemas"]
    found = []
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2"):
                    continue
                for media, body in response.get("content", {}).items():
                    schema = body.get("schema", {})
                    if schema == {"type": "string", "format": "binary"} and media != (
                        "application/json"
                    ):
                        continue
                    ref = schema.get("$ref", "")
                    named = schemas.get(ref.rsplit("/", 1)[-1]) if ref else None
                    if not named or not (named.get("properties") or named.get("oneOf")):
                        found.append(f"{method.upper()} {path} {status} {media}")
    return found


def test_every_success_response_is_typed(stack: Stack) -> None:
    """No operation answers an untyped object: each success body is a named model (and the
    walk itself finds an untyped one when there is one)."""
    doc = document(stack)
    assert untyped_answers(doc) == []
    ops = [op for methods in doc["paths"].values() for op in methods.values()]
    assert len(ops) >= 40
    # The documents in the repository, which the app's types are generated from, are the
    # ones the gateway serves.
    docs = Path(__file__).resolve().parents[2] / "docs" / "protocol"
    assert json.loads((docs / "openapi.json").read_text()) == doc
    served = httpx.get(f"{stack.gateway_a}/asyncapi.json", timeout=20).json()
    assert json.loads((docs / "asyncapi.json").read_text()) == served
    sheet = doc["paths"]["/v1/spaces/{space_id}"]["get"]["responses"]["200"]
    untyped = {"type": "object", "additionalProperties": True}
    sheet["content"]["application/json"]["schema"] = untyped
    assert untyped_answers(doc) == ["GET /v1/spaces/{space_id} 200 application/json"]


def test_a_method_a_path_does_not_take_is_405_with_allow(stack: Stack) -> None:
    r = httpx.put(f"{stack.gateway_a}/v1/events", json={}, timeout=20)
    assert r.status_code == 405 and r.json()["code"] == "invalid_request"
    assert set(r.headers["allow"].split(", ")) == {"GET", "POST"}
    r = httpx.delete(f"{stack.gateway_a}/v1/spaces/spc_x/files", timeout=20)
    assert r.status_code == 405 and r.headers["allow"] == "GET"
    r = httpx.put(f"{stack.gateway_a}/v1/no-such-thing", timeout=20)
    assert r.status_code == 404


@pytest.fixture(scope="module")
def real_ids(stack: Stack) -> dict[str, str]:
    """A workspace with one of everything, for Schemathesis to aim at."""
    base = stack.gateway_a
    made = httpx.post(
        f"{base}/v1/workspaces",
        json={"name": "Schema", "owner_name": "Sam"},
        headers=OPERATOR,
        timeout=20,
    ).json()
    auth = {"Authorization": f"Bearer {made['token']}"}
    harness = httpx.post(
        f"{base}/v1/harnesses", json={"name": "Scout"}, headers=auth, timeout=20
    ).json()
    room = httpx.post(
        f"{base}/v1/events",
        json={"type": "space.created", "title": "Fuzz", "members": [], "idempotency_key": "r"},
        headers=auth,
        timeout=20,
    ).json()
    upload = httpx.post(
        f"{base}/v1/uploads",
        params={"name": "notes.txt"},
        content=b"what we said\n",
        headers={**auth, "Content-Type": "application/octet-stream"},
        timeout=20,
    ).json()
    said = httpx.post(
        f"{base}/v1/events",
        json={
            "type": "message.post",
            "space_id": room["space_id"],
            "text": "hello",
            "upload_ids": [upload["upload_id"]],
            "idempotency_key": "m",
        },
        headers=auth,
        timeout=20,
    ).json()
    return {
        "token": made["token"],
        "space_id": room["space_id"],
        "message_id": said["message_id"],
        "harness_id": harness["harness_id"],
        "participant_id": made["owner_id"],
        "attachment_id": upload["attachment_id"],
    }


@pytest.mark.timeout(400)
def test_schemathesis_with_every_check_finds_nothing(
    stack: Stack, real_ids: dict[str, str], tmp_path: Path
) -> None:
    """Every check Schemathesis has, every operation, real ids in the paths; a bounded
    run (a few examples per operation, a time cap), repeatable (deterministic)."""
    config = tmp_path / "schemathesis.toml"
    ids = "\n".join(
        f'"path.{name}" = "{value}"' for name, value in real_ids.items() if name != "token"
    )
    config.write_text(
        f"""
# One worker: the coverage phase's strategies parse lambdas with Python's ast, which is
# not safe from two threads at once on 3.11 (a SystemError in Schemathesis, not here).
workers = 1
suppress-health-check = ["all"]
headers = {{ Authorization = "Bearer {real_ids["token"]}" }}

[generation]
max-examples = 5
deterministic = true
database = "none"
# A header the document does not name is not invalid HTTP: proxies add them all the time.
allow-extra-parameters = false

[parameters]
{ids}

[checks.positive_data_acceptance]
# A request the document calls well formed may still be refused by the room's rules
# (a 409 or 422 with its code), which the document lists.
expected-statuses = ["2xx", "401", "403", "404", "409", "413", "422", "429"]

[[operations]]
include-operation-id = "create_workspace"
headers = {{ X-Chips-Operator-Secret = "chips-dev-operator-secret" }}

[[operations]]
# A cursor is a token signed by the search that gave it: one made up is refused (400),
# and a harness that never declared restarts cannot be restarted (400).
include-operation-id-regex = "^(search|restart)$"
checks.positive_data_acceptance.expected-statuses = [
    "2xx", "400", "401", "403", "404", "409", "413", "422", "429"
]
"""
    )
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "schemathesis"),
            "--config-file",
            str(config),
            "run",
            f"{stack.gateway_a}/openapi.json",
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-time",
            "90",
            "--request-timeout",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=tmp_path,  # its cache and reports stay out of the checkout
        env={**os.environ, "NO_COLOR": "1"},
    )
    (tmp_path / "schemathesis.out").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-3000:]


def test_the_socket_has_an_asyncapi_document_of_the_same_types(stack: Stack) -> None:
    r = httpx.get(f"{stack.gateway_a}/asyncapi.json", timeout=20)
    assert r.status_code == 200
    doc = r.json()
    assert doc["asyncapi"].startswith("3.") and doc["channels"]["socket"]["address"] == "/v1/ws"
    frames = doc["components"]["messages"]
    assert frames["event"]["payload"]["properties"]["event"] == {
        "$ref": "#/components/schemas/EventWrite"
    }
    assert {"$ref": "#/components/schemas/Ack"} in frames["ack"]["payload"]["allOf"]
    # The schemas are the OpenAPI document's own, with the frames' own parts (the hello's
    # versions, who the socket is, a harness's agents; a notification is the inbox's own), and every
    # reference resolves.
    schemas, shared = doc["components"]["schemas"], document(stack)["components"]["schemas"]
    assert {name: schemas[name] for name in shared} == shared
    assert set(schemas) - set(shared) == {
        "ClientVersions",
        "ServerVersions",
        "ServerName",
        "HelloPerson",
        "HelloHarness",
        "HelloAgent",
    }
    hello = frames["server_hello"]["payload"]
    assert hello["properties"]["frame"]["const"] == "hello"
    assert {"workspace_id", "spaces", "head_seq", "protocol"} <= set(hello["required"])
    text = r.text
    for name in {part.split('"')[0] for part in text.split('"#/components/schemas/')[1:]}:
        assert name in doc["components"]["schemas"], name
    assert "4401" in doc["info"]["description"] and "4429" in doc["info"]["description"]
