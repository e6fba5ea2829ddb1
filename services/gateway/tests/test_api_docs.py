"""docs/protocol/openapi.json and asyncapi.json are the gateway's documents of today.

The people's app generates its protocol types from them (web/src/gen/api.ts), so a
route or a frame changed without regenerating them would leave the app reading a
shape the gateway no longer sends. ``tests/e2e/test_openapi.py`` checks the running
gateway serves the same documents.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "gen_api_docs.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_documents_are_current() -> None:
    """When this fails: ``python scripts/gen_api_docs.py``, then ``npm run gen:types`` in
    web/, and commit what changed."""
    assert load_script().main(["--check"]) == 0


def test_check_fails_on_a_stale_document(tmp_path: Path) -> None:
    gen = load_script()
    assert gen.main([str(tmp_path)]) == 0
    assert gen.main(["--check", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "openapi.json").read_text())
    del doc["components"]["schemas"]["Sheet"]
    (tmp_path / "openapi.json").write_text(json.dumps(doc))
    assert gen.main(["--check", str(tmp_path)]) == 1
