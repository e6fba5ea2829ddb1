"""The untyped dicts after the door stay at or below the count ADR 0150 justifies."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "count_untyped", ROOT / "scripts/count_untyped.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["count_untyped"] = module
    spec.loader.exec_module(module)
    return module


def test_no_package_has_more_untyped_dicts_than_its_ceiling() -> None:
    count = script()
    assert count.over(count.counts(), count.CEILING) == []
    assert count.over(count.opaque_counts(), count.OPAQUE_CEILING) == []


def test_the_check_fails_above_a_ceiling(tmp_path: Path) -> None:
    count = script()
    src = tmp_path / "services" / "gateway" / "src" / "chips_gateway"
    src.mkdir(parents=True)
    (src / "a.py").write_text("x: dict[str, Any]\ny: LoggedJson\nLoggedJson = dict[str, Any]\n")
    assert count.counts(tmp_path) == {"gateway": 2}
    assert count.opaque_counts(tmp_path) == {"gateway": 1}
    assert count.over({"gateway": 2}, {"gateway": 1}) == ["gateway: 2 (at most 1)"]
    assert count.over({"gateway": 1}, {"gateway": 1}) == []
