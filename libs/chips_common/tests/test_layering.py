"""Imports point inward: the pure part of chips_common loads no adapter.

STYLE.md, Layout shows the architecture: "A test proves the pure part imports neither nats
nor sqlalchemy." Each module is imported in a fresh interpreter, so what another test
imported cannot hide (or fake) a dependency.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

# The pure rules and catalogue first, then configuration: none of them may reach an adapter.
PURE_MODULES = [
    "chips_common.events",
    "chips_common.rules.scope",
    "chips_common.rules.delivery",
    "chips_common.rules.lines",
    "chips_common.rules.commands",
    "chips_common.rules.search",
    "chips_common.commands",
    "chips_common.ids",
    "chips_common.tokens",
    "chips_common.clock",
    "chips_common.config",
]

# Top-level packages only adapters (nats/, db/, redis.py, s3.py) and service/ may load.
ADAPTER_PACKAGES = ["nats", "sqlalchemy", "alembic", "psycopg", "redis", "boto3", "fastapi"]

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
adapters = set(json.loads(sys.argv[2]))
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in adapters)))
"""


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_loads_no_adapter(module: str) -> None:
    """Importing ``module`` alone loads none of nats, sqlalchemy or the other adapters."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, module, json.dumps(ADAPTER_PACKAGES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [], f"{module} loads adapters"
