"""The autonomy dial as policy (docs/adr/0130): the owner's level and rules, over HTTP and
the command line, decide approvals at the door, and say so in the log."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_cli_kit import one_line_error, run
from tests.e2e.test_run_cards import approval, decide
from tests.e2e.test_runs import harness_room, start

SHELL = "jacobian.shell.execute"


def policy_of(harness: Identity) -> str:
    return f"/v1/harnesses/{harness.participant_id}/policy"


async def set_policy(api: Api, who: Identity, harness: Identity, **body: Any) -> Any:
    return await api.http.put(policy_of(harness), json=body, headers=api.auth(who))


def binding(action: str, args: str | None) -> str:
    text = json.dumps([action, args], ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


async def test_at_l2_a_rule_allows_at_once_and_other_arguments_are_asked(stack, api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    allow_ls = {"action": SHELL, "args": "ls *", "effect": "allow"}
    r = await set_policy(api, owner, jacobian, autonomy="L2", rules=[allow_ls])
    assert r.status_code == 200, r.text
    assert (r.json()["autonomy"], r.json()["rules"]) == ("L2", [allow_ls])

    sock = await Socket.open(stack.gateway_a, jacobian)
    assert sock.hello_frame is not None and sock.hello_frame["autonomy"] == "L2"
    await sock.subscribe(owner.workspace_id)
    run_id = await start(api, jacobian, room)

    allowed = await approval(api, jacobian, run_id, args="ls -la build/")
    frame = await sock.wait_for(
        lambda f: (
            f["frame"] == "event"
            and f["event"]["type"] == "approval.resolved"
            and f["event"]["approval_id"] == allowed
        )
    )
    resolved = frame["event"]
    assert resolved["actor"] == {"kind": "system", "id": "system"}
    assert (resolved["decision"], resolved["autonomy"], resolved["rule"]) == (
        "approve",
        "L2",
        allow_ls,
    )
    assert resolved["bound_to"] == binding(SHELL, "ls -la build/")
    await api.refused(owner, decide(allowed, "deny"), "invalid_event", "first by system (approve)")

    # The same action with other arguments is asked: nobody decided it, so the owner does.
    asked = await approval(api, jacobian, run_id, args="rm -rf build/")
    await api.append(owner, decide(asked, "deny"))
    log = await api.read(owner, space_id=room)
    decided = [e for e in log if e["type"] == "approval.resolved"]
    assert [(e["approval_id"], e["actor"]["kind"]) for e in decided] == [
        (allowed, "system"),
        (asked, "person"),
    ]
    assert "rule" not in decided[1]
    await sock.close()


async def test_at_l1_the_same_rule_asks_a_risky_action_and_a_deny_rule_denies(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)  # connected at L1, the default
    rules = [
        {"action": SHELL, "effect": "allow"},
        {"action": "jacobian.mail.*", "effect": "deny"},
    ]
    assert (await set_policy(api, owner, jacobian, rules=rules)).status_code == 200
    run_id = await start(api, jacobian, room)
    risky = await approval(api, jacobian, run_id, args="ls", risk="external")
    mail = await approval(api, jacobian, run_id, action="jacobian.mail.send", args="to: all")
    log = await api.read(owner, space_id=room)
    decided = {e["approval_id"]: e for e in log if e["type"] == "approval.resolved"}
    assert risky not in decided
    assert decided[mail]["decision"] == "deny" and decided[mail]["autonomy"] == "L1"
    assert decided[mail]["rule"] == rules[1]


async def test_only_the_owner_sees_and_sets_the_dial(api: Api) -> None:
    owner, jacobian, _ = await harness_room(api)
    admin = await api.add_person(owner, "Ada Admin", role="admin")
    r = await set_policy(api, admin, jacobian, autonomy="L3")
    assert (r.status_code, r.json()["code"]) == (403, "forbidden"), r.text
    assert "set by its owner" in r.json()["message"]
    r = await api.http.get(policy_of(jacobian), headers=api.auth(admin))
    assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    r = await api.http.get(policy_of(jacobian), headers=api.auth(jacobian))
    assert r.json() == {"harness_id": jacobian.participant_id, "autonomy": "L1", "rules": []}
    r = await set_policy(api, owner, jacobian, rules=[{"action": SHELL, "effect": "maybe"}])
    assert r.status_code in (400, 422) and "Traceback" not in r.text


async def test_the_command_line_sets_the_dial_and_the_rules(stack, api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    url = stack.gateway_a
    done = await run(url, "dial", "Jacobian", "L2", token=owner.token)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Jacobian: autonomy L2")
    done = await run(url, "rule", "Jacobian", "allow", SHELL, "git status*", token=owner.token)
    assert done.returncode == 0, done.stderr
    assert f"allow {SHELL} 'git status*'" in done.stdout
    done = await run(url, "--json", "rule", "Jacobian", "deny", SHELL, token=owner.token)
    assert [r["effect"] for r in json.loads(done.stdout)["rules"]] == ["allow", "deny"]
    shown = json.loads((await run(url, "--json", "dial", "Jacobian", token=owner.token)).stdout)
    assert shown["autonomy"] == "L2" and len(shown["rules"]) == 2

    # The deny with no arguments wins over the allow, whatever the arguments.
    run_id = await start(api, jacobian, room)
    card = await approval(api, jacobian, run_id, args="git status -s")
    log = await api.read(owner, space_id=room)
    assert [e["decision"] for e in log if e["type"] == "approval.resolved"] == ["deny"]
    await api.refused(owner, decide(card), "invalid_event", "first by system (deny)")

    done = await run(url, "rule", "Jacobian", "remove", SHELL, token=owner.token)
    assert done.returncode == 0 and "deny" not in done.stdout, done.stdout
    one_line_error(
        await run(url, "rule", "Jacobian", "remove", SHELL, token=owner.token), "has no rule"
    )
