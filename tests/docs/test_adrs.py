"""The decisions in docs/adr: one number, one decision, all of them in the index.

A number names one ADR and is never given twice; ``docs/adr/README.md`` lists every ADR
under its topic and marks those a later one superseded; and every ADR number cited
anywhere in the repository (``ADR 0022``, ``ADRs 0066 and 0067``, ``docs/adr/0022``) is
one of ours, so a number read in a comment always leads to the decision meant.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADR_DIR = ROOT / "docs" / "adr"
ADR_FILE = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
# "ADR 0022", "ADRs 0066 and 0067", "ADRs 0070, 0071", across a line break too.
CITED = re.compile(r"\bADRs?\s+(\d{4}(?:(?:,\s*|\s+and\s+|\s*&\s*)\d{4})*)")
LINKED = re.compile(r"\badr/(\d{4})\b")


def adr_files() -> list[Path]:
    return sorted(p for p in ADR_DIR.glob("*.md") if p.name != "README.md")


def numbers_cited(text: str) -> set[str]:
    found = set(LINKED.findall(text))
    for match in CITED.finditer(text):
        found.update(re.findall(r"\d{4}", match.group(1)))
    return found


def test_every_adr_is_named_by_its_number() -> None:
    """Each ADR's file is ``NNNN-<title>`` in Markdown; its heading starts with that number."""
    for path in adr_files():
        match = ADR_FILE.match(path.name)
        assert match, f"{path.name}: name an ADR NNNN-<title> (Markdown)"
        heading = path.read_text(encoding="utf-8").splitlines()[0]
        assert heading.startswith(f"# {match.group(1)}"), f"{path.name}: {heading!r}"


def test_adr_numbers_are_unique() -> None:
    """No two ADRs share a number (take the next free one above the highest)."""
    counts = Counter(path.name[:4] for path in adr_files())
    assert [n for n, c in counts.items() if c > 1] == []


def test_the_index_lists_every_adr() -> None:
    """docs/adr/README.md links every ADR file, and nothing that is not one."""
    index = (ADR_DIR / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((\d{4}-[a-z0-9-]+\.md)\)", index))
    names = {path.name for path in adr_files()}
    assert names - linked == set(), "add these to docs/adr/README.md under their topic"
    assert linked - names == set(), "the index links ADRs that do not exist"


def test_the_index_marks_what_was_superseded() -> None:
    """An ADR whose status says it was superseded is marked so in the index."""
    index = (ADR_DIR / "README.md").read_text(encoding="utf-8")
    for path in adr_files():
        status = next(
            (
                line
                for line in path.read_text(encoding="utf-8").splitlines()
                if line.startswith("Status")
            ),
            "",
        )
        if status.lower().startswith("status: superseded"):
            row = next(line for line in index.splitlines() if f"]({path.name})" in line)
            assert "**superseded**" in row, path.name


def test_every_cited_adr_number_is_ours() -> None:
    """Every ADR number cited in the repository names an ADR in docs/adr."""
    ours = {path.name[:4] for path in adr_files()}
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    wrong = []
    for name in filter(None, out.stdout.decode().split("\0")):
        path = ROOT / name
        if name.endswith(".lock") or not path.is_file() or path == Path(__file__):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        wrong += [f"{name}: ADR {n}" for n in sorted(numbers_cited(text) - ours)]
    assert wrong == [], "no such ADR here; cite our own doc instead:\n" + "\n".join(wrong)


def test_the_citation_pattern_reads_every_form() -> None:
    """The forms of citation the code uses are all read."""
    text = "ADR 0022; ADRs 0066 and 0067; (ADRs 0070, 0071); see ADR\n    0083; docs/adr/0010"
    assert numbers_cited(text) == {"0022", "0066", "0067", "0070", "0071", "0083", "0010"}
