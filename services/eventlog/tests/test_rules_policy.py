"""The autonomy dial as policy (rules/policy.py, docs/adr/0130): the verdict alone, then
through the door."""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.events import PolicyRule
from chips_eventlog.rules.policy import bound_to, matches, verdict

pytestmark = pytest.mark.unit


def rule(effect: str, action: str = "jacobian.shell.execute", args: str | None = None) -> Any:
    return PolicyRule(action=action, args=args, effect=effect)  # type: ignore[arg-type]


SHELL = "jacobian.shell.execute"


# --- the verdict ----------------------------------------------------------------------


def test_an_allow_rule_allows_at_l2_with_the_rule_named() -> None:
    allow = rule("allow", args="ls *")
    found = verdict("L2", (allow,), SHELL, "ls -la", "external")
    assert found is not None
    assert (found.decision, found.level, found.rule) == ("approve", "L2", allow)


def test_the_same_action_with_other_arguments_is_asked() -> None:
    assert verdict("L2", (rule("allow", args="ls *"),), SHELL, "rm -rf /", None) is None


def test_a_rule_with_an_args_pattern_needs_the_request_to_say_its_arguments() -> None:
    assert verdict("L2", (rule("allow", args="ls *"),), SHELL, None, None) is None


def test_a_rule_without_args_matches_any_arguments() -> None:
    found = verdict("L2", (rule("allow"),), SHELL, "anything at all", None)
    assert found is not None and found.decision == "approve"


def test_deny_wins_over_allow_and_ask_wins_over_allow() -> None:
    both = (rule("allow"), rule("deny", args="rm *"))
    denied = verdict("L2", both, SHELL, "rm -rf /", None)
    assert denied is not None and (denied.decision, denied.rule) == ("deny", both[1])
    asked = (rule("allow"), rule("ask", args="git push*"))
    assert verdict("L3", asked, SHELL, "git push --force", None) is None


def test_each_level() -> None:
    allow = (rule("allow"),)
    assert verdict("L0", allow, SHELL, "ls", None) is None  # L0 asks every time
    assert verdict("L1", allow, SHELL, "ls", None) is not None  # no risk claimed
    assert verdict("L1", allow, SHELL, "ls", "external") is None  # a risk is asked
    assert verdict("L2", allow, SHELL, "ls", "external") is not None
    assert verdict("L2", (), SHELL, "ls", None) is None  # no rule: asked
    by_level = verdict("L3", (), SHELL, "ls", "external")  # no rule: the level allows
    assert by_level is not None and (by_level.decision, by_level.rule) == ("approve", None)


def test_deny_acts_at_every_level_but_off() -> None:
    deny = (rule("deny"),)
    for level in ("L0", "L1", "L2", "L3"):
        found = verdict(level, deny, SHELL, "ls", None)
        assert found is not None and found.decision == "deny", level
    assert verdict("off", deny, SHELL, "ls", None) is None
    assert verdict(None, deny, SHELL, "ls", None) is None
    assert verdict("off", (), SHELL, "ls", None) is None


def test_a_star_is_anything_and_nothing_else_is_special() -> None:
    assert matches(rule("allow", action="jacobian.shell.*"), SHELL, None)
    assert not matches(rule("allow", action="jacobian.shell"), SHELL, None)
    assert matches(rule("allow", args="echo [a]?"), SHELL, "echo [a]?")
    assert not matches(rule("allow", args="echo [a]?"), SHELL, "echo a!")
    assert matches(rule("allow", args="cat *"), SHELL, "cat a\nb")


def test_the_binding_is_the_exact_action_and_arguments() -> None:
    assert bound_to(SHELL, "ls") == bound_to(SHELL, "ls")
    assert bound_to(SHELL, "ls") != bound_to(SHELL, "ls ")
    assert bound_to(SHELL, None) != bound_to(SHELL, "")
    assert bound_to(SHELL, "ls").startswith("sha256:")


