"""@chipschat/protocol, used for real: a Node harness built on it hears a person, answers,
and renders the turn's context and room note exactly as the Python SDK does.

The package (web/packages/protocol) is built with the app's TypeScript into a folder of
the test's own, installed there by name, and ``examples/node/harness.mjs`` runs against
the stack as a harness does: a socket ticket, hello, subscribe, a message.new, an answer
written on the socket and acknowledged.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from chips_devstack.stack import Stack
from chips_sdk.render import render_context, render_room_note
from tests.e2e.client import Api

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "web" / "packages" / "protocol"
TSC = ROOT / "web" / "node_modules" / ".bin" / "tsc"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the example harness, with the package built and installed in its
    node_modules under its name, as a harness's own project would have it."""
    if shutil.which("node") is None or not TSC.exists():
        pytest.fail("node and web/node_modules (make web) are needed")
    home = tmp_path_factory.mktemp("node-harness")
    target = home / "node_modules" / "@chipschat" / "protocol"
    target.mkdir(parents=True)
    shutil.copy(PACKAGE / "package.json", target / "package.json")
    build = subprocess.run(
        [str(TSC), "-p", str(PACKAGE / "tsconfig.json"), "--outDir", str(target / "dist")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    shutil.copy(ROOT / "examples" / "node" / "harness.mjs", home / "harness.mjs")
    return home


def node_flags() -> list[str]:
    """Node 22 has WebSocket built in; Node 20 has it behind a flag."""
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    major = int(version.strip().lstrip("v").split(".")[0])
    return ["--experimental-websocket"] if major < 22 else []


async def test_a_node_harness_on_the_package_answers_and_renders_as_the_sdk_does(
    stack: Stack, api: Api, installed: Path
) -> None:
    owner = await api.create_workspace()
    harness, home = await api.connect_harness(owner, "Scout")
    earlier = await api.say(owner, home, "First, some context for the turn.")
    proc = await asyncio.create_subprocess_exec(
        "node",
        *node_flags(),
        "harness.mjs",
        "--once",
        cwd=installed,
        env={
            **os.environ,
            "CHIPS_URL": stack.gateway_a,
            "CHIPS_HARNESS_TOKEN": harness.token,
            "CHIPS_SINCE": str(earlier),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    asked = await api.say(owner, home, "Can you check the build?")
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    turns = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert len(turns) == 1, turns
    turn = turns[0]
    message = turn["message"]
    assert message["seq"] == asked and message["text"] == "Can you check the build?"

    # The package's words are the SDK's, byte for byte, on what the harness was sent.
    assert "First, some context for the turn." in turn["context"]
    assert turn["context"] == render_context(message.get("context"))
    assert turn["taker"] == harness.participant_id  # no agents of its own: its turn
    assert turn["note"] == render_room_note(message.get("room"), harness.participant_id)
    assert turn["note"].startswith("In this space:")

    # Its answer was logged, as a reply, and reads in the room.
    answer: list[dict[str, object]] = []
    for _ in range(100):  # the read model follows the log: until it holds the answer
        lines = await api.lines(owner, home, after_seq=asked)
        answer = [x for x in lines if x.get("text") == "Heard: Can you check the build?"]
        if answer:
            break
        await asyncio.sleep(0.1)
    assert len(answer) == 1, lines
