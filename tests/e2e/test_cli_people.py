"""The command line invites, pairs itself as a device and revokes (docs/adr/0125)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from chips_devstack.stack import Stack
from tests.e2e.client import Api
from tests.e2e.test_cli import CHIPS


def chips(
    stack: Stack, *args: str, token: str | None = None, device: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHIPS_URL": stack.gateway_a}
    env.pop("CHIPS_TOKEN", None)
    if token:
        env["CHIPS_TOKEN"] = token
    if device:
        env["CHIPS_DEVICE_FILE"] = str(device)
    return subprocess.run([CHIPS, *args], env=env, capture_output=True, text=True, timeout=60)


async def test_invite_login_say_and_revoke_from_the_command_line(
    stack: Stack, api: Api, tmp_path: Path
) -> None:
    owner = await api.create_workspace()
    made = chips(
        stack,
        "--json",
        "person",
        "invite",
        "--name",
        "Dana",
        "--role",
        "member",
        token=owner.token,
    )
    assert made.returncode == 0, made.stderr
    link = json.loads(made.stdout)["url"]
    listed = chips(stack, "person", "invites", token=owner.token)
    assert "Dana" in listed.stdout

    key_file = tmp_path / "device.json"
    signed = chips(stack, "login", link, "--name", "laptop", device=key_file)
    assert signed.returncode == 0, signed.stderr
    assert "signed in to Acme as Dana" in signed.stdout
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    kept = json.loads(key_file.read_text())
    assert "PRIVATE KEY" in kept["private_key"] and "token" not in kept

    # With no token, every command signs for a session with the key file.
    room = await api.open_space(owner, "Launch", [kept["participant_id"]])
    said = chips(stack, "say", room, "from Dana's laptop", device=key_file)
    assert said.returncode == 0, said.stderr
    devices = chips(stack, "--json", "device", "list", device=key_file)
    assert [d["kind"] for d in json.loads(devices.stdout)] == ["cli"]
    code = chips(stack, "--json", "device", "code", device=key_file)
    assert code.returncode == 0, code.stderr

    dana = kept["participant_id"]
    role = chips(stack, "person", "role", dana, "guest", token=owner.token)
    assert role.returncode == 0, role.stderr
    guest_try = chips(stack, "person", "invite", "--name", "X", device=key_file)
    assert guest_try.returncode == 1 and "owner or admin" in guest_try.stderr

    gone = chips(stack, "device", "revoke", kept["device_id"], token=owner.token)
    assert gone.returncode == 0, gone.stderr
    refused = chips(stack, "spaces", device=key_file)
    assert refused.returncode == 1 and "revoked" in refused.stderr
    # A room Dana owns (made so by its opener): deactivating her asks who takes it.
    theirs = await api.open_space(owner, "Dana's", [])
    r = await api.add_to_room(owner, theirs, dana, standing="owner")
    assert r.status_code == 200, r.text
    off = chips(stack, "person", "deactivate", dana, token=owner.token)
    assert off.returncode == 1, off.stdout
    assert "Dana owns 1 room: name the active person" in off.stderr
    assert "--rooms-to" in off.stderr
    off = chips(
        stack,
        "person",
        "deactivate",
        dana,
        "--rooms-to",
        owner.participant_id,
        token=owner.token,
    )
    assert off.returncode == 0, off.stderr
    assert f"the rooms they owned (1) are {owner.participant_id}'s now" in off.stdout
    on = chips(stack, "person", "reactivate", dana, token=owner.token)
    assert on.returncode == 0 and "invite them back" in on.stdout, on.stderr
