"""A lean HTTP/1.1 client for the benches: one kept-alive connection, no pool, no models.

httpx costs this machine 2.2-2.7 ms of CPU per request (bench/HISTORY.md, "The
floor"): in a closed loop on two cores that is most of a figure whose target is 2 ms,
and under eight in flight it takes a core from the services it measures. What a bench
needs of a client is to write a request and read its answer; this does only that, as wrk
or h2load would, so the figures are the server's. Answers with ``Content-Length`` or
chunked bodies are read; anything else is an error.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson


class LeanHttp:
    """``await LeanHttp.open(base)``, then ``post`` one request at a time."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @classmethod
    async def open(cls, base: str) -> LeanHttp:
        host, _, port = base.removeprefix("http://").rstrip("/").partition(":")
        client = cls(host, int(port or 80))
        await client._connect()
        return client

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post(
        self, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """POST ``body`` as JSON; the status and the answer's bytes."""
        return await self.request("POST", path, body, headers)

    async def request(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """``method`` with ``body`` as JSON (a PUT of a peer's API, say)."""
        data = b"" if body is None else orjson.dumps(body)
        head = [
            f"{method} {path} HTTP/1.1",
            f"host: {self.host}:{self.port}",
            *(["content-type: application/json"] if body is not None else []),
            f"content-length: {len(data)}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        if self.writer is None or self.writer.is_closing():
            await self._connect()
        assert self.reader is not None and self.writer is not None
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        return await self._answer()

    async def _answer(self) -> tuple[int, bytes]:
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        if "content-length" in fields:
            body = await self.reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            raise ValueError(f"an answer this client cannot read: {lines[0]} {fields}")
        if fields.get("connection", "").lower() == "close" and self.writer is not None:
            self.writer.close()
        return status, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()
