"""The render fixtures the TypeScript package is held to are what the Python SDK renders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_render_fixtures_are_what_the_sdk_renders_now() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_render_fixtures.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
