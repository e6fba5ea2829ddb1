"""The OpenAPI document matches what the API answers: schemathesis against the running
gateway, a bounded run (a few cases per operation), zero failures.

Checked: no 5xx, every status the API answers is documented, every answer's content type
and body fit the document (errors included: {code, message}).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from chips_devstack.stack import Stack

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def owner_token(stack: Stack) -> str:
    r = httpx.post(
        f"{stack.gateway_a}/v1/workspaces",
        json={"name": "Schema", "owner_name": "Sam"},
        headers={"X-Chips-Operator-Secret": "chips-dev-operator-secret"},
        timeout=20,
    )
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


@pytest.fixture(scope="module")
def api_schema(stack: Stack) -> Any:
    return schemathesis.openapi.from_url(f"{stack.gateway_a}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_as_its_document_says(case: Any, stack: Stack, owner_token: str) -> None:
    case.call_and_validate(
        base_url=stack.gateway_a,
        headers={"Authorization": f"Bearer {owner_token}"},
        checks=CHECKS,
    )
