"""An owner's or admin's commands: a workspace made, people added, invited and changed,
their devices and API keys (docs/adr/0141)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from chips_cli.login import need_token
from chips_cli.output import CliError, Out
from chips_common.config import DEV_OPERATOR_SECRET
from chips_sdk import ChipsError, Http


async def workspace_create(http: Http, args: argparse.Namespace, out: Out) -> None:
    secret = os.environ.get("CHIPS_OPERATOR_SECRET", DEV_OPERATOR_SECRET)
    data = await http.request(
        "POST",
        "/v1/workspaces",
        json={"name": args.name, "owner_name": args.owner},
        headers={"X-Chips-Operator-Secret": secret},
    )
    if not args.env:
        out.data(data, json.dumps(data, indent=2))
        return
    # The owner's terminal: where Chips is and the token, as lines a shell loads.
    out.note(
        f"{args.name} is {data['workspace_id']} and {args.owner} ({data['owner_id']}) its "
        "owner; the token is shown once"
    )
    out.data({**data, "url": http.url}, f"CHIPS_URL={http.url}\nCHIPS_TOKEN={data['token']}")


async def person_add(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    data = await http.post("/v1/participants", {"name": args.name, "role": args.role})
    out.data(data, json.dumps(data, indent=2))


async def person_invite(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips person invite``: a one-time link, shown once (docs/adr/0125)."""
    need_token(args)
    body: dict[str, Any] = {"name": args.name, "role": args.role, "expires_in_days": args.days}
    if args.email:
        body["email"] = args.email
    if args.person:
        body["participant_id"] = args.person
    data = await http.post("/v1/invites", body)
    out.data(
        data,
        f"{data['url']}\n(for {data['name']}, {data['role']}; once, until {data['expires_at']})",
    )


async def person_invites(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    found = (await http.get("/v1/invites"))["invites"]
    rows = [f"{i['id']}  {i['name']}  {i['role']}  until {i['expires_at']}" for i in found]
    out.data(found, "\n".join(rows) if rows else "no open invites")


async def person_withdraw(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    data = await http.request("DELETE", f"/v1/invites/{args.invite_id}")
    out.data(data, f"withdrew {args.invite_id}")


async def person_change(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips person role|deactivate|reactivate``: an owner's or admin's act."""
    need_token(args)
    if args.action == "role":
        change: dict[str, Any] = {"role": args.role}
    else:
        change = {"active": args.action == "reactivate"}
    if args.action == "deactivate" and args.rooms_to:
        change["rooms_to"] = args.rooms_to
    try:
        data = await http.request("PATCH", f"/v1/people/{args.participant_id}", json=change)
    except ChipsError as exc:
        if exc.field != "rooms_to":
            raise
        raise CliError(
            f"{exc.message} (--rooms-to usr_… names who takes them over)", exc.code
        ) from None
    handed = data.get("rooms_handed") or []
    rooms = (
        f"; the rooms they owned ({len(handed)}) are {data.get('rooms_to')}'s now" if handed else ""
    )
    words = {
        "role": f"{args.participant_id} is now {change.get('role')}",
        "deactivate": f"deactivated {args.participant_id}: every device, key and harness of "
        f"theirs is signed out ({len(data.get('disconnected', []))} harnesses){rooms}",
        "reactivate": f"reactivated {args.participant_id}: invite them back with "
        f"chips person invite --person {args.participant_id}",
    }[args.action]
    out.data(data, words)


async def device_list(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    query = f"?participant_id={args.person}" if args.person else ""
    found = (await http.get(f"/v1/devices{query}"))["devices"]
    rows = [
        f"{d['id']}  {d['kind']:<8} {d['name']}{'  (this one)' if d['current'] else ''}"
        f"  last seen {d['last_seen'] or 'never'}"
        for d in found
    ]
    out.data(found, "\n".join(rows) if rows else "no devices")


async def device_revoke(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    data = await http.request("DELETE", f"/v1/devices/{args.device_id}")
    out.data(data, f"revoked {args.device_id}: its sockets are closed")


async def device_code(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    data = await http.post("/v1/pairing-codes", {})
    out.data(data, f"{data['code']}  (chips login {data['code']}, until {data['expires_at']})")


async def api_key(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    data = await http.post("/v1/api-keys", {"name": args.name, "expires_in_days": args.days})
    out.data(data, f"{data['token']}\n(shown once; expires {data['expires_at']})")
