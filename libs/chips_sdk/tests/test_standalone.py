"""The SDK stands alone: no server dependency, and its types follow the catalogue.

docs/architecture/design.md §11: the SDK is installable alone; docs/adr/0030 says how it stays
typed.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest

from chips_common.events import CATALOGUE  # the tests may import it; the SDK may not
from chips_sdk.events import EVENT_TYPES

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SERVER_ONLY = ("chips_common", "sqlalchemy", "fastapi", "nats", "pydantic", "redis", "psycopg")


def test_importing_the_sdk_pulls_no_server_dependency() -> None:
    probe = (
        "import sys, chips_sdk, chips_sdk.client, chips_sdk.events\n"
        f"print(sorted(m for m in {SERVER_ONLY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_the_package_requires_only_a_websocket_and_an_http_client() -> None:
    names = sorted(r.split(">")[0].split("=")[0].strip() for r in requires("chips-sdk") or [])
    assert names == ["httpx", "websockets"]


def test_the_typed_events_are_generated_from_the_current_schemas() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_sdk_types.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_catalogue_type_has_a_typed_event() -> None:
    assert set(EVENT_TYPES) == set(CATALOGUE)
