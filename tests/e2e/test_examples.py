"""The examples in examples/ run against the real stack, as a harness author would run them."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.e2e.client import Api, Identity, Socket

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@asynccontextmanager
async def harness_process(script: str, url: str, token: str) -> AsyncIterator[None]:
    """Run an example until the block ends; it is ready once it says it connected."""
    env = {**os.environ, "CHIPS_URL": url, "CHIPS_HARNESS_TOKEN": token}
    env.pop("CHIPS_TOKEN", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / script),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    said: list[str] = []
    try:
        assert proc.stderr is not None
        async with asyncio.timeout(30):
            while True:
                line = (await proc.stderr.readline()).decode()
                said.append(line)
                assert line, f"{script} ended before connecting: {''.join(said)}"
                if "connected to" in line:
                    break
        yield
    finally:
        proc.terminate()
        await proc.wait()


async def answer_of(sock: Socket, harness: Identity, after: int) -> dict:
    frame = await sock.wait_for(
        lambda f: (
            f["frame"] == "event"
            and f["event"]["type"] == "message.post"
            # Its words, logged as the agent Chips gave it in the room (docs/adr/0154).
            and harness.participant_id
            in (f["event"]["actor"]["id"], f["event"]["actor"].get("harness_id"))
            and f["event"]["seq"] > after
        ),
        timeout=30,
    )
    return frame["event"]


async def test_the_echo_example_answers(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, home = await api.connect_harness(owner, "Echo")
    person = await Socket.open(stack.gateway_a, owner)
    await person.subscribe(owner.workspace_id)
    async with harness_process("echo.py", stack.gateway_b, harness.token):
        seq = await api.say(owner, home, "Is anybody there?")
        echoed = await answer_of(person, harness, seq)
    assert echoed["text"] == "You said: Is anybody there?"
    assert echoed["reply_to"]  # the message it answers
    await person.close()


async def test_the_reporter_example_reports_a_run_asks_and_answers(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, home = await api.connect_harness(owner, "Reporter")
    person = await Socket.open(stack.gateway_a, owner)
    await person.subscribe(owner.workspace_id)

    def asked(kind: str):
        return lambda f: f["frame"] == "event" and f["event"]["type"] == kind

    async with harness_process("reporter.py", stack.gateway_b, harness.token):
        seq = await api.say(owner, home, "Summarise the Northwind thread")
        request = (await person.wait_for(asked("approval.request"), 30))["event"]
        assert request["action"] == "files.write" and request["risk"] == "low"
        await api.append(
            owner,
            {
                "type": "approval.resolved",
                "approval_id": request["approval_id"],
                "decision": "approve",
            },
        )
        question = (await person.wait_for(asked("question.ask"), 30))["event"]
        assert [o["value"] for o in question["options"]] == ["short", "long"]
        await api.append(
            owner,
            {"type": "question.answered", "question_id": question["question_id"], "value": "short"},
        )
        answer = await answer_of(person, harness, seq)
        completed = (await person.wait_for(asked("run.completed"), 30))["event"]

    assert answer["text"] == "Done: summary.txt is written, short."
    r = await api.http.get(
        f"/v1/runs/{completed['run_id']}",
        params={"after_seq": completed["seq"]},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["state"] == "completed" and run["summary"] == answer["text"]
    assert [s["status"] for s in run["steps"]] == ["done"]
    assert run["usage"]["tokens_out"] == 42 and run["usage"]["cost_usd"] == 0.002
    assert len(run["cards"]) == 2 and all(c["answer"] is not None for c in run["cards"])
    await person.close()
