"""A gateway whose database does not answer says so: ``unavailable``, with a retry hint.

The gateway starts without its database (``/readyz`` says so); a request that needs it, the
check of who a token is first, used to fail with an unhandled 500 or a dropped connection,
which the command line reported as "could not reach Chips" (issue 26). Here the database's
host name does not resolve.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from chips_devstack.procs import health, wait_until
from chips_devstack.stack import Stack
from tests.e2e.client import Api, Socket

GATEWAY = "gateway_no_db"
CHIPS = str(Path(sys.executable).parent / "chips")
CHECKING = (
    "Chips cannot check who you are right now: its database does not answer; "
    "try again in a few seconds"
)


@pytest.fixture(scope="module")
def no_db(stack: Stack) -> Iterator[str]:
    # Whether the stack's Postgres is on TCP or on a Unix socket (?host=<directory>, as an
    # embedded one is), the gateway is sent to a host name that never resolves.
    real = make_url(stack.env["CHIPS_DATABASE_URL"])
    url = real.set(host="chips-nowhere.invalid", port=5432, query={}).render_as_string(
        hide_password=False
    )
    stack.extra_env[GATEWAY] = {"CHIPS_DATABASE_URL": url}
    stack.start(GATEWAY)
    # It starts, but is not ready: wait for it to answer at all.
    wait_until(lambda: health(stack.url(GATEWAY)), 60, GATEWAY, stack.procs[GATEWAY])
    yield stack.url(GATEWAY)
    stack.stop(GATEWAY)


async def test_signing_in_while_the_database_is_away_is_unavailable_with_a_retry_hint(
    stack: Stack, api: Api, no_db: str
) -> None:
    owner = await api.create_workspace()
    gw = Api(no_db)
    try:
        ready = await gw.http.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["postgres"] is False
        for method, path in (("POST", "/v1/socket-tickets"), ("GET", "/v1/spaces")):
            r = await gw.http.request(method, path, headers=gw.auth(owner))
            assert r.status_code == 503, r.text
            assert r.json() == {"code": "unavailable", "message": CHECKING, "retry_after": 2}
            assert r.headers["retry-after"] == "2"
        # The socket is refused the same way, and told to come back (1013, try again later).
        sock = await Socket.open(no_db, owner, hello=False)
        refused = await sock.wait_for(lambda f: f["frame"] == "error")
        assert refused == {
            "frame": "error",
            "code": "unavailable",
            "message": CHECKING,
            "retry_after": 2,
        }
        await sock.conn.wait_closed()
        assert sock.conn.close_code == 1013
    finally:
        await gw.close()
    assert "Traceback" not in stack.procs[GATEWAY].tail(200)


def test_the_command_line_says_the_gateway_s_sentence(stack: Stack, no_db: str) -> None:
    env = {**os.environ, "CHIPS_URL": no_db, "CHIPS_TOKEN": "chips_pt_whoever"}
    spaces = subprocess.run([CHIPS, "spaces"], env=env, capture_output=True, text=True, timeout=60)
    assert spaces.returncode == 1
    assert spaces.stderr.strip() == f"chips: unavailable: {CHECKING}"