# --- through the door -----------------------------------------------------------------


def policy(w: Any, **fields: Any) -> dict[str, Any]:
    return {"type": "harness.policy_set", "harness_id": w.H1, **fields}


def approval(approval_id: str = "ap1", **fields: Any) -> dict[str, Any]:
    return {
        "type": "approval.request",
        "run_id": "run_1",
        "approval_id": approval_id,
        "action": SHELL,
        **fields,
    }


def test_at_l2_a_rule_allows_the_moment_the_card_goes_up(w: Any) -> None:
    w.ok(
        w.p(w.OWN),
        policy(w, autonomy="L2", rules=[{"action": SHELL, "args": "ls *", "effect": "allow"}]),
    )
    w.run("run_1")
    logged = w.ok(w.h(w.H1), approval(args="ls -la"))
    assert [e["type"] for e in logged] == ["approval.request", "approval.resolved"]
    resolved = logged[1]
    assert resolved["actor"] == {"kind": "system", "id": "system"}
    assert resolved["decision"] == "approve"
    assert resolved["autonomy"] == "L2"
    assert resolved["rule"] == {"action": SHELL, "args": "ls *", "effect": "allow"}
    assert resolved["bound_to"] == bound_to(SHELL, "ls -la")
    assert (resolved["run_id"], resolved["space_id"]) == ("run_1", w.room)
    # A person's decision after it is refused naming who was first.
    w.says_no(
        w.p(w.OWN),
        {"type": "approval.resolved", "approval_id": "ap1", "decision": "deny"},
        "invalid_event",
        "first by system (approve)",
    )


def test_other_arguments_are_asked(w: Any) -> None:
    w.ok(
        w.p(w.OWN),
        policy(w, autonomy="L2", rules=[{"action": SHELL, "args": "ls *", "effect": "allow"}]),
    )
    w.run("run_1")
    logged = w.ok(w.h(w.H1), approval(args="rm -rf /"))
    assert [e["type"] for e in logged] == ["approval.request"]
    w.ok(w.p(w.OWN), {"type": "approval.resolved", "approval_id": "ap1", "decision": "deny"})


def test_a_harness_that_does_not_take_the_dial_is_always_asked(w: Any) -> None:
    w.ok(w.p(w.OWN), policy(w, rules=[{"action": SHELL, "effect": "deny"}]))
    w.run("run_1")
    assert len(w.ok(w.h(w.H1), approval())) == 1


def test_only_the_owner_sets_the_dial(w: Any) -> None:
    w.says_no(w.p(w.ADM), policy(w, autonomy="L3"), "forbidden", "set by its owner")
    w.says_no(w.h(w.H1), policy(w, autonomy="L3"), "forbidden", "set by its owner")
    w.says_no(w.p(w.OWN), {**policy(w, autonomy="L3"), "harness_id": w.OWN}, "not_found", "no such")


def test_a_policy_keeps_what_it_does_not_say(w: Any) -> None:
    w.ok(w.p(w.OWN), policy(w, autonomy="L2"))
    w.ok(w.p(w.OWN), policy(w, rules=[{"action": SHELL, "effect": "allow"}]))
    scout = w.state.participant(w.H1)
    assert scout.autonomy == "L2" and [r.effect for r in scout.rules] == ["allow"]
    w.ok(w.p(w.OWN), policy(w, rules=[]))
    assert w.state.participant(w.H1).rules == ()
    w.says_no(w.p(w.OWN), policy(w), "invalid_event", "the autonomy, the rules, or both")


def test_nobody_else_writes_what_the_dial_fills_in(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), approval())
    w.says_no(
        w.p(w.OWN),
        {
            "type": "approval.resolved",
            "approval_id": "ap1",
            "decision": "approve",
            "rule": {"action": SHELL, "effect": "allow"},
        },
        "invalid_event",
        "rule is filled in by Chips",
    )
