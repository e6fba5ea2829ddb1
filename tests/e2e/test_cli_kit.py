"""The rest of the command line (issue 14): say, spaces, tail, doctor, disconnect, --json,
the autonomy dial and numbered names; every error one line, exit 1, no traceback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from chips_sdk import Client
from tests.e2e.client import Api, Identity, Socket

CHIPS = str(Path(sys.executable).parent / "chips")


def chips(url: str, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHIPS_URL": url}
    for name in ("CHIPS_TOKEN", "CHIPS_HARNESS_TOKEN"):
        env.pop(name, None)
    if token:
        env["CHIPS_TOKEN"] = token
    return subprocess.run([CHIPS, *args], env=env, capture_output=True, text=True, timeout=60)


async def run(url: str, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(chips, url, *args, token=token)


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(("chips: ", "{")), done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


async def test_say_spaces_and_tail_for_a_person(stack, api: Api) -> None:
    owner = await api.create_workspace()
    url = stack.gateway_a
    room = await api.open_space(owner, "Northwind POs")

    said = await run(url, "say", "Northwind POs", "Send the PO today", token=owner.token)
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith("said in Northwind POs (seq ")
    as_json = await run(url, "--json", "say", room, "And the invoice", token=owner.token)
    ack = json.loads(as_json.stdout)
    assert ack["space_id"] == room and ack["duplicate"] is False

    listed = await run(url, "spaces", "--json", token=owner.token)
    spaces = json.loads(listed.stdout)
    assert [s["title"] for s in spaces if s["id"] == room] == ["Northwind POs"]
    plain = await run(url, "spaces", token=owner.token)
    assert f"{room}  Northwind POs" in plain.stdout

    # tail from a seq replays what was said after it, here across both gateways.
    since = ack["seq"] - 2
    both = f"{stack.gateway_b},{stack.gateway_a}"
    tailed = await run(
        both, "tail", "Northwind POs", "--since", str(since), "--count", "2", token=owner.token
    )
    assert tailed.returncode == 0, tailed.stderr
    lines = tailed.stdout.splitlines()
    assert "Arjun Rao: Send the PO today" in lines[0] and "Arjun Rao: And the invoice" in lines[1]

    # The same, live, in JSON lines.
    following = asyncio.create_task(
        run(url, "--json", "tail", room, "--count", "1", token=owner.token)
    )
    await asyncio.sleep(0)
    sent = None
    while not following.done():  # say until the follower, which starts from now, hears it
        sent = await api.say(owner, room, "live words")
        await asyncio.wait([following], timeout=1)
    event = json.loads((await following).stdout.splitlines()[0])
    assert event["type"] == "message.post" and event["text"] == "live words"
    assert sent is not None and event["seq"] <= sent


async def test_the_third_line_of_the_tail_above_comes_live(stack, api: Api) -> None:
    """tail --since replays and then follows: a word said while it runs is its next line."""
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Live")
    seq = await api.say(owner, room, "before")
    tailing = asyncio.create_task(
        run(
            stack.gateway_a,
            "tail",
            room,
            "--since",
            str(seq - 1),
            "--count",
            "2",
            token=owner.token,
        )
    )
    while not tailing.done():
        await api.say(owner, room, "during")
        await asyncio.wait([tailing], timeout=1)
    lines = (await tailing).stdout.splitlines()
    assert "before" in lines[0] and "during" in lines[1]


async def test_the_autonomy_dial_and_numbered_names(stack, api: Api) -> None:
    owner = await api.create_workspace()
    url = stack.gateway_a

    def connected(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first = connected(
        await run(
            url, "--json", "connect", "custom", "--name", "Scout", "--no-dial", token=owner.token
        )
    )
    second = await run(url, "connect", "custom", "--name", "scout", token=owner.token)
    assert second.returncode == 0 and "this harness is scout 2" in second.stderr
    third = connected(
        await run(
            url,
            "connect",
            "custom",
            "--name",
            "Scout",
            "--autonomy",
            "L2",
            "--json",
            token=owner.token,
        )
    )
    assert (first["name"], third["name"]) == ("Scout", "Scout 3")
    assert (first["autonomy"], third["autonomy"]) == ("off", "L2")

    async def hello_of(lines: dict[str, str]) -> Socket:
        who = Identity(owner.workspace_id, lines["CHIPS_HARNESS_ID"], lines["CHIPS_HARNESS_TOKEN"])
        return await Socket.open(url, who)

    no_dial = await hello_of(first)
    dialled = await hello_of(third)
    assert no_dial.hello_frame["autonomy"] == "off" and dialled.hello_frame["autonomy"] == "L2"
    assert dialled.hello_frame["harness"]["name"] == "Scout 3"
    await no_dial.close()
    await dialled.close()

    # Each name now finds one harness: declare and disconnect are never ambiguous.
    declared = await run(url, "--json", "declare", "Scout 3", "new_spaces", token=owner.token)
    assert json.loads(declared.stdout)["harness_id"] == third["CHIPS_HARNESS_ID"]
    declared = await run(url, "declare", "scout", "agents", token=owner.token)
    assert json.loads(declared.stdout)["harness_id"] == first["CHIPS_HARNESS_ID"]


async def test_doctor_says_what_is_wrong_and_how_to_fix_it(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, _ = await api.connect_harness(owner, "Ledger")
    url = stack.gateway_a

    # As the harness, before it ever ran: everything works, but it was never seen.
    checked = await asyncio.to_thread(
        subprocess.run,
        [CHIPS, "--json", "doctor"],
        env={**os.environ, "CHIPS_URL": url, "CHIPS_HARNESS_TOKEN": harness.token},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses == {
        "gateway": "ok",
        "clock": "ok",
        "token": "ok",
        "socket": "ok",
        "last seen": "warn",
    }
    never = next(c for c in report["checks"] if c["name"] == "last seen")
    assert "never been used" in never["said"] and "four lines" in never["fix"]

    # Once the harness has subscribed, its owner's doctor says when.
    client = Client(url, harness.token, name="ledger")
    await client.start()
    await client.close()
    owner_checked = await run(url, "doctor", token=owner.token)
    assert owner_checked.returncode == 0, owner_checked.stdout
    assert "Ledger last subscribed" in owner_checked.stdout

    # A refused token fails the check, with the fix; exit 1.
    refused = await run(url, "doctor", token="chips_pt_nonsense")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "FAIL  token: Chips refuses the token" in refused.stdout
    assert "fix: copy the four lines again" in refused.stdout
    unreachable = await run("http://127.0.0.1:9", "doctor", token=owner.token)
    assert unreachable.returncode == 1 and "FAIL  gateway: nothing answers" in unreachable.stdout


async def test_every_command_fails_in_one_line(stack, api: Api) -> None:
    owner = await api.create_workspace()
    url = stack.gateway_a
    one_line_error(await run(url, "say", "Nowhere", "hello", token=owner.token), "titled 'Nowhere'")
    one_line_error(await run(url, "say", "spc_nope", "hello", token=owner.token), "forbidden")
    one_line_error(await run(url, "say", "Nowhere", "hello"), "token")
    one_line_error(await run(url, "spaces"), "token")
    one_line_error(await run(url, "spaces", token="chips_pt_wrong"), "unauthorized")
    one_line_error(await run(url, "tail", token="chips_pt_wrong"), "unauthorized")
    one_line_error(await run(url, "tail", "Nowhere", token=owner.token), "titled 'Nowhere'")
    one_line_error(
        await run(url, "disconnect", "Ghost", token=owner.token), "no harness is called 'Ghost'"
    )
    one_line_error(await run(url, "declare", "Ghost", "agents", token=owner.token), "no harness")
    one_line_error(
        await run("http://127.0.0.1:9", "spaces", token=owner.token), "could not reach Chips"
    )
    as_json = await run(url, "--json", "spaces", token="chips_pt_wrong")
    one_line_error(as_json)
    assert json.loads(as_json.stderr)["code"] == "unauthorized"
