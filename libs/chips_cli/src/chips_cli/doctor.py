"""``chips doctor``: is everything in place for a harness (or a person) to talk to Chips?

Each check says what it found and, when something is wrong, the one thing to do about
it. In order: the gateway answers; the clocks agree; the token is taken; the socket opens
(hello, without subscribing, so the check itself does not count as the harness being
seen); when each harness was last seen. A failed check makes the exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from chips_cli.output import Out
from chips_sdk import ChipsError, Client, Http, Unauthorized
from chips_sdk.http import failure_reason

MAX_SKEW_SECONDS = 5.0


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | skipped
    said: str
    fix: str | None = None


class Doctor:
    def __init__(self, http: Http, urls: list[str]) -> None:
        self.http = http
        self.urls = urls
        self.checks: list[Check] = []

    def add(self, name: str, status: str, said: str, fix: str | None = None) -> None:
        self.checks.append(Check(name, status, said, fix))

    async def run(self) -> None:
        if not await self.reach():
            return
        directory = await self.token()
        if directory is None:
            return
        hello = await self.socket()
        self.last_seen(directory, hello)

    async def reach(self) -> bool:
        url = self.http.url
        started = time.time()
        try:
            async with httpx.AsyncClient(timeout=10) as plain:
                response = await plain.get(f"{url}/healthz")
        except httpx.HTTPError as exc:
            self.add(
                "gateway",
                "fail",
                f"nothing answers at {url} ({failure_reason(exc)})",
                "start Chips (make up), or set CHIPS_URL to the address its gateway listens "
                "on (CHIPS_PORT_BASE, when make up ran with it)",
            )
            return False
        if response.status_code != 200:
            self.add(
                "gateway",
                "fail",
                f"{url} answered {response.status_code} to /healthz",
                "check that CHIPS_URL is a Chips gateway, not another service on that port",
            )
            return False
        self.add("gateway", "ok", f"Chips answers at {url}")
        self.clock(response.headers.get("date"), (started + time.time()) / 2)
        return True

    def clock(self, date_header: str | None, local: float) -> None:
        if not date_header:
            self.add("clock", "skipped", "the gateway sent no Date header to compare with")
            return
        server = email.utils.parsedate_to_datetime(date_header).timestamp()
        # The Date header has whole seconds: allow for that on top of the limit.
        skew = local - server - 0.5
        if abs(skew) > MAX_SKEW_SECONDS:
            way = "ahead of" if skew > 0 else "behind"
            self.add(
                "clock",
                "warn",
                f"this machine's clock is {abs(skew):.0f} s {way} the server's",
                "set the clock by NTP (timedatectl set-ntp true): tickets last 30 s and "
                "file links ten minutes, by the clock",
            )
        else:
            self.add("clock", "ok", f"the clocks agree within {MAX_SKEW_SECONDS:.0f} s")

    async def token(self) -> list[dict[str, Any]] | None:
        if not self.http.token:
            self.add(
                "token",
                "fail",
                "no token to check",
                "set CHIPS_HARNESS_TOKEN (the harness's) or CHIPS_TOKEN (yours), or pass --token",
            )
            return None
        try:
            directory = await self.http.participants()
        except Unauthorized:
            self.add(
                "token",
                "fail",
                "Chips refuses the token: it was withdrawn (chips disconnect) or is mistyped",
                "copy the four lines again, or connect the harness anew (chips connect custom)",
            )
            return None
        except ChipsError as exc:
            self.add("token", "fail", f"{exc.code}: {exc.message}", "try again in a moment")
            return None
        self.add("token", "ok", "Chips takes the token")
        return [dict(p) for p in directory]

    async def socket(self) -> dict[str, Any] | None:
        client = Client(self.urls, self.http.token, name="chips-doctor", subscribe=False)
        try:
            hello: dict[str, Any] = dict(await asyncio.wait_for(client.start(), 15))
        except (TimeoutError, ChipsError) as exc:
            self.add(
                "socket",
                "fail",
                f"the socket /v1/ws did not open: {exc or 'no answer in 15 s'}",
                "check that whatever is between you and Chips (a proxy) passes WebSocket "
                "upgrades on /v1/ws",
            )
            return None
        finally:
            await client.close()
        who: dict[str, Any] = hello.get("harness") or hello.get("person") or {}
        autonomy = f", autonomy {hello['autonomy']}" if "autonomy" in hello else ""
        server: dict[str, Any] = hello.get("server") or {}
        gateway = server.get("gateway", "?")
        self.add(
            "socket", "ok", f"the socket opens as {who.get('name')} (gateway {gateway}{autonomy})"
        )
        return hello

    def last_seen(self, directory: list[dict[str, Any]], hello: dict[str, Any] | None) -> None:
        if hello is None:
            return
        if "harness" in hello:
            me = hello["harness"]["id"]
            harnesses = [p for p in directory if p["participant_id"] == me]
        else:
            me = hello["person"]["id"]
            harnesses = [p for p in directory if p["kind"] == "harness" and p.get("owner_id") == me]
            if not harnesses:
                self.add("last seen", "ok", "you have connected no harness yet")
        for harness in harnesses:
            name = harness["name"]
            if "last_seen_at" not in harness:
                self.add("last seen", "skipped", f"Chips cannot say when {name} was last seen")
            elif harness["last_seen_at"] is None:
                self.add(
                    "last seen",
                    "warn",
                    f"{name}'s token has never been used",
                    "put the four lines (CHIPS_URL, CHIPS_HARNESS_ID, CHIPS_HARNESS_TOKEN, "
                    f"CHIPS_SPACE_ID) where {name} reads them, and start it",
                )
            else:
                self.add(
                    "last seen", "ok", f"{name} last subscribed {ago(harness['last_seen_at'])}"
                )


def ago(iso: str) -> str:
    seconds = (datetime.now(UTC) - datetime.fromisoformat(iso)).total_seconds()
    if seconds < 90:
        return f"{max(0, seconds):.0f} s ago ({iso})"
    if seconds < 5400:
        return f"{seconds / 60:.0f} minutes ago ({iso})"
    return f"{seconds / 3600:.1f} hours ago ({iso})"


MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skipped": "--  "}


async def run(http: Http, args: argparse.Namespace, out: Out) -> None:
    doctor = Doctor(http, args.urls)
    await doctor.run()
    failed = [c for c in doctor.checks if c.status == "fail"]
    lines = []
    for check in doctor.checks:
        lines.append(f"{MARKS[check.status]}  {check.name}: {check.said}")
        if check.fix:
            lines.append(f"      fix: {check.fix}")
    out.data({"ok": not failed, "checks": [asdict(c) for c in doctor.checks]}, "\n".join(lines))
    if failed:
        raise SystemExit(1)
