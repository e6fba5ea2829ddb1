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
from hypothesis import HealthCheck, given, settings
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


def test_the_api_answers_as_its_document_says(stack: Stack, owner_token: str) -> None:
    """Each operation of the document, a few generated cases each (derandomized, so a run
    is repeatable), every answer checked; the failures of all operations are reported."""
    schema = schemathesis.openapi.from_url(f"{stack.gateway_a}/openapi.json")
    headers = {"Authorization": f"Bearer {owner_token}"}
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @settings(
            max_examples=5,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            case.call_and_validate(base_url=stack.gateway_a, headers=headers, checks=CHECKS)

        try:
            check()
        except Exception as exc:  # collect every operation's failure, then report them all
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:1500])
    assert operations >= 15, f"only {operations} operations in the document"
    assert not failures, "\n\n".join(failures)
