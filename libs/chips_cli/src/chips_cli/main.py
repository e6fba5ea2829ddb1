"""``chips``: the command line, written on the SDK (``chips_sdk``).

The server is ``CHIPS_URL`` (default: the local stack's gateway, ``http://127.0.0.1:8080``,
or the port ``CHIPS_PORT_BASE`` moves it to); a token comes from
``--token``, else ``CHIPS_TOKEN`` (a person's), else ``CHIPS_HARNESS_TOKEN``. Creating a
workspace is an operator's act and uses ``CHIPS_OPERATOR_SECRET`` (the development default
works against ``make up``). Every command takes ``--json``; every error is one line on
stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from chips_cli import admin, doctor, harnesses, login, people, trace
from chips_cli.login import need_token, token_of
from chips_cli.output import CliError, Out
from chips_common.events import AUTONOMY_LEVELS, CAPABILITIES
from chips_common.local import run_dir
from chips_sdk import ChipsError, Http, SettingError, gateway_urls

Command = Callable[[Http, argparse.Namespace, Out], Awaitable[None]]


def spans_file(args: argparse.Namespace) -> Path:
    path = Path(args.file or os.environ.get("CHIPS_TRACE_FILE") or run_dir() / "traces.jsonl")
    if not path.exists():
        raise CliError(
            f"no trace file at {path}: is Chips up (`make up`)? "
            "Or set CHIPS_TRACE_FILE, or pass --file or --jaeger"
        )
    return path


def read_traces(args: argparse.Namespace, wanted: trace.Wanted) -> dict[str, Any]:
    if args.jaeger:
        spans = trace.spans_from_jaeger(args.jaeger, wanted)
    else:
        spans = trace.spans_from_file(spans_file(args))
    return dict(trace.traces_for(wanted, spans))


async def wanted_of(http: Http, raw: str) -> trace.Wanted:
    """What ``chips trace`` was given; a seq is read back from the log, in your workspace."""
    try:
        wanted = trace.parse_id(raw)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if wanted.kind != "seq":
        return wanted
    if not http.token:
        raise CliError(
            "a seq is one workspace's: give your token (--token or CHIPS_TOKEN) to trace it, "
            "or give its message id (msg_…) or trace id"
        )
    seq = int(wanted.id)
    found = (await http.events(since=seq - 1, limit=1))["events"]
    if not found or found[0]["seq"] != seq:
        raise CliError(f"no event at seq {seq} in your rooms: that seq is unknown", "not_found")
    event = found[0]
    when = datetime.fromisoformat(event["ts"]).timestamp() if event.get("ts") else None
    return trace.of_event(wanted, event, when)


async def trace_message(http: Http, args: argparse.Namespace, out: Out) -> None:
    """Find the spans, waiting for them while they may still be arriving (--wait)."""
    wanted = await wanted_of(http, args.id)
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        traces = await asyncio.to_thread(read_traces, args, wanted)
        waited = loop.time() - started
        if waited >= args.wait or not trace.keep_waiting(wanted, traces, time.time()):
            break
        await asyncio.sleep(0.5)
    if not traces:
        source = args.jaeger or str(spans_file(args))
        code, sentence = trace.not_found(wanted, time.time(), waited, source)
        raise CliError(sentence, code)
    out.data({"traces": traces}, draw_traces(traces))


def draw_traces(traces: dict[str, Any]) -> str:
    shown = []
    for tid, found in traces.items():
        drawn = trace.render(tid, found)
        missing = trace.incomplete(found)
        if missing:
            drawn += (
                f"\nincomplete: {'; '.join(missing)} (still arriving: services write spans in "
                "batches every few seconds, so run `chips trace` again in a moment)"
            )
        shown.append(drawn)
    return "\n\n".join(shown)


def render_snippet(segments: list[dict[str, Any]], bold: bool) -> str:
    """A hit's snippet on one line, the matched words in bold (or between asterisks)."""
    start, stop = ("\x1b[1m", "\x1b[0m") if bold else ("*", "*")
    line = "".join(f"{start}{s['text']}{stop}" if s.get("match") else s["text"] for s in segments)
    return " ".join(line.split())


