"""The image and ``docker-compose.yml``, run for real with Podman (``make test-deploy``).

The image is built from ``Dockerfile`` as shipped, on stand-in base images made from Debian
packages (``standins.py``: no container registry is reachable here); then the compose file is
brought up with podman-compose, three gateways (``--scale gateway=3``) behind the balancer, and
used as a newcomer would: the README's first steps through the balancer, a post through each
gateway heard through another, a file up and down; then ``down`` leaves nothing behind.

Podman below 4.6 cannot wait for a container's health, so podman-compose ignores
``service_healthy``: the test brings the services up in the order the file's ``depends_on``
gives, and runs each health check itself before starting what depends on it, as Docker
Compose would.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
import yaml

from chips_devstack.procs import free_port
from tests.deploy import standins

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(1500)]

ROOT = standins.ROOT
BIN = Path(sys.executable).parent
PROJECT = "chips-deploytest"
IMAGE = "localhost/chips:deploytest"
GATEWAYS = 3


def log(message: str) -> None:
    print(f"deploy: {message}", file=sys.stderr, flush=True)


class Compose:
    """podman-compose on docker-compose.yml, as project PROJECT, with the test's settings."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.file = yaml.safe_load((ROOT / "docker-compose.yml").read_text())

    def __call__(self, *args: str, timeout: float = 600) -> str:
        done = subprocess.run(
            [str(BIN / "podman-compose"), "-p", PROJECT, "-f", "docker-compose.yml", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"podman-compose {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout

    def podman(self, *args: str, check: bool = True, timeout: float = 60) -> str:
        done = subprocess.run(
            ["podman", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0 or not check, f"podman {' '.join(args)}: {done.stderr}"
        return done.stdout

    def containers(self, service: str) -> list[str]:
        out = self.podman(
            "ps", "-a", "--format", "{{.Names}}",
            "--filter", f"label=io.podman.compose.project={PROJECT}",
            "--filter", f"label=io.podman.compose.service={service}",
        )  # fmt: skip
        return sorted(out.split())

    def levels(self) -> list[list[str]]:
        """The services in the order their ``depends_on`` allows: each level only after
        everything of the levels before it."""
        services = self.file["services"]
        placed: dict[str, int] = {}
        while len(placed) < len(services):
            for name, service in services.items():
                deps = list(service.get("depends_on", {}))
                if name not in placed and all(d in placed for d in deps):
                    placed[name] = 1 + max((placed[d] for d in deps), default=-1)
        return [
            sorted(n for n, lvl in placed.items() if lvl == level)
            for level in range(max(placed.values()) + 1)
        ]

    def wait_ready(self, service: str, deadline: float) -> None:
        """Until the service is as its dependents ask: healthy where it has a health
        check, exited 0 where it runs once, else running."""
        spec = self.file["services"][service]
        once = spec.get("restart") == "no"
        for container in self.containers(service):
            while True:
                state = json.loads(self.podman("inspect", container))[0]["State"]
                if once and state["Status"] == "exited":
                    assert state["ExitCode"] == 0, self.logs(container)
                    break
                if not once and state["Status"] != "running" and time.monotonic() > deadline:
                    raise AssertionError(
                        f"{container} is {state['Status']}\n{self.logs(container)}"
                    )
                if not once and state["Status"] == "running":
                    if "healthcheck" not in spec:
                        break
                    healthy = subprocess.run(
                        ["podman", "healthcheck", "run", container],
                        env=self.env,
                        capture_output=True,
                        timeout=30,
                        check=False,
                    )
                    if healthy.returncode == 0:
                        break
                assert time.monotonic() < deadline, f"{container} not ready\n{self.logs(container)}"
                time.sleep(1)

    def logs(self, container: str, tail: str = "40") -> str:
        done = subprocess.run(
            ["podman", "logs", "--tail", tail, container],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout + done.stderr

    def address(self, container: str) -> str:
        networks = json.loads(self.podman("inspect", container))[0]["NetworkSettings"]["Networks"]
        (network,) = networks.values()
        return str(network["IPAddress"])

    def left(self) -> list[str]:
        """Everything of the project that is still there."""
        label = f"label=io.podman.compose.project={PROJECT}"
        found = []
        for kind in ("ps -a", "volume ls", "network ls", "pod ls"):
            out = self.podman(*kind.split(), "--filter", label, "--format", "{{.Names}}"
                              if kind in ("ps -a", "pod ls") else "{{.Name}}")  # fmt: skip
            found += [f"{kind.split()[0]} {name}" for name in out.split()]
        return found


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Compose, str]]:
    """docker-compose.yml up, with three gateways: the Compose and the balancer's URL."""
    assert os.geteuid() == 0, "the deploy test runs rootful Podman: run it as root"
    for tool in ("podman", "buildah", "debootstrap"):
        assert shutil.which(tool), f"{tool} is missing: scripts/ensure_podman.sh installs it"
    work = tmp_path_factory.mktemp("deploy")
    env = standins.podman_env(work)
    started = time.monotonic()
    standins.ensure(env, work)
    log(f"stand-in images ready ({time.monotonic() - started:.0f} s)")

    started = time.monotonic()
    built = subprocess.run(
        ["podman", "build", "--pull=never", "--network=host", "-t", IMAGE, "-f", "Dockerfile", "."],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert built.returncode == 0, (
        f"the image did not build:\n{built.stdout[-4000:]}{built.stderr[-4000:]}"
    )
    log(f"the image is built ({time.monotonic() - started:.0f} s)")

    port = free_port()
    compose = Compose(
        {
            **env,
            "CHIPS_IMAGE": IMAGE,
            "CHIPS_COMPOSE_PORT": str(port),
            "CHIPS_JAEGER_PORT": str(free_port()),
        }
    )
    assert not compose.left(), f"left from an earlier run: {compose.left()}"
    started = time.monotonic()
    try:
        for level in compose.levels():
            compose("up", "-d", "--no-deps", "--scale", f"gateway={GATEWAYS}", *level)
            deadline = time.monotonic() + 240
            for service in level:
                compose.wait_ready(service, deadline)
        log(f"up and ready ({time.monotonic() - started:.0f} s)")
        yield compose, f"http://127.0.0.1:{port}"
    finally:
        logs = work / "logs"
        logs.mkdir()
        for service in compose.file["services"]:
            for container in compose.containers(service):
                (logs / f"{container}.log").write_text(compose.logs(container, tail="-1"))
        log(f"every container's log is in {logs}")
        started = time.monotonic()
        # --remove-orphans: podman-compose's down knows only the file's own replica count,
        # not the --scale it was brought up with.
        compose("down", "-v", "--remove-orphans", "-t", "10")
        log(f"down ({time.monotonic() - started:.0f} s)")
    assert not compose.left(), f"left after down: {compose.left()}"


def chips(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "chips"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"chips {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


async def open_socket(url: str, token: str) -> tuple[Any, dict[str, Any]]:
    """A harness's socket, hello answered and subscribed: the socket and the hello."""
    ws_url = url.replace("http", "ws", 1) + "/v1/ws"
    ws = await websockets.connect(ws_url, additional_headers={"Authorization": f"Bearer {token}"})
    await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
    hello = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert hello.get("frame") == "hello", hello
    await ws.send(json.dumps({"frame": "subscribe", "workspace_id": hello["workspace_id"]}))
    # The second subscribe is refused once the first is in place.
    await ws.send(json.dumps({"frame": "subscribe", "workspace_id": hello["workspace_id"]}))
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if frame.get("frame") == "error" and "subscribed already" in frame["message"]:
            return ws, hello


async def heard(ws: Any, seq: int) -> dict[str, Any]:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if frame.get("frame") == "event" and frame["event"].get("seq") == seq:
            return dict(frame["event"])


def poster(url: str, token: str, space_id: str) -> Callable[[str], int]:
    def post(text: str) -> int:
        answer = httpx.post(
            f"{url}/v1/events",
            headers={"Authorization": f"Bearer {token}"},
            json={"type": "message.post", "space_id": space_id, "text": text,
                  "idempotency_key": text},
            timeout=30,
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        return int(answer.json()["seq"])

    return post


def test_the_readme_s_first_steps_then_every_gateway_serves_the_others(
    up: tuple[Compose, str],
) -> None:
    compose, url = up
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIPS_")}
    env["CHIPS_URL"] = url
    made = json.loads(chips(env, "workspace", "create", "--name", "Acme", "--owner", "Arjun Rao"))
    person = {**env, "CHIPS_TOKEN": made["token"]}
    chips(person, "person", "add", "--name", "Maya Chen")
    lines = chips(person, "connect", "custom", "--name", "Scout", "--no-dial")
    harness = dict(line.split("=", 1) for line in lines.splitlines() if line.startswith("CHIPS_"))
    chips(person, "declare", "Scout", "new_spaces", "follows_rooms")
    # What a harness is handed is the balancer's address, on the port it was moved to.
    assert harness["CHIPS_URL"] == url.replace("127.0.0.1", "localhost")
    token, space = harness["CHIPS_HARNESS_TOKEN"], harness["CHIPS_SPACE_ID"]

    async def through_the_balancer() -> set[str]:
        """The README's post, heard by the harness; and sockets opened through the balancer
        until every gateway has taken one."""
        ws, _ = await open_socket(url, token)
        seq = await asyncio.to_thread(poster(url, made["token"], space), "Find the PO")
        event = await heard(ws, seq)
        assert event["type"] == "message.new" and event["text"] == "Find the PO"
        await ws.close()
        seen: set[str] = set()
        for _ in range(10 * GATEWAYS):
            ws, hello = await open_socket(url, token)
            seen.add(hello["server"]["gateway"])
            await ws.close()
            if len(seen) == GATEWAYS:
                break
        return seen

    assert len(asyncio.run(through_the_balancer())) == GATEWAYS, "the balancer skips a gateway"

    gateways = [f"http://{compose.address(c)}:8080" for c in compose.containers("gateway")]
    assert len(gateways) == GATEWAYS

    async def each_through_the_next() -> None:
        for i, here in enumerate(gateways):
            there = gateways[(i + 1) % len(gateways)]
            ws, hello_there = await open_socket(there, token)
            text = f"posted through gateway {i}"
            seq = await asyncio.to_thread(poster(here, made["token"], space), text)
            event = await heard(ws, seq)
            assert event["text"] == text, event
            await ws.close()

    asyncio.run(each_through_the_next())

    # A file: up through the balancer (to S3 by the attachments service), posted, and down.
    data = b"%PDF-1.4\n% a purchase order\n" + os.urandom(2048)
    auth = {"Authorization": f"Bearer {made['token']}"}
    uploaded = httpx.post(
        f"{url}/v1/uploads", params={"name": "po.pdf"}, content=data, headers=auth, timeout=30
    )
    assert uploaded.status_code == 201, uploaded.text
    upload_id = uploaded.json()["upload_id"]
    posted = httpx.post(
        f"{url}/v1/events",
        headers=auth,
        json={"type": "message.post", "space_id": space, "text": "The PO",
              "upload_ids": [upload_id], "idempotency_key": "file-1"},
        timeout=30,
    )  # fmt: skip
    assert posted.status_code == 200, posted.text
    for gateway in gateways:
        got = httpx.get(f"{gateway}/v1/attachments/{upload_id}", headers=auth, timeout=30)
        assert got.status_code == 200 and got.content == data, got.text[:200]
