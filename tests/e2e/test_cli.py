"""The chips command line against a running gateway (issue: identity and bootstrap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.client import Identity, Socket

CHIPS = str(Path(sys.executable).parent / "chips")


def chips(stack, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHIPS_URL": stack.gateway_a}
    env.pop("CHIPS_TOKEN", None)
    if token:
        env["CHIPS_TOKEN"] = token
    return subprocess.run([CHIPS, *args], env=env, capture_output=True, text=True, timeout=60)


async def test_workspace_person_and_custom_harness_from_the_command_line(stack) -> None:
    made = chips(stack, "workspace", "create", "--name", "Acme", "--owner", "Arjun Rao")
    assert made.returncode == 0, made.stderr
    ws = json.loads(made.stdout)
    assert ws["workspace_id"].startswith("ws_") and ws["owner_id"].startswith("usr_")
    assert ws["token"].startswith("chips_pt_")

    person = chips(stack, "person", "add", "--name", "Maya Chen", token=ws["token"])
    assert person.returncode == 0, person.stderr
    assert json.loads(person.stdout)["participant_id"].startswith("usr_")

    connected = chips(stack, "connect", "custom", "--name", "Scout", "--no-dial", token=ws["token"])
    assert connected.returncode == 0, connected.stderr
    lines = dict(line.split("=", 1) for line in connected.stdout.strip().splitlines())
    assert list(lines) == ["CHIPS_URL", "CHIPS_HARNESS_ID", "CHIPS_HARNESS_TOKEN", "CHIPS_SPACE_ID"]
    assert lines["CHIPS_HARNESS_TOKEN"].startswith("chips_at_")

    harness = Identity(ws["workspace_id"], lines["CHIPS_HARNESS_ID"], lines["CHIPS_HARNESS_TOKEN"])
    sock = await Socket.open(lines["CHIPS_URL"], harness)
    assert sock.hello_frame and sock.hello_frame["harness"]["owner_id"] == ws["owner_id"]
    assert sock.hello_frame["spaces"] == [lines["CHIPS_SPACE_ID"]]
    await sock.close()


async def test_command_line_errors_are_one_sentence(stack) -> None:
    no_token = chips(stack, "person", "add", "--name", "Maya")
    assert no_token.returncode == 1 and "token" in no_token.stderr
    bad = chips(stack, "person", "add", "--name", "Maya", token="chips_pt_wrong")
    assert bad.returncode == 1 and "unauthorized" in bad.stderr
    assert "Traceback" not in bad.stderr
