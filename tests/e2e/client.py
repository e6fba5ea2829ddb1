"""A test client that talks to Chips only as a real client would: HTTP and WebSocket.

Every frame it receives is checked against the protocol (frame shapes) and every event
against the catalogue, so a malformed frame fails the test that saw it
(docs/architecture/code-style.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from chips_common.events import CATALOGUE, ENVELOPE_FIELDS, parse_event

_keys = itertools.count(1)
DELIVERED = ("message.new", "message.overheard")

# What the referee writes of a room's turns when it notices them (docs/adr/0090): never a
# step of what the door logged for an operation, and never at a seq a test can foresee.
REFEREE_CLOCK = frozenset({"room.working", "room.idle"})


def key(prefix: str = "k") -> str:
    return f"{prefix}-{next(_keys)}"


def check_event(event: dict[str, Any]) -> None:
    """An event as delivered: envelope, then fields the catalogue accepts."""
    for name in ("v", "id", "seq", "ts", "workspace_id", "actor", "type"):
        assert name in event, f"delivered event lacks {name}: {event}"
    # What a harness hears of a message.post: the same payload under another name, and
    # for a turn, its context and room (docs/product/websocket.md, What a harness hears).
    logged_type = "message.post" if event["type"] in DELIVERED else event["type"]
    assert logged_type in CATALOGUE, f"unknown event type {event['type']}"
    fields = {k: v for k, v in event.items() if k not in ENVELOPE_FIELDS}
    fields["type"] = logged_type
    if logged_type == "message.post":
        fields.pop("message_id", None)  # filled in by Chips for message.post
    fields.pop("resolved_elsewhere", None)  # a person's socket that did not decide it
    if logged_type == "message.post":
        # The turns of the harness's agents working in the room (docs/product/websocket.md).
        for turn in fields.pop("working_turns", None) or ():
            assert set(turn) == {"agent_id", "run_id"}, turn
        if event["type"] == "message.post" and "from" in fields:
            # A harness's own post said by one of its agents, handed to its other turns.
            assert fields.pop("from")["id"] == event["actor"]["id"]
    if fields.get("attachments"):
        # Each file is delivered with links signed for the recipient (docs/product/websocket.md).
        links = ("url", "url_expires_at", "thumbnail_url")
        fields["attachments"] = [
            {k: v for k, v in a.items() if k not in links} for a in fields["attachments"]
        ]
    if event["type"] == "message.new":
        assert "room" in event, "a message.new carries room"
        assert event["from"]["id"] == event["actor"]["id"], "a message.new says who said it"
        # Who of the harness takes the turn, for one that declared agents: never empty,
        # never the one who said it.
        if "for" in event:
            assert event["for"], "for is never empty"
            assert event["actor"]["id"] not in event["for"], "for never names the sender"
        fields.pop("context", None)
        fields.pop("room", None)
        fields.pop("from", None)
        fields.pop("for", None)
        fields.pop("handed", None)  # a held message a person's act handed over
        fields.pop("lead", None)  # words nobody took, handed to the room's lead
    parse_event(fields)


def check_frame(frame: dict[str, Any]) -> None:
    kind = frame.get("frame")
    if kind == "event":
        check_event(frame["event"])
    elif kind == "events":
        assert 1 <= len(frame["events"]) <= 500, "an events frame holds 1 to 500 events"
        seqs = [e["seq"] for e in frame["events"]]
        assert seqs == sorted(seqs), "an events frame is in seq order"
        for event in frame["events"]:
            check_event(event)
    elif kind == "ack":
        assert isinstance(frame["seq"], int) and isinstance(frame["duplicate"], bool)
        assert frame["idempotency_key"]
    elif kind == "error":
        assert frame["code"] and frame["message"]
    elif kind == "restart":
        assert frame["asked_by"] and frame["asked_at"]
    elif kind == "notification":
        assert frame["type"] == "notification" and isinstance(frame["unread"], int)
        assert frame["notification"]["id"].startswith("ntf_")
    elif kind == "receipt":
        assert frame["idempotency_key"] and frame["disposition"] in ("queued", "steered")
    elif kind == "hello":
        assert "protocol" in frame and "workspace_id" in frame
        assert ("harness" in frame) != ("person" in frame)
    else:
        raise AssertionError(f"unknown frame {frame}")


@dataclass
class Identity:
    workspace_id: str
    participant_id: str
    token: str
    kind: str = "person"


class Api:
    """HTTP calls against one gateway."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(base_url=base_url, timeout=20)

    async def close(self) -> None:
        await self.http.aclose()

    def auth(self, who: Identity | str) -> dict[str, str]:
        token = who if isinstance(who, str) else who.token
        return {"Authorization": f"Bearer {token}"}

    async def create_workspace(
        self,
        name: str = "Acme",
        owner: str = "Arjun Rao",
        secret: str = "chips-dev-operator-secret",
    ) -> Identity:
        r = await self.http.post(
            "/v1/workspaces",
            json={"name": name, "owner_name": owner},
            headers={"X-Chips-Operator-Secret": secret},
        )
        assert r.status_code == 201, r.text
        data = r.json()
        return Identity(data["workspace_id"], data["owner_id"], data["token"])

    async def add_person(self, by: Identity, name: str, role: str = "member") -> Identity:
        r = await self.http.post(
            "/v1/participants", json={"name": name, "role": role}, headers=self.auth(by)
        )
        assert r.status_code == 201, r.text
        data = r.json()
        return Identity(by.workspace_id, data["participant_id"], data["token"])

    async def connect_harness(self, by: Identity, name: str) -> tuple[Identity, str]:
        r = await self.http.post("/v1/harnesses", json={"name": name}, headers=self.auth(by))
        assert r.status_code == 201, r.text
        data = r.json()
        return Identity(by.workspace_id, data["harness_id"], data["token"], "harness"), data[
            "space_id"
        ]

    async def post_event(self, who: Identity, event: dict[str, Any]) -> httpx.Response:
        return await self.http.post("/v1/events", json=event, headers=self.auth(who))

    async def append(self, who: Identity, event: dict[str, Any]) -> int:
        r = await self.post_event(
            who, {**event, "idempotency_key": event.get("idempotency_key", key())}
        )
        assert r.status_code == 200, r.text
        return int(r.json()["seq"])

    async def open_space(self, who: Identity, title: str, members: list[str] | None = None) -> str:
        r = await self.post_event(
            who,
            {
                "type": "space.created",
                "title": title,
                "members": members or [],
                "idempotency_key": key("open"),
            },
        )
        assert r.status_code == 200, r.text
        # The ack names the room it created: the agents given there to a harness in it
        # (ADR 0146) are logged after it, so the ack's seq is the last of theirs. A gateway
        # from before that (an older tree a bench runs) acks the space.created itself.
        if "space_id" in r.json():
            return str(r.json()["space_id"])
        events = await self.read(who, since=r.json()["seq"] - 1, limit=1)
        assert events and events[0]["type"] == "space.created"
        return str(events[0]["space_id"])

    async def open_thread(self, who: Identity, room: str, root_message_id: str, **more: Any) -> str:
        """The thread ``who`` opens under a message of ``room``; its space id."""
        seq = await self.append(
            who,
            {
                "type": "space.created",
                "kind": "thread",
                "parent_space_id": room,
                "root_message_id": root_message_id,
                **more,
            },
        )
        return str((await self.read(who, since=seq - 1, limit=1))[0]["space_id"])

    async def say(self, who: Identity, space_id: str, text: str) -> int:
        return await self.append(who, {"type": "message.post", "space_id": space_id, "text": text})

    async def read(
        self,
        who: Identity,
        since: int = 0,
        space_id: str | None = None,
        limit: int = 500,
        clock: bool = True,
    ) -> list[dict[str, Any]]:
        """The log's page after ``since``; with ``clock=False`` without what the referee
        writes in its own time (``REFEREE_CLOCK``), for a test comparing what the door
        logged for an operation step by step."""
        params: dict[str, Any] = {"since": since, "limit": limit}
        if space_id:
            params["space_id"] = space_id
        r = await self.http.get("/v1/events", params=params, headers=self.auth(who))
        assert r.status_code == 200, r.text
        events: list[dict[str, Any]] = r.json()["events"]
        for event in events:
            check_event(event)
        if not clock:
            events = [e for e in events if e["type"] not in REFEREE_CLOCK]
        return events

    async def refused(
        self, who: Identity, event: dict[str, Any], code: str, reason: str
    ) -> dict[str, Any]:
        """Post an event the door must refuse; check its code and the words of its reason."""
        r = await self.post_event(who, {**event, "idempotency_key": key("no")})
        body: dict[str, Any] = r.json()
        assert body.get("code") == code, f"expected {code}, got {r.status_code} {body}"
        assert reason in body["message"], f"the reason {body['message']!r} lacks {reason!r}"
        return body

    async def head(self, who: Identity) -> int:
        """The newest seq ``who`` may read (the workspace's head, for its owner)."""
        seq, since = 0, 0
        while True:
            r = await self.http.get(
                "/v1/events", params={"since": since, "limit": 500}, headers=self.auth(who)
            )
            assert r.status_code == 200, r.text
            body = r.json()
            if body["events"]:
                seq = body["events"][-1]["seq"]
            if body["next_since"] == since:
                return seq
            since = body["next_since"]

    async def sheet(
        self, who: Identity, space_id: str, after_seq: int | None = None
    ) -> dict[str, Any]:
        """The room sheet (GET /v1/spaces/:id) once the read models hold ``after_seq``: by
        default the newest seq ``who`` may read (a room just made may not be folded yet)."""
        if after_seq is None:
            after_seq = await self.head(who)
        r = await self.http.get(
            f"/v1/spaces/{space_id}", params={"after_seq": after_seq}, headers=self.auth(who)
        )
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        assert data["as_of_seq"] >= after_seq
        return data

    async def lines(
        self, who: Identity, space_id: str, after_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """What the room shows (messages and system lines) once it holds ``after_seq``: by
        default the newest seq ``who`` may read, everything logged before the call (the
        projector may hold posts a moment to fold them together, and is asked for them)."""
        if after_seq is None:
            after_seq = await self.head(who)
        r = await self.http.get(
            f"/v1/spaces/{space_id}/messages",
            params={"after_seq": after_seq, "limit": 500},
            headers=self.auth(who),
        )
        assert r.status_code == 200, r.text
        assert r.json()["as_of_seq"] >= after_seq
        return list(r.json()["messages"])

    async def spaces(
        self, who: Identity, after_seq: int | None = None, archived: bool = False
    ) -> dict[str, Any]:
        """GET /v1/spaces once the read models hold ``after_seq``: by default the newest
        seq ``who`` may read (a room just made may not be folded yet)."""
        if after_seq is None:
            after_seq = await self.head(who)
        params: dict[str, Any] = {"after_seq": after_seq}
        if archived:
            params["archived"] = "true"
        r = await self.http.get("/v1/spaces", params=params, headers=self.auth(who))
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data

    async def open_by_key(
        self,
        harness: Identity,
        key: str,
        title: str | None = None,
        *,
        shared: bool = False,
        space_id: str | None = None,
    ) -> httpx.Response:
        """The harness door: POST /v1/harnesses/:id/spaces with the harness's own token."""
        body: dict[str, Any] = {"key": key, "shared": shared}
        if title is not None:
            body["title"] = title
        if space_id is not None:
            body["space_id"] = space_id
        return await self.http.post(
            f"/v1/harnesses/{harness.participant_id}/spaces", json=body, headers=self.auth(harness)
        )

    async def harness_spaces(
        self, who: Identity, harness_id: str, after_seq: int = 0
    ) -> dict[str, Any]:
        """GET /v1/harnesses/:id/spaces once the read models hold ``after_seq``."""
        r = await self.http.get(
            f"/v1/harnesses/{harness_id}/spaces",
            params={"after_seq": after_seq},
            headers=self.auth(who),
        )
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data

    async def add_to_room(
        self, who: Identity, space_id: str, participant_id: str, standing: str = "member"
    ) -> httpx.Response:
        """The room sheet's Add: POST /v1/spaces/:id/members."""
        return await self.http.post(
            f"/v1/spaces/{space_id}/members",
            json={"participant_id": participant_id, "standing": standing},
            headers=self.auth(who),
        )

    async def remove_from_room(
        self, who: Identity, space_id: str, participant_id: str
    ) -> httpx.Response:
        """The room sheet's Remove (or Leave): DELETE /v1/spaces/:id/members/:pid."""
        return await self.http.delete(
            f"/v1/spaces/{space_id}/members/{participant_id}", headers=self.auth(who)
        )

    async def change_room(self, who: Identity, space_id: str, **change: Any) -> httpx.Response:
        """The room sheet's retitle, Archive and Unarchive: PATCH /v1/spaces/:id."""
        return await self.http.patch(f"/v1/spaces/{space_id}", json=change, headers=self.auth(who))

    async def lock(self, who: Identity, space_id: str, locked: bool = True) -> httpx.Response:
        """POST /v1/spaces/:id/lock {locked}: space.lock_set."""
        return await self.http.post(
            f"/v1/spaces/{space_id}/lock", json={"locked": locked}, headers=self.auth(who)
        )

    async def ticket(self, who: Identity) -> str:
        r = await self.http.post("/v1/socket-tickets", headers=self.auth(who))
        assert r.status_code == 201, r.text
        return str(r.json()["ticket"])


@dataclass
class Socket:
    """One WebSocket, with everything it received kept in order."""

    conn: ClientConnection
    frames: list[dict[str, Any]] = field(default_factory=list)
    hello_frame: dict[str, Any] | None = None
    _reader: asyncio.Task[None] | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    @classmethod
    async def open(
        cls,
        base_url: str,
        who: Identity | None = None,
        *,
        query: str = "",
        accepts: list[str] | None = None,
        hello: bool = True,
        protocol: tuple[int, int] = (1, 1),
    ) -> Socket:
        url = base_url.replace("http://", "ws://") + "/v1/ws" + query
        headers = {"Authorization": f"Bearer {who.token}"} if who else {}
        conn = await websockets.connect(url, additional_headers=headers, max_size=2**24)
        sock = cls(conn)
        sock._reader = asyncio.create_task(sock._read())
        if hello:
            await sock.send(
                {
                    "frame": "hello",
                    "protocol": {"min": protocol[0], "max": protocol[1]},
                    "client": {"name": "e2e", "version": "0"},
                    "accepts": accepts or [],
                }
            )
            sock.hello_frame = await sock.wait_for(lambda f: f["frame"] in ("hello", "error"))
        return sock

    async def _read(self) -> None:
        try:
            async for raw in self.conn:
                frame = json.loads(raw)
                check_frame(frame)
                self.frames.append(frame)
                self._arrived.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed = True
            self._arrived.set()

    async def send(self, frame: dict[str, Any]) -> None:
        await self.conn.send(json.dumps(frame))

    async def subscribe(self, workspace_id: str, since: int | None = None) -> None:
        frame: dict[str, Any] = {"frame": "subscribe", "workspace_id": workspace_id}
        if since is not None:
            frame["since"] = since
        await self.send(frame)

    async def attached(self) -> None:
        """Until the subscription is in place, so that whatever is logged next comes live.

        The server reads a socket's frames in order: a second subscribe is refused only
        once the first is attached. The refusal is dropped from ``frames``.
        """
        await self.send({"frame": "subscribe", "workspace_id": "attached?"})
        refusal = await self.wait_for(
            lambda f: f["frame"] == "error" and "subscribed already" in f["message"]
        )
        self.frames.remove(refusal)

    async def wait_closed(self, timeout: float = 10) -> None:
        """Until the server has closed this socket."""
        if self._reader is not None:
            await asyncio.wait([self._reader], timeout=timeout)
        assert self.closed, f"the socket is still open after {timeout} s"

    async def write(self, event: dict[str, Any], idempotency_key: str | None = None) -> str:
        k = idempotency_key or key("ws")
        await self.send({"frame": "event", "event": {**event, "idempotency_key": k}})
        return k

    async def wait_for(self, predicate: Any, timeout: float = 10) -> dict[str, Any]:
        """The first frame (from the start) that satisfies predicate."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for frame in self.frames:
                if predicate(frame):
                    return frame
            if self.closed:
                raise AssertionError(f"socket closed before the frame came; got {self.frames[-5:]}")
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"no such frame within {timeout} s; last: {self.frames[-5:]}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), remaining)

    async def answer(self, idempotency_key: str, timeout: float = 10) -> dict[str, Any]:
        return await self.wait_for(
            lambda f: (
                f["frame"] in ("ack", "error") and f.get("idempotency_key") == idempotency_key
            ),
            timeout,
        )

    async def settled(
        self, event: dict[str, Any], idempotency_key: str, attempts: int = 5
    ) -> dict[str, Any]:
        """The answer to a write already sent, sending it again with its key while it is
        ``unavailable`` (as a careful client does: a loaded machine may time one out)."""
        answer = await self.answer(idempotency_key, timeout=30)
        for _ in range(attempts):
            if answer.get("code") != "unavailable":
                break
            self.frames.remove(answer)
            await self.write(event, idempotency_key)
            answer = await self.answer(idempotency_key, timeout=30)
        return answer

    def events(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for frame in self.frames:
            if frame["frame"] == "event":
                out.append(frame["event"])
            elif frame["frame"] == "events":
                out.extend(frame["events"])
        return out

    def seqs(self) -> list[int]:
        return [e["seq"] for e in self.events()]

    async def wait_for_seq(self, seq: int, timeout: float = 10) -> None:
        await self.wait_for(
            lambda f: (
                seq
                in [
                    e["seq"]
                    for e in ([f["event"]] if f["frame"] == "event" else f.get("events", []))
                ]
            ),
            timeout,
        )

    async def close(self) -> None:
        await self.conn.close()
        if self._reader:
            await asyncio.wait([self._reader], timeout=5)
