"""docs/harness-guide.md, followed literally against the real stack.

Its code blocks are run in order, in one working directory, as a reader would: ``sh``
blocks in bash (each must succeed), ``sh background`` blocks left running (ready when
they log that they connected), ``python`` blocks saved under the name their first line
gives, ``json`` blocks parsed. A ``text`` block is the output the block before it prints:
each of its lines must appear, in order, with ``…`` standing for what differs from run
to run. The ``sh your-values`` block is the reader's own: the test supplies those values.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.client import Api

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "harness-guide.md"
BLOCK = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
GUIDE_URL = "http://127.0.0.1:8080"


def blocks() -> list[tuple[str, str]]:
    return [(info.strip(), body) for info, body in BLOCK.findall(GUIDE.read_text())]


def matches(expected: str, printed: str, url: str) -> None:
    """Every expected line appears in what was printed, in order (``…`` is a wildcard)."""
    lines = printed.splitlines()
    at = 0
    for want in expected.replace(GUIDE_URL, url).splitlines():
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("…")))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        assert at < len(lines), f"the guide shows {want!r}; the command printed:\n{printed}"
        at += 1


async def test_the_guide_works_as_written(stack, api: Api, tmp_path: Path) -> None:
    owner = await api.create_workspace()  # the README's step: Acme, owned by Arjun Rao
    url = stack.gateway_a
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CHIPS_URL": url,
        "CHIPS_TOKEN": owner.token,
    }
    env.pop("CHIPS_HARNESS_TOKEN", None)
    running: list[asyncio.subprocess.Process] = []
    printed = ""
    ran = {"sh": 0, "background": 0, "python": 0, "text": 0, "json": 0}
    try:
        for info, body in blocks():
            kind = info.split()
            if kind == ["sh", "your-values"]:
                assert "CHIPS_TOKEN" in body and "CHIPS_URL" in body
            elif kind == ["sh"]:
                done = await asyncio.to_thread(
                    subprocess.run,
                    ["bash", "-e", "-o", "pipefail", "-c", body],
                    cwd=tmp_path,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert done.returncode == 0, f"{body}\n---\n{done.stdout}{done.stderr}"
                printed = done.stdout
                ran["sh"] += 1
            elif kind == ["sh", "background"]:
                proc = await asyncio.create_subprocess_exec(
                    "bash",
                    "-c",
                    body,
                    cwd=tmp_path,
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                running.append(proc)
                assert proc.stderr is not None
                said = []
                async with asyncio.timeout(30):
                    while "connected to" not in (said[-1] if said else ""):
                        said.append((await proc.stderr.readline()).decode())
                        assert said[-1], "".join(said)
                ran["background"] += 1
            elif kind == ["python"]:
                name = body.splitlines()[0].removeprefix("#").strip()
                (tmp_path / name).write_text(body)
                ran["python"] += 1
            elif kind == ["text"]:
                matches(body, printed, url)
                ran["text"] += 1
            elif kind == ["json"]:
                json.loads(body)
                ran["json"] += 1
            else:
                raise AssertionError(f"the guide has a block this test cannot follow: {info!r}")
    finally:
        for proc in running:
            proc.terminate()
            await proc.wait()
    assert ran["sh"] >= 5 and ran["background"] == 1 and ran["python"] == 1
    assert ran["text"] >= 5 and ran["json"] >= 8
