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
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from chips_cli import doctor, people, trace
from chips_cli.output import CliError, Out
from chips_common.config import DEV_OPERATOR_SECRET
from chips_common.events import AUTONOMY_LEVELS, CAPABILITIES
from chips_common.local import LocalConfigError, local_gateway_url, run_dir
from chips_sdk import ChipsError, Http

Command = Callable[[Http, argparse.Namespace, Out], Awaitable[None]]


def token_of(args: argparse.Namespace) -> str | None:
    return args.token or os.environ.get("CHIPS_TOKEN") or os.environ.get("CHIPS_HARNESS_TOKEN")


def need_token(args: argparse.Namespace) -> None:
    if not token_of(args):
        raise CliError("this command needs a person's token: pass --token or set CHIPS_TOKEN")


async def workspace_create(http: Http, args: argparse.Namespace, out: Out) -> None:
    secret = os.environ.get("CHIPS_OPERATOR_SECRET", DEV_OPERATOR_SECRET)
    data = await http.request(
        "POST",
        "/v1/workspaces",
        json={"name": args.name, "owner_name": args.owner},
        headers={"X-Chips-Operator-Secret": secret},
    )
    out.data(data, json.dumps(data, indent=2))


async def person_add(http: Http, args: argparse.Namespace, out: Out) -> None:
    need_token(args)
    data = await http.post("/v1/participants", {"name": args.name, "role": args.role})
    out.data(data, json.dumps(data, indent=2))


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
    """``chips declare NAME capability…``: what a harness does (spec/jacobian-channel.md)."""
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


def read_traces(args: argparse.Namespace) -> dict[str, Any]:
    if args.jaeger:
        spans = trace.spans_from_jaeger(args.jaeger, args.message_id)
    else:
        path = Path(args.file or os.environ.get("CHIPS_TRACE_FILE") or run_dir() / "traces.jsonl")
        if not path.exists():
            raise CliError(
                f"no trace file at {path}: is Chips up (`make up`)? "
                "Or set CHIPS_TRACE_FILE, or pass --file or --jaeger"
            )
        spans = trace.spans_from_file(path)
    traces = trace.traces_of(args.message_id, spans)
    if not traces:
        raise CliError(
            f"no trace names {args.message_id} yet: services write spans in batches every "
            "few seconds, so try again in a moment",
            "not_found",
        )
    return dict(traces)


def draw_traces(traces: dict[str, Any]) -> str:
    shown = []
    for tid, found in traces.items():
        drawn = trace.render(tid, found)
        missing = trace.incomplete(found)
        if missing:
            drawn += (
                f"\nincomplete: {'; '.join(missing)} (services write spans in batches every "
                "few seconds: run `chips trace` again in a moment)"
            )
        shown.append(drawn)
    return "\n\n".join(shown)


async def trace_message(http: Http, args: argparse.Namespace, out: Out) -> None:
    traces = await asyncio.to_thread(read_traces, args)
    out.data({"traces": traces}, draw_traces(traces))


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
        lines.append(f"    {render_snippet(hit['snippet'], bold)}")
    if not data["hits"]:
        lines.append(f"nothing found (as of seq {data['as_of_seq']})")
    if data.get("next_cursor"):
        lines.append(f"more: chips search {json.dumps(args.words)} --cursor {data['next_cursor']}")
    out.data(data, "\n".join(lines))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chips", description="Talk to a Chips server.")
    try:
        default_url = local_gateway_url()
    except LocalConfigError as exc:
        parser.error(str(exc))
    parser.add_argument(
        "--url",
        default=default_url,
        help="the server, or several comma-separated (default: $CHIPS_URL, else the local "
        "stack's gateway: %(default)s)",
    )
    parser.add_argument(
        "--token", help="a token (default: $CHIPS_TOKEN, else $CHIPS_HARNESS_TOKEN)"
    )
    parser.add_argument("--json", action="store_true", help="answer in JSON")
    # --json is taken after the command too; SUPPRESS keeps the top-level one when absent.
    common = argparse.ArgumentParser(add_help=False)
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
        workspace, "create", workspace_create, "create a workspace and its owner (operator)"
    )
    create.add_argument("--name", required=True)
    create.add_argument("--owner", required=True, help="the owner's name")

    person = commands.add_parser("person", help="people").add_subparsers(
        dest="action", required=True
    )
    add = command(person, "add", person_add, "add a person (workspace owner or admin)")
    add.add_argument("--name", required=True)
    add.add_argument("--role", default="member", choices=["admin", "member", "guest"])

    connect = commands.add_parser(
        "connect",
        help="connect a harness of your own (any person of the workspace but a guest)",
        description="Connect a harness of your own. Any person of the workspace but a guest "
        "may: the harness is theirs, with a direct space between them.",
    ).add_subparsers(dest="kind", required=True)
    custom = command(
        connect, "custom", connect_custom, "a harness of your own, over HTTP and the socket"
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
        declare,
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
        commands, "disconnect", disconnect, "withdraw a harness's tokens and close its sockets"
    )
    gone.add_argument("name", metavar="NAME", help="the harness's name, or its hrn_ id")

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

    traced = command(commands, "trace", trace_message, "a message's trace, as a tree")
    traced.add_argument("message_id", help="msg_…")
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
    async with Http(urls[0], token_of(args)) as http:
        await args.run(http, args, out)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    out = Out(json_mode=args.json)
    try:
        asyncio.run(run(args, out))
    except KeyboardInterrupt:
        sys.exit(130)
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
