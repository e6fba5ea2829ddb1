"""Count ``dict[str, Any]`` in each package's source (libs/*/src, services/*/src).

What is left of the untyped dicts the catalogue's types were meant to replace after the
door (docs/adr/0139, 0150): printed per package, and in all, so a change can say what it
took away. Beside it, the uses of ``LoggedJson``, the one alias of an untyped dict the
code may use: a logged event passed on as the JSON it is stored and sent as (ADR 0150).
An alias hides nothing here: it is counted in its own column, with its own ceiling.

``--check`` fails when a package has more of either than its ceiling below, so the
number cannot drift back up; lower a ceiling when a change takes some away.

Usage::

    python scripts/count_untyped.py          # a table
    python scripts/count_untyped.py --json   # {package: count}
    python scripts/count_untyped.py --check  # exit 1 above a ceiling
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = "dict[str, Any]"
# The logged event's JSON alias (chips_common.events.base); its definition is not a use.
OPAQUE = re.compile(r"\bLoggedJson\b")
OPAQUE_DEFINITION = "LoggedJson = dict[str, Any]"
# An import or an export of it is not a use either.
NOT_A_USE = re.compile(r"^\s*(from \S+ import .*|\(?\"?LoggedJson\"?,)\s*$")

# The most of each a package may have (ADR 0150 says where they are, and why).
CEILING: dict[str, int] = {
    "chips_cli": 23,
    "chips_common": 4,
    "chips_devstack": 0,
    "chips_sdk": 50,
    "attachments": 0,
    "eventlog": 1,
    "gateway": 14,
    "notifier": 0,
    "projector": 0,
    "referee": 2,
    "search": 0,
}
OPAQUE_CEILING: dict[str, int] = {"chips_common": 1, "eventlog": 20, "gateway": 3}


def sources(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for src in sorted([*root.glob("libs/*/src"), *root.glob("services/*/src")]):
        found[src.parent.name] = sorted(src.rglob("*.py"))
    return found


def counts(root: Path = ROOT) -> dict[str, int]:
    return {
        package: sum(path.read_text().count(PATTERN) for path in paths)
        for package, paths in sources(root).items()
    }


def opaque_counts(root: Path = ROOT) -> dict[str, int]:
    found: dict[str, int] = {}
    for package, paths in sources(root).items():
        n = 0
        for path in paths:
            for line in path.read_text().splitlines():
                if OPAQUE_DEFINITION not in line and not NOT_A_USE.match(line):
                    n += len(OPAQUE.findall(line))
        found[package] = n
    return found


def over(found: dict[str, int], ceiling: dict[str, int]) -> list[str]:
    return [
        f"{package}: {n} (at most {ceiling.get(package, 0)})"
        for package, n in found.items()
        if n > ceiling.get(package, 0)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    found, opaque = counts(), opaque_counts()
    if args.check:
        problems = [f"dict[str, Any] in {p}" for p in over(found, CEILING)]
        problems += [f"LoggedJson in {p}" for p in over(opaque, OPAQUE_CEILING)]
        for problem in problems:
            print(f"above its ceiling: {problem}", file=sys.stderr)
        if problems:
            print("type what was added, or argue it in an ADR and raise the ceiling")
        return 1 if problems else 0
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    width = max(len(p) for p in found)
    print(f"{'':<{width}}  {'dict':>4}  {'json':>4}")
    for package, n in found.items():
        print(f"{package:<{width}}  {n:>4}  {opaque[package]:>4}")
    print(f"{'all':<{width}}  {sum(found.values()):>4}  {sum(opaque.values()):>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
