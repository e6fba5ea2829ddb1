"""The repository's docs stand alone: nothing in it cites a file outside it.

Comments, docstrings, docs, tests and deploy files cite our own pages
(``docs/architecture/design.md §N``, ``docs/architecture/code-style.md``,
``docs/product/<page>.md``, ``docs/adr/NNNN``), never a design, style guide or spec
that lives beside the checkout. Every ``.md`` path a tracked file names must therefore be
a file of the repository: relative to its root, to the citing file, or, for a bare file
name, a page of that name somewhere in it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A path ending in .md, not glued to a word before it (so "docs/x.md" is one token).
MD_PATH = re.compile(r"(?<![\w./\\-])((?:\.\.?/)*\w[\w./-]*\.md)\b")
# Places outside the checkout, whatever the file they name.
OUTSIDE = re.compile(r"\.\./shared\b|/work/|(?<![\w/.-])(?:DESIGN|STYLE)\.md\b")
# Files that are data, not prose.
SKIP_SUFFIXES = (".lock", "package-lock.json", ".png", ".jpg", ".ico", ".woff2")


def tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = []
    for name in filter(None, out.split("\0")):
        if name.endswith(SKIP_SUFFIXES):
            continue
        path = ROOT / name
        if path.is_file():
            files.append(path)
    return files


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def resolves(cited: str, citing: Path, names: set[str]) -> bool:
    """Whether ``cited`` names a file of the repository."""
    for base in (ROOT, citing.parent):
        path = (base / cited).resolve()
        if path.is_file() and path.is_relative_to(ROOT):
            return True
    return "/" not in cited and cited in names


def outside_citations(files: list[Path]) -> list[str]:
    names = {path.name for path in files}
    found = []
    for path in files:
        text = read(path)
        if text is None:
            continue
        rel = path.relative_to(ROOT)
        for lineno, line in enumerate(text.splitlines(), 1):
            if path.name == Path(__file__).name:
                break  # this file names the patterns it forbids
            for match in OUTSIDE.finditer(line):
                found.append(f"{rel}:{lineno}: {match.group(0)!r} is outside the repository")
            for match in MD_PATH.finditer(line):
                if not resolves(match.group(1), path, names):
                    found.append(f"{rel}:{lineno}: {match.group(1)!r} is no file of ours")
    return found


def test_no_file_cites_a_path_outside_the_repository() -> None:
    """Every .md path cited in the repository is one of its own files."""
    found = outside_citations(tracked_text_files())
    assert found == [], "cite our own pages instead:\n" + "\n".join(found)


def test_the_check_sees_an_outside_citation(tmp_path: Path) -> None:
    """The check is not blind: the citations it exists to catch are caught."""
    names = {path.name for path in tracked_text_files()}
    citing = ROOT / "libs" / "example.py"
    for cited in ("spec/websocket.md", "../shared/DESIGN.md", "shared/spec/spaces.md"):
        assert not resolves(cited, citing, names), cited
    for cited in ("docs/product/websocket.md", "docs/architecture/design.md"):
        assert resolves(cited, citing, names), cited
    assert OUTSIDE.search("as DESIGN.md §2 says")
    assert OUTSIDE.search("(STYLE.md, A NATS consumer)")
    assert not OUTSIDE.search("docs/architecture/design.md §2")
