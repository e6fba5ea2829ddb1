"""The first hour (issue 26): what a newcomer has in hand finds what they look for.

`chips say` prints the seq and the message id it got; `chips trace` takes either, or the
trace id of an ack, and says plainly when an id is unknown; a harness on a person's token
stops at once, saying which variable to set.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chips_sdk import Client, Forbidden, Unauthorized
from tests.e2e.client import Api, key

CHIPS = str(Path(sys.executable).parent / "chips")


async def chips(stack, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIPS_")}
    env.update(CHIPS_URL=stack.gateway_a, CHIPS_TRACE_FILE=stack.env["CHIPS_TRACE_FILE"])
    if token:
        env["CHIPS_TOKEN"] = token
    return await asyncio.to_thread(
        subprocess.run, [CHIPS, *args], env=env, capture_output=True, text=True, timeout=90
    )


async def test_say_prints_its_seq_and_message_id_and_trace_takes_any_id(stack, api: Api) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Northwind")

    said = await chips(stack, "say", "Northwind", "Where is the PO?", token=owner.token)
    assert said.returncode == 0, said.stderr
    found = re.fullmatch(r"said in Northwind \(seq (\d+), (msg_[0-9A-Z]{26})\)\n", said.stdout)
    assert found, said.stdout
    seq, message_id = found.groups()
    as_json = json.loads(
        (await chips(stack, "--json", "say", room, "And the invoice", token=owner.token)).stdout
    )
    assert as_json["message_id"].startswith("msg_") and as_json["seq"] == int(seq) + 1

    posted = await api.post_event(
        owner,
        {"type": "message.post", "space_id": room, "text": "traced", "idempotency_key": key()},
    )
    ack = posted.json()
    assert ack["message_id"].startswith("msg_") and len(ack["trace_id"]) == 32

    # The trace of what was said, by its seq, by its message id; the post's by its trace id.
    by_seq = await chips(stack, "trace", seq, token=owner.token)
    by_message = await chips(stack, "trace", message_id)
    by_trace = await chips(stack, "trace", ack["trace_id"])
    for done in (by_seq, by_message, by_trace):
        assert done.returncode == 0, done.stderr
        assert "gateway.receive event" in done.stdout and "eventlog.commit" in done.stdout
    assert by_seq.stdout.splitlines()[0] == by_message.stdout.splitlines()[0]
    assert by_trace.stdout.splitlines()[0] == f"trace {ack['trace_id']}"
    # The message's trace, by its message id, once whole.
    assert "incomplete" not in by_message.stdout, by_message.stdout

    # A seq past the log's head is unknown, said at once; one without a token cannot be read.
    unknown = await chips(stack, "trace", "999999", token=owner.token)
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    assert "no event at seq 999999 in your rooms: that seq is unknown" in unknown.stderr
    tokenless = await chips(stack, "trace", seq)
    assert tokenless.returncode == 1 and "a seq is one workspace's" in tokenless.stderr


async def test_a_harness_on_a_person_s_token_stops_saying_what_to_set(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, home = await api.connect_harness(owner, "Scout")

    # From the environment, as the README's harness reads it: refused before connecting.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIPS_")}
    env.update(CHIPS_URL=stack.gateway_a, CHIPS_TOKEN=owner.token)
    harness = "from chips_sdk import Client\nClient()\n"
    ran = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", harness], env=env, capture_output=True, text=True
    )
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == (
        "chips_sdk.settings.SettingError: CHIPS_TOKEN is a person's token (chips_pt_…), and a "
        "harness runs on its own: set CHIPS_HARNESS_TOKEN to the token `chips connect` "
        "printed (chips_at_…)"
    )

    # Given one in code, a client that answers message.new stops at hello, saying why.
    client = Client(stack.gateway_a, owner.token, name="echo")

    @client.on("message.new")
    async def echo(message: dict[str, object]) -> None:  # pragma: no cover - never called
        raise AssertionError("a person's socket was handed message.new")

    with pytest.raises(Unauthorized, match=r"this token is a person's \(Arjun Rao's\)"):
        await asyncio.wait_for(client.start(), 20)
    assert client.closed
    await client.close()

    # A person's tool may connect as its person; what only a harness does is refused, saying
    # which token it takes.
    async with Client(stack.gateway_a, owner.token, name="tool") as tool:
        with pytest.raises(Forbidden, match=r"on its own token \(the one `chips connect`"):
            async with tool.report_run(home, "Find the PO"):
                pass
