"""What a person does from the command line: ``say``, ``spaces`` and ``tail``."""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from chips_cli.output import CliError, Out
from chips_sdk import ChipsError, Client, Http


async def resolve_space(http: Http, space: str) -> tuple[str, str]:
    """A space's id and title, from its id (``spc_…``) or its title (case aside).

    Spaces are listed from the read models, which may be a moment behind a room opened
    just now: a title not found is looked for again for up to three seconds.
    """
    named: list[Any] = []
    for _ in range(12):
        mine = [*await http.spaces(), *await http.spaces(archived=True)]
        if space.startswith("spc_"):
            found = [s for s in mine if s["id"] == space]
            return space, (found[0].get("title") or space) if found else space
        named = [s for s in mine if (s.get("title") or "").casefold() == space.casefold()]
        if named:
            break
        await asyncio.sleep(0.25)
    if not named:
        raise CliError(
            f"none of your spaces is titled {space!r}; `chips spaces` lists them", "not_found"
        )
    if len(named) > 1:
        ids = ", ".join(s["id"] for s in named)
        raise CliError(f"{len(named)} of your spaces are titled {space!r}; give its id: {ids}")
    return str(named[0]["id"]), str(named[0].get("title") or space)


def said_line(title: str, ack: Mapping[str, Any]) -> str:
    """``said in Scout (seq 7, msg_…)``: what `chips trace` and a reply can name it by."""
    got = [f"seq {ack['seq']}"] + ([str(ack["message_id"])] if ack.get("message_id") else [])
    return f"said in {title} ({', '.join(got)})"


