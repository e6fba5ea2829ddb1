"""The chips command line against a running gateway (issue: identity and bootstrap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_run_cards import approval
from tests.e2e.test_runs import harness_room, start
from tests.e2e.test_threads import message_id

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


def test_workspace_create_prints_the_owners_lines_for_a_shell(stack, tmp_path) -> None:
    made = chips(stack, "workspace", "create", "--name", "Acme", "--owner", "Arjun Rao", "--env")
    assert made.returncode == 0, made.stderr
    lines = dict(line.split("=", 1) for line in made.stdout.strip().splitlines())
    assert lines == {"CHIPS_URL": stack.gateway_a, "CHIPS_TOKEN": lines["CHIPS_TOKEN"]}
    assert lines["CHIPS_TOKEN"].startswith("chips_pt_")
    assert "Arjun Rao (usr_" in made.stderr and "shown once" in made.stderr
    # The lines, loaded as the README loads them, are the owner's terminal.
    (tmp_path / "arjun.env").write_text(made.stdout)
    env = {k: v for k, v in os.environ.items() if k not in ("CHIPS_URL", "CHIPS_TOKEN")}
    loaded = subprocess.run(
        ["bash", "-c", f"set -a; . ./arjun.env; set +a; {CHIPS} person add --name 'Maya Chen'"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["name"] == "Maya Chen"


async def test_command_line_errors_are_one_sentence(stack) -> None:
    no_token = chips(stack, "person", "add", "--name", "Maya")
    assert no_token.returncode == 1 and "token" in no_token.stderr
    bad = chips(stack, "person", "add", "--name", "Maya", token="chips_pt_wrong")
    assert bad.returncode == 1 and "unauthorized" in bad.stderr
    assert "Traceback" not in bad.stderr


async def test_approve_decides_one_asked_in_a_thread_and_says_why_one_is_not_waiting(
    stack, api: Api
) -> None:
    owner, jacobian, room = await harness_room(api)
    root = await message_id(api, owner, room, await api.say(owner, room, "order the PO?"))
    thread = await api.open_thread(owner, room, root)
    card = await approval(api, jacobian, await start(api, jacobian, thread))

    decided = chips(stack, "approve", "--wait", "10", token=owner.token)
    assert decided.returncode == 0, decided.stderr
    assert decided.stdout.strip() == f"approved jacobian.shell.execute ({card})"

    again = chips(stack, "approve", card, token=owner.token)
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"chips: not_waiting: approval {card} was decided already: approved by Arjun Rao"
    )
    unknown = chips(stack, "approve", "apv_nobody_asked", token=owner.token)
    assert unknown.stderr.strip() == (
        "chips: not_found: no approval apv_nobody_asked was asked in your rooms or their threads"
    )
