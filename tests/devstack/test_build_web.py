"""`make web`: the app is built again only when something it is made from changed.

A second `make up` on a stack already up used to spend ten seconds rebuilding web/dist
(issue 26). The build script keeps a digest of the app's sources in web/dist and skips the
build when they match; these tests run its ``--check`` on a copy of the tree, so they
build nothing and need no npm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what the build reads, with web/dist as built from it (no node_modules)."""
    build = str(ROOT / "scripts" / "build_web.sh")
    if subprocess.run([build, "--check"], capture_output=True, timeout=60).returncode != 0:
        subprocess.run([build], check=True, timeout=900)
    shutil.copytree(ROOT / "web", tmp_path / "web", ignore=shutil.ignore_patterns("node_modules"))
    shutil.copytree(ROOT / "docs" / "protocol" / "schemas", tmp_path / "docs/protocol/schemas")
    for name in ("openapi.json", "asyncapi.json"):
        shutil.copy2(ROOT / "docs" / "protocol" / name, tmp_path / "docs/protocol" / name)
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "build_web.sh", tmp_path / "scripts")
    return tmp_path


def check(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # no npm needed to say it is current
    return subprocess.run(
        [str(tree / "scripts" / "build_web.sh"), "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_built_app_is_current_and_a_second_build_does_nothing(tree: Path) -> None:
    assert check(tree).returncode == 0
    index = tree / "web" / "dist" / "index.html"
    before = index.stat().st_mtime_ns
    again = subprocess.run(
        [str(tree / "scripts" / "build_web.sh")],
        env={**os.environ, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "the app in web/dist is current; not rebuilt"
    assert index.stat().st_mtime_ns == before
    # Touching a file changes nothing it is made from.
    os.utime(tree / "web" / "src" / "main.tsx")
    assert check(tree).returncode == 0


@pytest.mark.parametrize(
    "changed",
    [
        "web/src/main.tsx",
        "web/index.html",
        "web/public/favicon.svg",
        "web/package-lock.json",
        "docs/protocol/schemas",
    ],
)
def test_a_changed_source_makes_it_stale(tree: Path, changed: str) -> None:
    path = tree / changed
    if path.is_dir():
        (path / "new.json").write_text("{}")
    else:
        path.write_text(path.read_text() + "\n")
    stale = check(tree)
    assert stale.returncode == 1
    assert "not current" in stale.stdout


def test_an_app_never_built_is_stale(tree: Path) -> None:
    shutil.rmtree(tree / "web" / "dist")
    assert check(tree).returncode == 1
