"""``chips``: the command line, talking to a Chips server over HTTP.

The server is ``CHIPS_URL`` (default: the local stack's gateway, ``http://127.0.0.1:8080``,
or the port ``CHIPS_PORT_BASE`` moves it to); a person's token comes
from ``--token`` or ``CHIPS_TOKEN``. Creating a workspace is an operator's act and uses
``CHIPS_OPERATOR_SECRET`` (the development default works against ``make up``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from chips_cli import trace
from chips_common.config import DEV_OPERATOR_SECRET
from chips_common.events import CAPABILITIES
from chips_common.local import LocalConfigError, local_gateway_url, run_dir


class CliError(Exception):
    pass


class Client:
    def __init__(self, url: str, token: str | None) -> None:
        self.url = url.rstrip("/")
        self.token = token

    def post(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        needs_token: bool = True,
    ) -> dict[str, Any]:
        return self.request("POST", path, body, headers, needs_token=needs_token)

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        *,
        needs_token: bool = True,
        params: dict[str, str | int] | None = None,
    ) -> dict[str, Any]:
        sent = dict(headers or {})
        if needs_token:
            if not self.token:
                raise CliError(
                    "this command needs a person's token: pass --token or set CHIPS_TOKEN"
                )
            sent["Authorization"] = f"Bearer {self.token}"
        try:
            response = httpx.request(
                method, f"{self.url}{path}", json=body, headers=sent, params=params, timeout=30
            )
        except httpx.HTTPError as exc:
            raise CliError(f"could not reach Chips at {self.url}: {exc}") from None
        try:
            data: dict[str, Any] = response.json()
        except ValueError:
            raise CliError(f"Chips answered {response.status_code} without JSON") from None
        if response.status_code >= 400:
            raise CliError(f"{data.get('code', response.status_code)}: {data.get('message', data)}")
        return data


def workspace_create(client: Client, args: argparse.Namespace) -> None:
    secret = os.environ.get("CHIPS_OPERATOR_SECRET", DEV_OPERATOR_SECRET)
    data = client.post(
        "/v1/workspaces",
        {"name": args.name, "owner_name": args.owner},
        {"X-Chips-Operator-Secret": secret},
        needs_token=False,
    )
    print(json.dumps(data, indent=2))


def person_add(client: Client, args: argparse.Namespace) -> None:
    data = client.post("/v1/participants", {"name": args.name, "role": args.role})
    print(json.dumps(data, indent=2))


def connect_custom(client: Client, args: argparse.Namespace) -> None:
    # A custom harness is dialled by nobody: it connects itself with the four lines, so
    # --no-dial changes nothing here and is accepted for the spec's command line.
    data = client.post("/v1/harnesses", {"name": args.name})
    print(f"CHIPS_URL={data.get('url') or client.url}")
    print(f"CHIPS_HARNESS_ID={data['harness_id']}")
    print(f"CHIPS_HARNESS_TOKEN={data['token']}")
    print(f"CHIPS_SPACE_ID={data['space_id']}")


def trace_message(client: Client, args: argparse.Namespace) -> None:
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
            "few seconds, so try again in a moment"
        )
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
    print("\n\n".join(shown))


def declare(client: Client, args: argparse.Namespace) -> None:
    """``chips declare NAME capability…``: what a harness does (spec/jacobian-channel.md)."""
    unknown = [c for c in args.capabilities if c not in CAPABILITIES]
    if unknown:
        raise CliError(
            f"{', '.join(unknown)}: not a capability; choose from {', '.join(CAPABILITIES)}"
        )
    harness_id = args.name
    if not harness_id.startswith("hrn_"):
        directory = client.request("GET", "/v1/participants")["participants"]
        named = [
            p["participant_id"]
            for p in directory
            if p["kind"] == "harness" and p["name"].casefold() == args.name.casefold()
        ]
        if not named:
            raise CliError(f"no harness is called {args.name!r} in this workspace")
        if len(named) > 1:
            raise CliError(
                f"{len(named)} harnesses are called {args.name!r}; name one by its id: "
                + ", ".join(named)
            )
        harness_id = named[0]
    data = client.request(
        "PUT",
        f"/v1/harnesses/{harness_id}/capabilities",
        {"capabilities": list(dict.fromkeys(args.capabilities))},
    )
    print(json.dumps({"harness_id": harness_id, "capabilities": data["capabilities"]}, indent=2))


def render_snippet(segments: list[dict[str, Any]], bold: bool) -> str:
    """A hit's snippet on one line, the matched words in bold (or between asterisks)."""
    start, stop = ("\x1b[1m", "\x1b[0m") if bold else ("*", "*")
    line = "".join(f"{start}{s['text']}{stop}" if s.get("match") else s["text"] for s in segments)
    return " ".join(line.split())


