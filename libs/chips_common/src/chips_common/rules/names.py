"""A harness's name is its own in the workspace, case and spaces aside.

``chips declare NAME`` and an @handle find a harness by its name, so two may not share one
(the product's rule for agents, docs/product/websocket.md, Agents, applied to harnesses:
docs/adr/0031). A name that is taken is numbered, the way the product numbers agents: "Scout" then
"Scout 2", "Scout 3".
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_NAME = 80


def name_key(name: str) -> str:
    """What two names are compared by: without spaces, case aside."""
    return "".join(name.split()).casefold()


def free_name(asked: str, taken: Iterable[str]) -> str:
    """``asked`` when no participant has it, else the first free ``asked N`` from 2."""
    keys = {name_key(name) for name in taken}
    if name_key(asked) not in keys:
        return asked
    number = 2
    while True:
        suffix = f" {number}"
        candidate = asked[: MAX_NAME - len(suffix)].rstrip() + suffix
        if name_key(candidate) not in keys:
            return candidate
        number += 1
