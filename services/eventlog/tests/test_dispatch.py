"""Every event type of the catalogue has its place in the door's one dispatch table."""

from __future__ import annotations

import pytest

from chips_common.events import CATALOGUE
from chips_eventlog.door import RULES
from chips_eventlog.rules.lanes import LANE_EVENTS

pytestmark = pytest.mark.unit

# Logged by the door itself, never decided as a request's event: a NO_REPLY post becomes
# ``turn.passed`` (rules/messages.py).
# The agent events the door writes for its commands and room operations (docs/adr/0070).
DERIVED_ONLY = {
    "turn.passed",
    "agent.registered",
    "agent.updated",
    "agent.attached",
    "agent.released",
    "membership.replaced",
    "message.held",
}


def test_every_catalogue_type_has_a_rule() -> None:
    lanes = {cls for cls in LANE_EVENTS}
    missing = [
        name
        for name, cls in sorted(CATALOGUE.items())
        if cls not in RULES and cls not in lanes and name not in DERIVED_ONLY
    ]
    assert missing == []


def test_the_table_names_only_catalogue_types() -> None:
    assert set(RULES) <= set(CATALOGUE.values())
