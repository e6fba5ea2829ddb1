"""The context a message.new carries, and its budget (docs/product/websocket.md, What you're told).

Lines are built from the log by the gateway; this module only fits them to a budget:
the oldest go first, a line longer than the whole budget is cut so the newest is always
there, ``truncated`` says older lines were left out, and ``before`` is the cursor for
reading them (the seq of the oldest line handed over).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chips_common.events.wire import LineJson

DEFAULT_LINES = 40
DEFAULT_CHARS = 16_000
MAX_LINES = 200
MAX_CHARS = 32_000


@dataclass(frozen=True)
class Budget:
    lines: int = DEFAULT_LINES
    chars: int = DEFAULT_CHARS

    @classmethod
    def from_hello(cls, asked: Any) -> Budget:
        """The budget a hello's ``context`` asks for, within Chips's limits."""
        if not isinstance(asked, Mapping):
            return cls()
        lines, chars = asked.get("lines", DEFAULT_LINES), asked.get("chars", DEFAULT_CHARS)
        lines = lines if isinstance(lines, int) and not isinstance(lines, bool) else DEFAULT_LINES
        chars = chars if isinstance(chars, int) and not isinstance(chars, bool) else DEFAULT_CHARS
        return cls(max(0, min(lines, MAX_LINES)), max(1, min(chars, MAX_CHARS)))


def words_key(line: Mapping[str, Any]) -> str | None:
    """Which field holds a line's words: its text, the room's new title, or none."""
    return "text" if "text" in line else "title" if "title" in line else None


def line_text(line: Mapping[str, Any]) -> str:
    """How a line counts against the budget: ``Name: words`` (a joined line's are its kind)."""
    who = (line.get("from") or {}).get("name") or "Chips"
    key = words_key(line)
    words = line[key] if key else line.get("kind", "")
    return f"{who}: {words}"


def fit(lines: Sequence[LineJson], budget: Budget) -> tuple[list[LineJson], bool]:
    """The newest lines that fit the budget, oldest first, and whether any were left out."""
    if budget.lines == 0 or not lines:
        return [], bool(lines)
    kept: list[LineJson] = []
    used = 0
    for line in reversed(lines):
        if len(kept) == budget.lines:
            break
        cost = len(line_text(line)) + 1
        if used + cost > budget.chars:
            if not kept:  # the newest line alone is too long: cut it to the budget
                room = max(
                    0, budget.chars - (len(line_text(line)) - len(line.get("text") or "")) - 1
                )
                kept.append({**line, "text": (line.get("text") or "")[:room], "cut": True})
            break
        kept.append(line)
        used += cost
    kept.reverse()
    return kept, len(kept) < len(lines)
