"""Who adds a participant to a workspace, decided without Postgres (docs/adr/0060).

Any person of the workspace but a guest connects a harness; a person is added by a
workspace owner or admin.
"""

from __future__ import annotations

import pytest

from chips_eventlog.rules.participants import refusal_to_add

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_any_person_but_a_guest_connects_a_harness(role: str) -> None:
    assert refusal_to_add("person", role, "harness") is None


def test_a_guest_does_not_connect_a_harness() -> None:
    assert refusal_to_add("person", "guest", "harness") == (
        "a guest of the workspace does not connect harnesses; any other person of the workspace may"
    )


def test_a_harness_adds_nobody() -> None:
    assert refusal_to_add("harness", None, "harness") is not None
    assert refusal_to_add(None, None, "person") is not None


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_owner_or_admin_adds_people(role: str) -> None:
    assert refusal_to_add("person", role, "person") is None


@pytest.mark.parametrize("role", ["member", "guest"])
def test_nobody_else_adds_people(role: str) -> None:
    assert refusal_to_add("person", role, "person") == "only a workspace owner or admin adds people"
