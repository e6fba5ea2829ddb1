"""The HTTP half of the API: reads, tickets, and writes for a client without a socket.

Every error Chips answers is ``{code, message}``; it is raised as the matching
:class:`~chips_sdk.errors.ChipsError`. A gateway that cannot be reached is raised as
``unavailable`` with the address in the sentence.
"""

from __future__ import annotations

import socket
from typing import Any, Literal, Required, TypedDict, cast

import httpx

from chips_sdk.errors import ChipsError, Unavailable


class Uploaded(TypedDict, total=False):
    """What ``POST /v1/uploads`` answers: the upload, stored."""

    upload_id: Required[str]
    attachment_id: str
    name: str
    mime_type: str
    kind: Literal["photo", "video", "voice_note", "file"]
    byte_size: int
    width: int | None
    height: int | None


class RegisteredAgent(TypedDict, total=False):
    """An agent as ``POST /v1/harnesses/:id/agents`` answers it (docs/adr/0153 for
    ``face``: one emoji, or a picture's attachment id, with ``face_url`` signed for you)."""

    id: Required[str]
    harness_id: str
    key: str
    name: str
    name_by: str | None
    state: Literal["active", "archived"]
    main: bool
    space_id: str | None
    forked_from: str | None
    made_for: str | None
    why: str | None
    face: str | None
    face_url: str | None
    seq: int | None


def failure_reason(exc: BaseException) -> str:
    """Why a connection failed, in words: the OS's reason under the library's wrapping.

    httpx says "All connection attempts failed" over a refused connection; the refusal
    itself is further down its chain of causes.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused: nothing listens on that port"
        if isinstance(current, socket.gaierror):
            return f"the host name does not resolve ({current.strerror})"
        if isinstance(current, TimeoutError | httpx.TimeoutException):
            return "timed out"
        current = current.__cause__ or current.__context__
    return str(exc) or type(exc).__name__


class Http:
    """HTTP calls to one Chips server with one token."""

    def __init__(self, url: str, token: str | None, *, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Http:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> dict[str, Any]:
        """One call; the answer's JSON, or the error Chips answered, raised."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = await self._http.request(
                method, path, json=json, params=query, headers=headers, content=content
            )
        except httpx.HTTPError as exc:
            reason = failure_reason(exc)
            raise Unavailable(
                "unavailable",
                f"could not reach Chips at {self.url}: {reason}",
                extra={"url": self.url, "reason": reason},
            ) from None
        try:
            body = response.json()
        except ValueError:
            raise ChipsError(
                "unavailable" if response.status_code >= 500 else "invalid_request",
                f"Chips at {self.url} answered {response.status_code} without JSON",
                status=response.status_code,
            ) from None
        if response.status_code >= 400:
            raise ChipsError.from_body(
                body if isinstance(body, dict) else {"message": str(body)}, response.status_code
            )
        if not isinstance(body, dict):
            raise ChipsError("invalid_request", f"Chips answered {body!r}")
        return body

    async def get(self, path: str, **params: Any) -> dict[str, Any]:
        return await self.request("GET", path, params=params)

    async def post(self, path: str, body: Any = None, **params: Any) -> dict[str, Any]:
        return await self.request("POST", path, json=body, params=params)

    # --- the calls a harness or a person makes --------------------------------------

    async def ticket(self) -> str:
        """A single-use socket ticket (30 seconds) for ``/v1/ws?ticket=``."""
        return str((await self.post("/v1/socket-tickets"))["ticket"])

    async def append(self, event: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/events``: one event with its ``idempotency_key``; answered like an ack."""
        return await self.post("/v1/events", event)

    async def events(
        self, since: int = 0, *, space_id: str | None = None, limit: int = 100
    ) -> dict[str, Any]:
        """``GET /v1/events``: ``{events, next_since}``, oldest first."""
        return await self.get("/v1/events", since=since, space_id=space_id, limit=limit)

    async def spaces(self, *, archived: bool = False, after_seq: int | None = None) -> list[Any]:
        """``GET /v1/spaces``: the caller's spaces, newest activity first."""
        body = await self.get(
            "/v1/spaces", archived="true" if archived else None, after_seq=after_seq
        )
        return list(body["spaces"])

    async def space(self, space_id: str) -> dict[str, Any]:
        """``GET /v1/spaces/:id``: the room sheet."""
        return await self.get(f"/v1/spaces/{space_id}")

    async def messages(
        self, space_id: str, *, since: int | None = None, limit: int | None = None
    ) -> list[Any]:
        """``GET /v1/spaces/:id/messages``: what the room shows, oldest first."""
        body = await self.get(f"/v1/spaces/{space_id}/messages", since=since, limit=limit)
        return list(body["messages"])

    async def context(
        self, space_id: str, *, before: int | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """``GET /v1/spaces/:id/context``: older lines, in a ``message.new`` context's shape."""
        return await self.get(f"/v1/spaces/{space_id}/context", before=before, limit=limit)

    async def participants(self) -> list[Any]:
        """``GET /v1/participants``: the workspace's directory."""
        return list((await self.get("/v1/participants"))["participants"])

    async def run(self, run_id: str, *, after_seq: int | None = None) -> dict[str, Any]:
        """``GET /v1/runs/:id``: a run as its receipt."""
        return await self.get(f"/v1/runs/{run_id}", after_seq=after_seq)

    async def open_space(
        self, harness_id: str, key: str, *, title: str | None = None, shared: bool = False
    ) -> dict[str, Any]:
        """``POST /v1/harnesses/:id/spaces``: a harness opens (or finds) its room for ``key``."""
        body: dict[str, Any] = {"key": key, "shared": shared}
        if title is not None:
            body["title"] = title
        return await self.post(f"/v1/harnesses/{harness_id}/spaces", body)

    async def upload(self, data: bytes, *, name: str | None = None) -> Uploaded:
        """``POST /v1/uploads``: the file's bytes, stored; answers the upload, whose
        ``upload_id`` a message posts, or an agent is given as its face."""
        headers = {"Content-Type": "application/octet-stream"}
        answer = await self.request(
            "POST", "/v1/uploads", content=data, params={"name": name}, headers=headers
        )
        return cast(Uploaded, answer)

    async def register_agent(
        self,
        harness_id: str,
        key: str,
        name: str,
        *,
        face: str | None = None,
        **fields: Any,
    ) -> RegisteredAgent:
        """``POST /v1/harnesses/:id/agents``: register one of the harness's agents by key
        (the same key again is the same agent). ``face`` is one emoji, or the ``upload_id``
        of a picture the harness uploaded (:meth:`upload`); ``""`` takes it off, and None
        keeps the one it has. ``fields``: ``lead``, ``state``, ``forked_from``,
        ``made_for``, ``space_id``. Answers the agent as it stands."""
        body = {"key": key, "name": name, **fields}
        if face is not None:
            body["face"] = face
        return cast(RegisteredAgent, await self.post(f"/v1/harnesses/{harness_id}/agents", body))
