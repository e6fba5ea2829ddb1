"""The commands about harnesses: connect one, declare what it can do, disconnect it, and
set its dial and its owner's rules (docs/adr/0141)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from chips_cli.login import need_token
from chips_cli.output import CliError, Out
from chips_common.events import CAPABILITIES
from chips_sdk import Http


async def connect_custom(http: Http, args: argparse.Namespace, out: Out) -> None:
    """The four lines a harness is given. ``--no-dial``: it does not take the autonomy
    dial (its own permission model decides), so its hello says ``autonomy: "off"``."""
    need_token(args)
    autonomy = "off" if args.no_dial else args.autonomy
    data = await http.post("/v1/harnesses", {"name": args.name, "autonomy": autonomy})
    lines = {
        "CHIPS_URL": data.get("url") or http.url,
        "CHIPS_HARNESS_ID": data["harness_id"],
        "CHIPS_HARNESS_TOKEN": data["token"],
        "CHIPS_SPACE_ID": data["space_id"],
    }
    if data["name"] != args.name:
        out.note(f"{args.name} is taken in this workspace: this harness is {data['name']}")
    out.data(
        {**lines, "name": data["name"], "autonomy": data.get("autonomy", autonomy)},
        "\n".join(f"{k}={v}" for k, v in lines.items()),
    )


async def find_harness(http: Http, name: str) -> dict[str, Any]:
    """A harness by its name (case aside) or its ``hrn_`` id."""
    directory = await http.participants()
    harnesses = [p for p in directory if p["kind"] == "harness"]
    if name.startswith("hrn_"):
        found = [p for p in harnesses if p["participant_id"] == name]
    else:
        found = [p for p in harnesses if p["name"].casefold() == name.casefold()]
    if not found:
        raise CliError(f"no harness is called {name!r} in this workspace")
    if len(found) > 1:
        ids = ", ".join(p["participant_id"] for p in found)
        raise CliError(f"{len(found)} harnesses are called {name!r}; name one by its id: {ids}")
    return dict(found[0])


async def declare(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips declare NAME capability…``: what a harness does
    (docs/product/jacobian-channel.md)."""
    need_token(args)
    unknown = [c for c in args.capabilities if c not in CAPABILITIES]
    if unknown:
        raise CliError(
            f"{', '.join(unknown)}: not a capability; choose from {', '.join(CAPABILITIES)}"
        )
    harness = await find_harness(http, args.name)
    harness_id = harness["participant_id"]
    data = await http.request(
        "PUT",
        f"/v1/harnesses/{harness_id}/capabilities",
        json={"capabilities": list(dict.fromkeys(args.capabilities))},
    )
    result = {"harness_id": harness_id, "capabilities": data["capabilities"]}
    out.data(result, json.dumps(result, indent=2))


async def disconnect(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips disconnect NAME``: withdraw the harness's tokens; its sockets close."""
    need_token(args)
    harness = await find_harness(http, args.name)
    data = await http.post(f"/v1/harnesses/{harness['participant_id']}/disconnect")
    out.data(
        {**data, "name": harness["name"]},
        f"{harness['name']} is disconnected: its token is withdrawn and its sockets are "
        "closed. Take its four lines out of where it runs.",
    )


def policy_lines(name: str, policy: dict[str, Any]) -> str:
    """The dial and the rules, one line each, in the order they were written."""
    lines = [f"{name}: autonomy {policy['autonomy']}"]
    for r in policy["rules"]:
        args = f" {r['args']!r}" if r.get("args") is not None else ""
        lines.append(f"  {r['effect']:<5} {r['action']}{args}")
    if not policy["rules"]:
        lines.append("  no rules: every approval is asked (L3 allows what no rule names)")
    return "\n".join(lines)


async def dial(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips dial NAME [LEVEL]``: show the harness's dial and rules, or set its level
    (its owner; docs/adr/0130)."""
    need_token(args)
    harness = await find_harness(http, args.name)
    path = f"/v1/harnesses/{harness['participant_id']}/policy"
    if args.level is None:
        policy = await http.get(path)
    else:
        policy = await http.request("PUT", path, json={"autonomy": args.level})
    out.data(policy, policy_lines(harness["name"], policy))


async def rule(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips rule NAME allow|ask|deny|remove ACTION [ARGS]``: write one of the owner's
    rules; a rule for the same action and arguments is replaced (docs/adr/0130)."""
    need_token(args)
    harness = await find_harness(http, args.name)
    path = f"/v1/harnesses/{harness['participant_id']}/policy"
    policy = await http.get(path)
    same = {"action": args.action, "args": args.args}
    rules = [r for r in policy["rules"] if {"action": r["action"], "args": r.get("args")} != same]
    if args.effect == "remove":
        if len(rules) == len(policy["rules"]):
            raise CliError(f"{harness['name']} has no rule for {args.action} with those arguments")
    else:
        written = {"action": args.action, "effect": args.effect}
        if args.args is not None:
            written["args"] = args.args
        rules.append(written)
    policy = await http.request("PUT", path, json={"rules": rules})
    out.data(policy, policy_lines(harness["name"], policy))
