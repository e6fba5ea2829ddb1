"""docs/protocol/ is generated from the catalogue and must not go stale.

docs/architecture/code-style.md, One typed catalogue of events: "Generate JSON Schemas and the event
table in docs/protocol/ from the catalogue; CI fails if they are stale."
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from chips_common.events import CATALOGUE

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "gen_protocol_docs.py"


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def load_script() -> ModuleType:
    """The script as a module, so its behaviour can be tested in-process, quickly."""
    spec = importlib.util.spec_from_file_location("gen_protocol_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_protocol_docs_are_up_to_date() -> None:
    """The committed docs/protocol/ is what the catalogue generates today.

    When this fails, run ``python scripts/gen_protocol_docs.py`` and commit the result.
    """
    result = run_script("--check")
    assert result.returncode == 0, result.stderr


def test_check_names_stale_missing_and_left_over_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check`` fails, and names each file, when the docs on disk differ from the catalogue."""
    gen = load_script()
    out = ["--out", str(tmp_path)]
    assert gen.main(out) == 0
    assert gen.main(["--check", *out]) == 0

    schemas = tmp_path / "schemas"
    assert sorted(p.stem for p in schemas.glob("*.json")) == sorted(CATALOGUE)
    assert "message.post" in (tmp_path / "events.md").read_text(encoding="utf-8")

    (tmp_path / "events.md").write_text("# hand-edited\n", encoding="utf-8")
    (schemas / "message.post.json").unlink()
    (schemas / "message.shouted.json").write_text("{}\n", encoding="utf-8")

    capsys.readouterr()
    assert gen.main(["--check", *out]) == 1
    stderr = capsys.readouterr().err
    for name in ("events.md", "message.post.json", "message.shouted.json"):
        assert name in stderr
    assert "membership.added.json" not in stderr

    assert gen.main(out) == 0
    assert gen.main(["--check", *out]) == 0
    assert not (schemas / "message.shouted.json").exists()


def test_schemas_are_sorted_and_end_in_a_newline(tmp_path: Path) -> None:
    """Each schema is written with sorted keys and a trailing newline, so diffs stay small;
    it is the model's schema, its descriptions without citations of our product or design pages."""
    gen = load_script()
    assert gen.main(["--out", str(tmp_path)]) == 0
    for name, cls in CATALOGUE.items():
        text = (tmp_path / "schemas" / f"{name}.json").read_text(encoding="utf-8")
        assert json.loads(text) == gen._scrubbed(cls.model_json_schema())
        assert "docs/product/" not in text and "docs/architecture/design.md" not in text
        resorted = json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False)
        assert text == resorted + "\n"
