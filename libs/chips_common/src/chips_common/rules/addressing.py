"""Who a message is for: ``addressed_to``, decided once, at append (docs/product/spaces.md).

For a person's message the first rule that applies decides:

1. an @: the harnesses it names; ``@all`` every harness; only people named, no harness;
2. the composer's ``to``: the harnesses picked, or everyone;
3. a reply to a harness's message: that harness;
4. the only harness in the room;
5. where the sender's last message here went ("everyone" stays everyone, as the room's
   harnesses change; harnesses picked by name stay those harnesses); before the first,
   every harness.

A harness's message is for the harnesses it names, picks with ``to`` or answers, and
otherwise for the people (``[]``). ``addressed_to`` lists harness ids, never the sender.

An agent (docs/adr/0070) counts as a harness here: it is addressed, and addresses, as one,
and ``addressed_to`` holds its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from chips_common.rules.handles import TAKERS, Member, harnesses, resolve_mentions

EVERYONE = "everyone"

ChoiceKind = Literal["everyone", "named", "nobody"]


@dataclass(frozen=True)
class Choice:
    """Where a message went, as rule 5 remembers it for the sender's next one."""

    kind: ChoiceKind
    ids: tuple[str, ...] = ()

    def resolve(self, members: Sequence[Member], sender_id: str) -> list[str]:
        present = [h for h in harnesses(members) if h != sender_id]
        if self.kind == "everyone":
            return present
        if self.kind == "named":
            return [h for h in self.ids if h in present]
        return []


@dataclass(frozen=True)
class Addressed:
    addressed_to: list[str]
    mentions: list[str]
    choice: Choice | None  # what to remember for rule 5 (None: leave the memory as it is)
    rule: str  # which rule decided, for the audit and the tests


def address(
    *,
    sender: Member,
    text: str,
    members: Sequence[Member],
    to: Sequence[str] | None = None,
    reply_author: Member | None = None,
    last_choice: Choice | None = None,
) -> Addressed:
    """Decide ``addressed_to`` and ``mentions`` for a message said in a room of ``members``."""
    mentions, said_all = resolve_mentions(text, members)
    kinds = {m.id: m.kind for m in members}
    others = [h for h in harnesses(members) if h != sender.id]
    named = [m for m in mentions if kinds.get(m) in TAKERS and m != sender.id]
    picked = list(dict.fromkeys(t for t in (to or ()) if t in others))
    to_everyone = EVERYONE in (to or ())
    answers = (
        reply_author.id
        if reply_author is not None and reply_author.kind in TAKERS and reply_author.id in others
        else None
    )

    if sender.kind in TAKERS:
        if said_all:
            return Addressed(others, mentions, None, "all")
        chosen = list(dict.fromkeys([*named, *picked, *([answers] if answers else [])]))
        return Addressed(chosen, mentions, None, "named" if chosen else "people")

    if said_all:
        return Addressed(others, mentions, Choice("everyone"), "1:all")
    if named:
        return Addressed(named, mentions, Choice("named", tuple(named)), "1:mention")
    if mentions:  # only people were named
        return Addressed([], mentions, Choice("nobody"), "1:people")
    if to_everyone:
        return Addressed(others, mentions, Choice("everyone"), "2:everyone")
    if picked:
        return Addressed(picked, mentions, Choice("named", tuple(picked)), "2:to")
    if answers:
        return Addressed([answers], mentions, Choice("named", (answers,)), "3:reply")
    if len(others) == 1:
        return Addressed(others, mentions, None, "4:only")
    remembered = last_choice or Choice("everyone")
    return Addressed(remembered.resolve(members, sender.id), mentions, None, "5:last")
