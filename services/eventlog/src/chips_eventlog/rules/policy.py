"""The autonomy dial as policy: what Chips decides on an approval without asking anyone
(docs/adr/0130).

A harness that takes the dial is at a level, ``L0`` to ``L3``, and its owner writes rules
that ``allow``, ``ask`` (always ask) or ``deny`` an action, optionally only for arguments
that match a pattern. When an ``approval.request`` comes in, :func:`verdict` decides from
the level and the rules alone:

- a matching ``deny`` rule denies, at every level;
- a matching ``ask`` rule sends the card to people, at every level;
- a matching ``allow`` rule allows at ``L2`` and ``L3``; at ``L1`` only an action that
  claims no risk; at ``L0`` never;
- with no rule matching, ``L3`` allows, and the other levels ask.

A harness that does not take the dial (``off``) gets no automatic decision. A decision is
logged at once, after the card, as ``approval.resolved`` by ``system``, naming the level
and the rule that made it and bound to a hash of the exact action and arguments: an
edited request is a new request, decided again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from chips_common.append import Actor
from chips_common.events import ApprovalRequest, ApprovalResolved, HarnessPolicySet, PolicyRule
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, Step
from chips_eventlog.state import Decision, DoorState, PutCard, PutParticipant

SYSTEM = Actor(kind="system", id="system")
LEVELS = ("L0", "L1", "L2", "L3")


@dataclass(frozen=True)
class Verdict:
    """What the dial decided: ``approve`` or ``deny``, at ``level``, by ``rule`` (None when
    the level alone decided)."""

    decision: str
    level: str
    rule: PolicyRule | None


@lru_cache(maxsize=512)
def _pattern(pattern: str) -> re.Pattern[str]:
    """``*`` is anything (newlines too); every other character is itself."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def matches(rule: PolicyRule, action: str, args: str | None) -> bool:
    """Whether a rule is about this action and these arguments. A rule with an ``args``
    pattern matches only a request that says its arguments."""
    if _pattern(rule.action).fullmatch(action) is None:
        return False
    if rule.args is None:
        return True
    return args is not None and _pattern(rule.args).fullmatch(args) is not None


def verdict(
    level: str | None,
    rules: tuple[PolicyRule, ...],
    action: str,
    args: str | None,
    risk: str | None,
) -> Verdict | None:
    """The dial's decision on one approval, or None when people are asked."""
    if level not in LEVELS:  # "off", or a harness connected before the dial was kept
        return None
    assert level is not None
    matching = [r for r in rules if matches(r, action, args)]
    for effect in ("deny", "ask"):
        first = next((r for r in matching if r.effect == effect), None)
        if first is not None:
            return Verdict("deny", level, first) if effect == "deny" else None
    allowing = next((r for r in matching if r.effect == "allow"), None)
    if allowing is not None:
        if level in ("L2", "L3") or (level == "L1" and risk is None):
            return Verdict("approve", level, allowing)
        return None
    return Verdict("approve", level, None) if level == "L3" else None


def bound_to(action: str, args: str | None) -> str:
    """The hash an automatic decision is bound to: the exact action and arguments."""
    text = json.dumps([action, args], ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def auto_answer(s: DoorState, body: ApprovalRequest, ctx: Ctx) -> Step | None:
    """The ``approval.resolved`` the dial logs right after ``body``'s card, or None.

    Decided against the card as the door now keeps it, so an approval somebody already
    answered in the same batch is left alone.
    """
    card = s.card("approval", body.approval_id)
    if card is None or card.answered_by is not None:
        return None
    harness = s.participant(card.harness_id)
    if harness is None:
        return None
    found = verdict(harness.autonomy, harness.rules, body.action, body.args, body.risk)
    if found is None:
        return None
    resolved = ApprovalResolved(
        approval_id=card.id,
        decision="approve" if found.decision == "approve" else "deny",
        autonomy=found.level,
        rule=found.rule,
        bound_to=bound_to(body.action, body.args),
    )
    filled = {"run_id": card.run_id, "space_id": card.space_id}
    answered = replace(card, answered_by=SYSTEM.id, answer=resolved.decision, answered_seq=ctx.seq)
    return Step(resolved, SYSTEM, Decision(filled, [PutCard(answered)]))


def check_client_resolved(body: ApprovalResolved) -> None:
    """What only the dial writes on a decision is refused from anyone else."""
    for name in ("autonomy", "rule", "bound_to"):
        if getattr(body, name) is not None:
            refuse("invalid_event", f"{name} is filled in by Chips on its own decisions", name)


def check_policy_set(s: DoorState, body: HarnessPolicySet, actor: Actor, ctx: Ctx) -> Decision:
    """The harness's owner sets the dial and the rules; nobody else does."""
    harness = s.participant(body.harness_id)
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "harness_id")
    if actor.id != harness.owner_id:
        refuse("forbidden", "a harness's dial and rules are set by its owner")
    changed = harness
    if body.autonomy is not None:
        changed = replace(changed, autonomy=body.autonomy)
    if body.rules is not None:
        changed = replace(changed, rules=tuple(body.rules))
    return Decision(changes=[PutParticipant(changed)])