async def search(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips search "words"``: what was said in your rooms, newest first (GET /v1/search)."""
    need_token(args)
    params: dict[str, Any] = {"q": args.words, "limit": args.limit}
    for name in ("space", "cursor", "after_seq"):
        value = getattr(args, name)
        if value is not None:
            params["space_id" if name == "space" else name] = value
    data = await http.get("/v1/search", **params)
    bold = sys.stdout.isatty()
    lines = []
    for hit in data["hits"]:
        what = hit["message_id"] or f"{hit['run_id']} step {hit['step_id']}"
        lines.append(
            f"{hit['ts'][:16].replace('T', ' ')}  {hit['space_id']}  {what}  seq {hit['seq']}"
        )
        heard = " (heard in a voice note)" if hit.get("voice_note") else ""
        lines.append(f"    {render_snippet(hit['snippet'], bold)}{heard}")
    if not data["hits"]:
        lines.append(f"nothing found (as of seq {data['as_of_seq']})")
    if data.get("next_cursor"):
        lines.append(f"more: chips search {json.dumps(args.words)} --cursor {data['next_cursor']}")
    out.data(data, "\n".join(lines))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chips", description="Talk to a Chips server.")
    try:
        # The SDK's rule, so a harness and the command find the same gateway.
        default_url = ",".join(gateway_urls())
    except SettingError as exc:
        parser.error(str(exc))
    url_help = (
        "the server, or several comma-separated (default: $CHIPS_URL, else the local "
        "stack's gateway, moved by $CHIPS_PORT_BASE: %(default)s)"
    )
    token_help = "a token (default: $CHIPS_TOKEN, else $CHIPS_HARNESS_TOKEN)"
    parser.add_argument("--url", default=default_url, help=url_help)
    parser.add_argument("--token", help=token_help)
    parser.add_argument("--json", action="store_true", help="answer in JSON")
    # --url, --token and --json are taken after the command too (`chips doctor --url X`);
    # SUPPRESS keeps the top-level value when one is absent there.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help=url_help)
    common.add_argument("--token", default=argparse.SUPPRESS, help=token_help)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)

    def command(sub: Any, name: str, run: Command, help_: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_, parents=[common])
        p.set_defaults(run=run)
        return p

    workspace = commands.add_parser("workspace", help="workspaces").add_subparsers(
        dest="action", required=True
    )
    create = command(
        workspace, "create", admin.workspace_create, "create a workspace and its owner (operator)"
    )
    create.add_argument("--name", required=True)
    create.add_argument("--owner", required=True, help="the owner's name")
    create.add_argument(
        "--env",
        action="store_true",
        help="print CHIPS_URL and the owner's CHIPS_TOKEN as lines a shell loads "
        "(set -a; . ./FILE; set +a), not the JSON",
    )

    person = commands.add_parser("person", help="people").add_subparsers(
        dest="action", required=True
    )
    add = command(person, "add", admin.person_add, "add a person (workspace owner or admin)")
    add.add_argument("--name", required=True)
    add.add_argument("--role", default="member", choices=["admin", "member", "guest"])
    inv = command(
        person, "invite", admin.person_invite, "invite somebody: a one-time link (owner or admin)"
    )
    inv.add_argument("--name", required=True)
    inv.add_argument("--email")
    inv.add_argument("--role", default="member", choices=["admin", "member", "guest"])
    inv.add_argument("--days", type=float, default=7, help="how long it works (default 7)")
    inv.add_argument("--person", help="a person already here (usr_…), invited back in")
    role = command(person, "role", admin.person_change, "change a person's role (owner or admin)")
    role.add_argument("participant_id", metavar="ID")
    role.add_argument("role", choices=["admin", "member", "guest"])
    for act, words in (
        ("deactivate", "sign out every device, key and harness of a person; keep their words"),
        ("reactivate", "let a deactivated person be invited back in"),
    ):
        changed = command(person, act, admin.person_change, words)
        changed.add_argument("participant_id", metavar="ID")
        if act == "deactivate":
            changed.add_argument(
                "--rooms-to",
                metavar="ID",
                help="the active person (usr_…) who takes over the group rooms they own "
                "(needed when they own any)",
            )
    command(person, "invites", admin.person_invites, "the open invites (owner or admin)")
    withdraw = command(person, "withdraw", admin.person_withdraw, "withdraw an open invite")
    withdraw.add_argument("invite_id", metavar="ID")

    signin = command(
        commands, "login", login.login, "pair this command line as your device (invite or code)"
    )
    signin.add_argument("invite", metavar="INVITE", help="the invite link, or a pairing code")
    signin.add_argument("--name", default="Command line", help="this device's name")
    command(commands, "logout", login.logout, "revoke this device and forget its key")
    device = commands.add_parser("device", help="your devices and keys").add_subparsers(
        dest="action", required=True
    )
    listed = command(device, "list", admin.device_list, "your devices and API keys")
    listed.add_argument("--person", help="another person's (owner or admin)")
    gone = command(
        device, "revoke", admin.device_revoke, "revoke a device or key; its sockets close"
    )
    gone.add_argument("device_id", metavar="ID")
    command(device, "code", admin.device_code, "a pairing code for another device, for ten minutes")
    key = command(device, "api-key", admin.api_key, "a named, expiring token for a script")
    key.add_argument("--name", required=True)
    key.add_argument("--days", type=float, default=90)

    connect = commands.add_parser(
        "connect",
        help="connect a harness of your own (any person of the workspace but a guest)",
        description="Connect a harness of your own. Any person of the workspace but a guest "
        "may: the harness is theirs, with a direct space between them.",
    ).add_subparsers(dest="kind", required=True)
    custom = command(
        connect,
        "custom",
        harnesses.connect_custom,
        "a harness of your own, over HTTP and the socket",
    )
    custom.add_argument("--name", required=True)
    custom.add_argument(
        "--no-dial",
        action="store_true",
        help="it does not take the autonomy dial: its own permission model decides",
    )
    custom.add_argument(
        "--autonomy",
        default="L1",
        choices=[a for a in AUTONOMY_LEVELS if a != "off"],
        help="the dial's level it starts at (default: %(default)s)",
    )

    declared = command(
        commands,
        "declare",
        harnesses.declare,
        "say what a harness does (its owner; the list replaces the last one)",
    )
    declared.add_argument("name", metavar="NAME", help="the harness's name, or its hrn_ id")
    # Checked in declare(), not by choices=: argparse refuses an empty list with choices.
    declared.add_argument(
        "capabilities",
        metavar="capability",
        nargs="*",
        help="any of: " + ", ".join(CAPABILITIES) + " (none clears them)",
    )

    gone = command(
        commands,
        "disconnect",
        harnesses.disconnect,
        "withdraw a harness's tokens and close its sockets",
    )
    gone.add_argument("name", metavar="NAME", help="the harness's name, or its hrn_ id")

    dialled = command(
        commands,
        "dial",
        harnesses.dial,
        "show a harness's autonomy dial and rules, or set its level (its owner)",
    )
    dialled.add_argument("name", metavar="NAME", help="the harness's name, or its hrn_ id")
    dialled.add_argument(
        "level", metavar="LEVEL", nargs="?", choices=list(AUTONOMY_LEVELS), help="off, L0…L3"
    )

    ruled = command(
        commands,
        "rule",
        harnesses.rule,
        "allow, always ask or deny an action for a harness, or remove that rule (its owner)",
    )
    ruled.add_argument("name", metavar="NAME", help="the harness's name, or its hrn_ id")
    ruled.add_argument("effect", choices=["allow", "ask", "deny", "remove"])
    ruled.add_argument("action", metavar="ACTION", help="the action's name; * is anything")
    ruled.add_argument(
        "args", metavar="ARGS", nargs="?", help="only for arguments like this; * is anything"
    )

    command(commands, "doctor", doctor.run, "check the server, the token, the socket and the clock")

    say = command(commands, "say", people.say, "say something in a space")
    say.add_argument("space", metavar="SPACE", help="the space's id (spc_…) or its title")
    say.add_argument("words", metavar="WORDS")
    say.add_argument(
        "--wait",
        type=float,
        nargs="?",
        const=60.0,
        metavar="SECONDS",
        help="then print the first answer (waiting up to SECONDS, default 60)",
    )

    decide = command(commands, "approve", people.approve, "decide an approval card")
    decide.add_argument(
        "approval_id", metavar="ID", nargs="?", help="the card (default: the one waiting)"
    )
    decide.add_argument("--deny", action="store_true", help="deny it instead")
    decide.add_argument("--note", help="a word on why")
    decide.add_argument(
        "--wait",
        type=float,
        nargs="?",
        const=60.0,
        default=0.0,
        metavar="SECONDS",
        help="wait for a card to come up (up to SECONDS, default 60)",
    )

    spaces = command(commands, "spaces", people.spaces, "your spaces, newest activity first")
    spaces.add_argument("--archived", action="store_true", help="list the archived ones")

    tail = command(commands, "tail", people.tail, "follow what is said, live, resuming by seq")
    tail.add_argument("space", metavar="SPACE", nargs="?", help="only this space (id or title)")
    tail.add_argument("--since", type=int, help="start after this seq (default: from now)")
    tail.add_argument("--count", type=int, help="stop after this many events")

    traced = command(
        commands, "trace", trace_message, "a message's trace, as a tree, by any id you have"
    )
    traced.add_argument(
        "id",
        metavar="ID",
        help="a message id (msg_…, as chips say prints it), a trace id (an ack's trace_id) "
        "or a seq (of your workspace)",
    )
    traced.add_argument(
        "--wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="wait this long for spans still arriving (default: %(default)s)",
    )
    traced.add_argument(
        "--file",
        help="the spans file the services write (default: $CHIPS_TRACE_FILE, else "
        "traces.jsonl in the run directory of `make up`, .run/ of this checkout)",
    )
    traced.add_argument("--jaeger", help="a Jaeger query URL to read the trace from instead")

    found = command(
        commands, "search", search, "find words said in your rooms: every word, the last a prefix"
    )
    found.add_argument("words", help='what to look for, in quotes: "invoice acm"')
    found.add_argument("--space", help="only this room (spc_…) and its threads")
    found.add_argument("--limit", type=int, default=20, help="hits per page (1 to 100)")
    found.add_argument("--cursor", help="the next page, as the last page said")
    found.add_argument("--after-seq", type=int, help="answer as of at least this seq")
    return parser


async def run(args: argparse.Namespace, out: Out) -> None:
    urls = [u for u in args.url.split(",") if u]
    args.urls = urls
    token = token_of(args)
    if token is None and args.run is not login.login and (device := login.read_device()):
        token = await login.session_token(device)  # the device chips login paired
        if "CHIPS_URL" not in os.environ and args.url == build_parser().get_default("url"):
            urls = args.urls = [device["url"]]
    async with Http(urls[0], token) as http:
        await args.run(http, args, out)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    out = Out(json_mode=args.json)
    try:
        asyncio.run(run(args, out))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (`chips trace ID | head`): it has what it wanted. Point
        # stdout at nothing so that flushing it on the way out does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except CliError as exc:
        out.fail(str(exc), exc.code)
    except ChipsError as exc:
        out.fail(f"{exc.code}: {exc.message}", exc.code)
    except Exception as exc:  # a bug of ours: one line unless asked for the traceback
        if os.environ.get("CHIPS_DEBUG"):
            traceback.print_exc()
        out.fail(f"unexpected {type(exc).__name__}: {exc} (CHIPS_DEBUG=1 shows where)", "bug")


if __name__ == "__main__":
    main()