def search(client: Client, args: argparse.Namespace) -> None:
    """``chips search "words"``: what was said in your rooms, newest first (GET /v1/search)."""
    params: dict[str, str | int] = {"q": args.words, "limit": args.limit}
    for name in ("space", "cursor", "after_seq"):
        value = getattr(args, name)
        if value is not None:
            params["space_id" if name == "space" else name] = value
    data = client.request("GET", "/v1/search", params=params)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    bold = sys.stdout.isatty()
    for hit in data["hits"]:
        what = hit["message_id"] or f"{hit['run_id']} step {hit['step_id']}"
        print(f"{hit['ts'][:16].replace('T', ' ')}  {hit['space_id']}  {what}  seq {hit['seq']}")
        print(f"    {render_snippet(hit['snippet'], bold)}")
    if not data["hits"]:
        print(f"nothing found (as of seq {data['as_of_seq']})")
    if data.get("next_cursor"):
        print(f"more: chips search {json.dumps(args.words)} --cursor {data['next_cursor']}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chips", description="Talk to a Chips server.")
    try:
        default_url = local_gateway_url()
    except LocalConfigError as exc:
        parser.error(str(exc))
    parser.add_argument(
        "--url",
        default=default_url,
        help="the server (default: $CHIPS_URL, else the local stack's gateway: %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("CHIPS_TOKEN"),
        help="a person's token (default: $CHIPS_TOKEN)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    workspace = commands.add_parser("workspace", help="workspaces").add_subparsers(
        dest="action", required=True
    )
    create = workspace.add_parser("create", help="create a workspace and its owner (operator)")
    create.add_argument("--name", required=True)
    create.add_argument("--owner", required=True, help="the owner's name")
    create.set_defaults(run=workspace_create)

    person = commands.add_parser("person", help="people").add_subparsers(
        dest="action", required=True
    )
    add = person.add_parser("add", help="add a person (workspace owner or admin)")
    add.add_argument("--name", required=True)
    add.add_argument("--role", default="member", choices=["admin", "member", "guest"])
    add.set_defaults(run=person_add)

    connect = commands.add_parser("connect", help="connect a harness").add_subparsers(
        dest="kind", required=True
    )
    custom = connect.add_parser("custom", help="a harness of your own, over HTTP and the socket")
    custom.add_argument("--name", required=True)
    custom.add_argument("--no-dial", action="store_true", help="do not try to reach the harness")
    custom.set_defaults(run=connect_custom)

    declared = commands.add_parser(
        "declare", help="say what a harness does (its owner; the list replaces the last one)"
    )
    declared.add_argument("name", metavar="NAME", help="the harness's name, or its hrn_ id")
    # Checked in declare(), not by choices=: argparse refuses an empty list with choices.
    declared.add_argument(
        "capabilities",
        metavar="capability",
        nargs="*",
        help="any of: " + ", ".join(CAPABILITIES) + " (none clears them)",
    )
    declared.set_defaults(run=declare)

    traced = commands.add_parser("trace", help="a message's trace, as a tree with timings")
    traced.add_argument("message_id", help="msg_…")
    traced.add_argument(
        "--file",
        help="the spans file the services write (default: $CHIPS_TRACE_FILE, else "
        "traces.jsonl in the run directory of `make up`, .run/ of this checkout)",
    )
    traced.add_argument("--jaeger", help="a Jaeger query URL to read the trace from instead")
    traced.set_defaults(run=trace_message)

    found = commands.add_parser(
        "search", help="find words said in your rooms: every word, the last a prefix"
    )
    found.add_argument("words", help='what to look for, in quotes: "invoice acm"')
    found.add_argument("--space", help="only this room (spc_…) and its threads")
    found.add_argument("--limit", type=int, default=20, help="hits per page (1 to 100)")
    found.add_argument("--cursor", help="the next page, as the last page said")
    found.add_argument("--after-seq", type=int, help="answer as of at least this seq")
    found.add_argument("--json", action="store_true", help="print the answer as JSON")
    found.set_defaults(run=search)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        args.run(Client(args.url, args.token), args)
    except CliError as exc:
        print(f"chips: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
