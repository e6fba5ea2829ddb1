"""The S3 endpoint stops answering: uploads are refused clearly, nothing else waits on it.

Files are the one thing that needs S3 (docs/architecture/design.md §6). While it does not
answer, an upload is told ``unavailable`` (503, a code, a sentence and when to try again) within
seconds, not after the client gave up; posting, searching and the socket go on as before; and
once S3 answers again, the files kept before it went are fetched as ever and uploads work.

The endpoint is paused (SIGSTOP), not killed: it accepts connections and answers none, the
hardest way for S3 to be away (a client waits for a read timeout, not a refused connect),
and it keeps its objects, so the fetch afterwards proves nothing was lost.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity
from tests.e2e.test_attachments import PDF, delivered, harness_room, post, upload, uploaded

# How long an upload may take to be refused while S3 is away: the attachments service's
# deadline for the file store (CHIPS_S3_DEADLINE_SECONDS), with room for a busy machine.
REFUSED_WITHIN = 15.0


async def timed_posts(api: Api, who: Identity, space_id: str, word: str, n: int) -> list[float]:
    """Post n lines with ``word``; how long each took to be acknowledged (seconds)."""
    took = []
    for i in range(n):
        started = time.monotonic()
        await api.say(who, space_id, f"{word} line {i}")
        took.append(time.monotonic() - started)
    return took


@pytest.mark.timeout(240)
async def test_s3_away_refuses_uploads_clearly_and_nothing_else_waits(
    stack: Stack, api: Api
) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    kept_id = await uploaded(api, owner, PDF, "kept.pdf")
    seq = await api.append(owner, post(home, [kept_id], "filed before the outage"))
    [kept] = (await delivered(sock, seq))["attachments"]
    idle = await timed_posts(api, owner, home, "quiet", 10)

    stack.pause("infra-s3")
    try:
        started = time.monotonic()
        r = await upload(api, owner, PDF + b"% another\n", "during.pdf")
        refused_in = time.monotonic() - started
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["code"] == "unavailable" and "file store" in body["message"], body
        assert int(r.headers["Retry-After"]) >= 1
        assert refused_in < REFUSED_WITHIN, f"the upload was refused after {refused_in:.1f} s"

        # Posting, the socket and search go on without the file store.
        away = await timed_posts(api, owner, home, "zanzibar", 10)
        last = await api.say(owner, home, "the last zanzibar line")
        await sock.wait_for_seq(last, timeout=10)
        found = await api.http.get(
            "/v1/search", params={"q": "zanzibar", "after_seq": last}, headers=api.auth(owner)
        )
        assert found.status_code == 200, found.text
        assert len(found.json()["hits"]) == 11
    finally:
        stack.resume("infra-s3")
    print(
        f"upload refused in {refused_in:.2f} s; post ack max idle {max(idle) * 1000:.0f} ms,"
        f" while S3 away {max(away) * 1000:.0f} ms"
    )
    assert max(away) < max(2.0, 4 * max(idle)), "posts waited on the file store"

    # S3 answers again: the file kept before is fetched whole, and uploads work.
    async with httpx.AsyncClient(timeout=30) as http:
        got = await http.get(kept["url"])
    assert got.status_code == 200 and got.content == PDF
    after_id = await asyncio.wait_for(uploaded(api, owner, PDF + b"% after\n", "after.pdf"), 60)
    seq = await api.append(owner, post(home, [after_id], "filed after the outage"))
    [after] = (await delivered(sock, seq))["attachments"]
    async with httpx.AsyncClient(timeout=30) as http:
        got = await http.get(after["url"])
    assert got.status_code == 200 and got.content == PDF + b"% after\n"
    await sock.close()
    del harness