async def say(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips say SPACE "words"``: a message.post, answered with its seq.

    With ``--wait``, it listens before it speaks and prints the first thing somebody else
    says in the space after it (a harness's answer), or fails when none comes in time.
    """
    if not http.token:
        raise CliError("saying something needs your token: pass --token or set CHIPS_TOKEN")
    space_id, title = await resolve_space(http, args.space)
    event = {
        "type": "message.post",
        "space_id": space_id,
        "text": args.words,
        "idempotency_key": f"chips-say-{uuid.uuid4().hex}",
    }
    if args.wait is None:
        ack = await http.append(event)
        out.data({**ack, "space_id": space_id}, said_line(title, ack))
        return
    client = Client(args.urls, http.token, name="chips-say")
    try:
        await client.start()
        me = client.participant_id
        heard = client.expect(
            lambda e: (
                e.get("type") == "message.post"
                and e.get("space_id") == space_id
                and (e.get("actor") or {}).get("id") != me
            )
        )
        sent = await client.send(event)
        out.data({**sent, "space_id": space_id}, said_line(title, sent))
        try:
            answer = await asyncio.wait_for(heard, args.wait)
        except TimeoutError:
            raise CliError(
                f"nobody answered in {title} within {args.wait:g} s", "timeout"
            ) from None
        names = {p["participant_id"]: p["name"] for p in await http.participants()}
        out.data(answer, describe(answer, names))
    finally:
        await client.close()


async def approve(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips approve [ID]``: decide an approval card waiting in your rooms or their threads.

    Without an id, the one card waiting (``--wait`` waits for one to come up). ``--deny``
    denies it instead.
    """
    if not http.token:
        raise CliError("deciding needs your token: pass --token or set CHIPS_TOKEN")
    deadline = asyncio.get_running_loop().time() + (args.wait or 0)
    while True:
        waiting = list((await http.get("/v1/approvals"))["approvals"])
        if args.approval_id:
            waiting = [a for a in waiting if a["id"] == args.approval_id]
        if waiting or asyncio.get_running_loop().time() >= deadline:
            break
        await asyncio.sleep(0.25)
    if not waiting:
        if not args.approval_id:
            raise ChipsError("not_found", "no approval is waiting in your rooms or their threads")
        raise ChipsError(*await why_not_waiting(http, args.approval_id))
    if len(waiting) > 1:
        ids = ", ".join(a["id"] for a in waiting)
        raise CliError(f"{len(waiting)} approvals are waiting; name one: {ids}")
    card = waiting[0]
    decision = "deny" if args.deny else "approve"
    event: dict[str, Any] = {
        "type": "approval.resolved",
        "approval_id": card["id"],
        "decision": decision,
        "idempotency_key": f"chips-approve-{uuid.uuid4().hex}",
    }
    if args.note:
        event["note"] = args.note
    ack = await http.append(event)
    action = card["card"].get("action", "")
    out.data(
        {**ack, "approval_id": card["id"], "decision": decision, "action": action},
        f"{'denied' if args.deny else 'approved'} {action} ({card['id']})",
    )


async def why_not_waiting(http: Http, approval_id: str) -> tuple[str, str]:
    """The code and sentence for an approval that is not waiting: what became of it."""
    every = (await http.get("/v1/approvals", waiting="false"))["approvals"]
    card = next((a for a in every if a["id"] == approval_id), None)
    if card is None:
        return not_waiting(approval_id, None, None, {}, datetime.now(UTC))
    state = (await http.run(card["run_id"]))["state"]
    names = {p["participant_id"]: p["name"] for p in await http.participants()}
    return not_waiting(approval_id, card, state, names, datetime.now(UTC))


def not_waiting(
    approval_id: str,
    card: dict[str, Any] | None,
    run_state: str | None,
    names: dict[str, str],
    now: datetime,
) -> tuple[str, str]:
    """Why an approval is not waiting for a decision, as a code and a sentence.

    ``card`` is the approval as ``GET /v1/approvals?waiting=false`` lists it (None when it
    is not in the caller's rooms nor their threads); ``run_state`` is its run's state.
    """
    if card is None:
        return "not_found", f"no approval {approval_id} was asked in your rooms or their threads"
    if card["answered_by"] is not None:
        who = names.get(card["answered_by"], card["answered_by"])
        decided = "approved" if (card["answer"] or {}).get("decision") == "approve" else "denied"
        return "not_waiting", f"approval {approval_id} was decided already: {decided} by {who}"
    expires = card.get("expires_at")
    if expires is not None and datetime.fromisoformat(expires) <= now:
        return "not_waiting", f"approval {approval_id} expired at {expires}: nobody decides it now"
    if run_state not in ("running", "paused"):
        return "not_waiting", f"approval {approval_id} is closed: the run that asked it ended"
    return "not_waiting", f"approval {approval_id} was decided a moment ago; look again"


async def spaces(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips spaces``: the caller's spaces, newest activity first."""
    if not http.token:
        raise CliError("listing your spaces needs your token: pass --token or set CHIPS_TOKEN")
    found = await http.spaces(archived=args.archived)
    rows = [
        f"{s['id']}  {s.get('title') or '(untitled)'}  "
        f"({s.get('kind', 'group')}, {len(s.get('members', []))} in it)"
        for s in found
    ]
    out.data(found, "\n".join(rows) if rows else "no spaces")


def describe(event: dict[str, Any], names: dict[str, str]) -> str:
    """One event as a line of words: who said what, or what happened."""
    who = names.get((event.get("actor") or {}).get("id", ""), "Chips")
    kind = event["type"]
    if kind in ("message.post", "message.new", "message.overheard"):
        return f"{who}: {event.get('text') or '(' + event.get('kind', 'card') + ')'}"
    detail = {
        "run.started": event.get("goal"),
        "run.completed": event.get("summary"),
        "run.failed": event.get("why"),
        "step.log": f"{event.get('title') or event.get('step_id')} {event.get('status')}",
        "approval.request": event.get("action"),
        "approval.resolved": event.get("decision"),
        "question.ask": event.get("prompt"),
        "question.answered": event.get("value") or event.get("text"),
        "space.created": event.get("title"),
        "membership.added": names.get(event.get("participant_id", ""), ""),
        "membership.removed": names.get(event.get("participant_id", ""), ""),
        "participant.joined": event.get("name"),
        "harness.disconnected": names.get(event.get("harness_id", ""), ""),
    }.get(kind)
    return f"{who} · {kind}" + (f": {detail}" if detail else "")


async def tail(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips tail [SPACE]``: follow what is said, live; a dropped socket resumes by seq."""
    if not http.token:
        raise CliError("following needs your token: pass --token or set CHIPS_TOKEN")
    space_id, title = await resolve_space(http, args.space) if args.space else (None, "")
    names = {p["participant_id"]: p["name"] for p in await http.participants()}
    titles = {s["id"]: s.get("title") or "" for s in await http.spaces()}
    client = Client(args.urls, http.token, name="chips-tail", since=args.since)
    events = client.stream()
    try:
        await client.start()
        out.note(f"following {title or 'your spaces'} after seq {client.last_seq}; Ctrl-C stops")
        shown = 0
        async for event in events:
            if event["type"] == "participant.joined":
                names[event["participant_id"]] = event["name"]
            if event["type"] == "space.created" and event.get("space_id"):
                titles[event["space_id"]] = event.get("title") or ""
            if space_id is not None and event.get("space_id") != space_id:
                continue
            room = "" if space_id else f"[{titles.get(event.get('space_id') or '', '')}] "
            out.line(
                event, f"{event['seq']:>6}  {event['ts'][11:19]}  {room}{describe(event, names)}"
            )
            shown += 1
            if args.count is not None and shown >= args.count:
                return
    finally:
        await client.close()
