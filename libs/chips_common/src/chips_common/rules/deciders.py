"""Who may decide an approval (docs/product/websocket.md, First answer wins).

One rule for the door, which refuses anybody else's decision, and for the notifier, which
tells exactly these people that an approval waits for them (docs/adr/0132): the owner of
the harness whose run asked, and the people the card names (``answerers``).
"""

from __future__ import annotations

from collections.abc import Sequence


def approval_deciders(owner_id: str | None, answerers: Sequence[str] | None) -> list[str]:
    """The people who may decide: the harness's owner first, then the card's answerers in
    the order it names them, each once."""
    found: dict[str, None] = {}
    if owner_id:
        found[owner_id] = None
    for person in answerers or ():
        found.setdefault(person, None)
    return list(found)


def may_decide(person_id: str, owner_id: str | None, answerers: Sequence[str] | None) -> bool:
    """Whether ``person_id`` may decide an approval of the harness owned by ``owner_id``."""
    return person_id in approval_deciders(owner_id, answerers)
