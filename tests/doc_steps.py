"""A Markdown page's steps, run as a reader would: in order, in one working directory.

The fenced blocks are the steps; the first word of a block's info string says what it is,
and the words after it (markers) how to follow it:

- ``sh`` (or ``bash``): run in bash, stopping at the first command that fails (``-e``,
  ``pipefail``). What it exports, and the directory it ends in, carry over to the next
  block, as in one terminal; a plain shell variable does not.
- ``sh background``: started and left running, as in a terminal of its own: in the
  current directory, from the environment the page started with (not what earlier blocks
  exported); stopped, with all it started, once the page is done.
- ``python``: a file, saved under the name its first line gives (``# echo.py``) or that
  ``save-as=NAME`` gives.
- ``text``: what the block before it printed (a background block: what it has printed so
  far, waited for). Each line must appear, in order, as a whole line; ``…`` stands for
  anything (what differs from run to run).
- ``json``: parsed, so an example that is not JSON fails.
- ``sh your-values``: the reader's own values; the caller supplies each variable it
  exports (the run fails when one is missing).
- ``illustration`` after any kind: shown, never run (``sh illustration``).

``timeout=SECONDS`` bounds a block (a ``text`` after a background block: how long to wait
for it); the default is 120 s for a command and 30 s for a background block's output.
Any other block fails the run, so a page never holds a step nobody follows.

Used by ``scripts/smoke_bare.py`` (``make smoke``), which runs the README and the harness
guide against ``make up`` on moved ports; ``python -m tests.doc_steps PAGE`` runs a page
against what the environment points at.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SHELLS = ("sh", "bash")
COMMAND_SECONDS = 120.0
BACKGROUND_SECONDS = 30.0
# What bash sets by itself, never carried from one block to the next.
BASH_OWN = {"_", "SHLVL", "OLDPWD", "PWD"}


class StepFailed(Exception):
    """A step of a page did not work as written: where, what, and what it printed."""


@dataclass(frozen=True)
class Block:
    kind: str
    markers: tuple[str, ...]
    options: Mapping[str, str]
    body: str
    line: int  # where the block opens in the page, counted from 1

    @property
    def where(self) -> str:
        return f"line {self.line} ({' '.join([self.kind, *self.markers])})"


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a page, in order, with their info strings taken apart."""
    found = []
    for match in FENCE.finditer(markdown):
        words = shlex.split(match.group(1))
        kind = words[0] if words else ""
        options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        markers = tuple(w for w in words[1:] if "=" not in w)
        line = markdown.count("\n", 0, match.start()) + 1
        found.append(Block(kind, markers, options, match.group(2), line))
    return found


def mismatch(expected: str, printed: str) -> str | None:
    """None when every expected line is a whole line of ``printed``, in order (``…`` is
    anything); else the first line that is not there."""
    lines = printed.splitlines()
    at = 0
    for want in expected.splitlines():
        if not want.strip():
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.strip().split("…")))
        while at < len(lines) and not pattern.fullmatch(lines[at].strip()):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def saved_name(block: Block) -> str:
    """The file a ``python`` block is saved as: ``save-as=NAME``, or its first line."""
    if "save-as" in block.options:
        return block.options["save-as"]
    first = block.body.splitlines()[0] if block.body else ""
    name = first.removeprefix("#").strip()
    if not first.startswith("#") or not re.fullmatch(r"[\w./-]+\.py", name):
        raise StepFailed(
            f"{block.where}: a python block says which file it is, on its first line "
            "(# name.py) or with save-as=NAME; or mark it illustration"
        )
    return name


@dataclass
class Background:
    """A block left running: its process group and everything it has printed so far."""

    block: Block
    proc: subprocess.Popen[str]
    printed: list[str] = field(default_factory=list)
    closed: bool = False  # all it started has ended: it will print nothing more

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.printed.append(line)
        self.closed = True

    @property
    def output(self) -> str:
        return "".join(self.printed)

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@dataclass
class Page:
    """One page's steps, followed in ``workdir`` from the environment ``env``.

    ``same`` maps what the page shows to what this run prints instead (the URL of a stack
    on moved ports for the page's ``http://127.0.0.1:8080``), for the ``text`` checks.
    """

    path: Path
    workdir: Path
    env: dict[str, str]
    same: Mapping[str, str] = field(default_factory=dict)
    log: bool = True
    ran: dict[str, int] = field(default_factory=dict)
    took: list[tuple[Block, float]] = field(default_factory=list)
    running: list[Background] = field(default_factory=list)

    def say(self, words: str) -> None:
        if self.log:
            print(words, flush=True)

    def follow(self) -> dict[str, str]:
        """Run every step; the environment the page leaves. Raises StepFailed."""
        cwd = self.workdir
        env = dict(self.env)
        last: Block | None = None
        printed = ""
        try:
            for block in blocks(self.path.read_text()):
                kind = "illustration" if "illustration" in block.markers else block.kind
                started = time.monotonic()
                if kind == "illustration":
                    pass
                elif block.kind in SHELLS and "your-values" in block.markers:
                    self.supplied(block, env)
                elif block.kind in SHELLS and "background" in block.markers:
                    self.running.append(self.start(block, cwd, self.env))
                    kind = "background"
                elif block.kind in SHELLS and not block.markers:
                    printed, env, cwd = self.command(block, cwd, env)
                elif block.kind == "python" and not block.markers:
                    (cwd / saved_name(block)).write_text(block.body)
                elif block.kind == "text" and not block.markers:
                    self.check(block, last, printed)
                elif block.kind == "json" and not block.markers:
                    self.parse(block)
                else:
                    raise StepFailed(
                        f"{block.where}: not a block this runner follows; "
                        "mark it illustration if it is only shown"
                    )
                self.ran[kind] = self.ran.get(kind, 0) + 1
                self.took.append((block, time.monotonic() - started))
                if kind in ("sh", "background") or block.options.get("timeout"):
                    self.say(f"  ({block.where}: {self.took[-1][1]:.1f} s)")
                if kind != "text":
                    last = block
        except StepFailed as failed:
            for bg in self.running:
                failed.add_note(f"--- {bg.block.where} printed:\n{bg.output.rstrip()}")
            raise
        finally:
            for bg in self.running:
                bg.stop()
                self.say(f"--- {bg.block.where}, left running, printed:\n{bg.output.rstrip()}")
        return env

    def seconds(self, block: Block, default: float) -> float:
        try:
            return float(block.options.get("timeout", default))
        except ValueError:
            raise StepFailed(f"{block.where}: timeout= takes a number of seconds") from None

    def supplied(self, block: Block, env: Mapping[str, str]) -> None:
        names = re.findall(r"^\s*export\s+(\w+)=", block.body, re.MULTILINE)
        missing = [n for n in names if not env.get(n)]
        if missing:
            raise StepFailed(f"{block.where}: the run supplies no {', '.join(missing)}")

    def command(
        self, block: Block, cwd: Path, env: dict[str, str]
    ) -> tuple[str, dict[str, str], Path]:
        with tempfile.TemporaryDirectory(prefix="doc-step-") as tmp:
            script, after = Path(tmp) / "step.sh", Path(tmp) / "env"
            script.write_text(block.body)
            runner = f'set -eo pipefail\n. {shlex.quote(str(script))}\nenv -0 > "$AFTER"\n'
            self.say(f"$ {block.body.rstrip()}".replace("\n", "\n  "))
            proc = subprocess.Popen(
                ["bash", "-c", runner],
                cwd=cwd,
                env={**env, "AFTER": str(after)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            try:
                stdout, stderr = proc.communicate(timeout=self.seconds(block, COMMAND_SECONDS))
            except subprocess.TimeoutExpired as late:
                os.killpg(proc.pid, signal.SIGKILL)
                stdout, stderr = proc.communicate()
                raise StepFailed(
                    f"{block.where}: still running after {late.timeout:g} s:\n{block.body}"
                    f"--- it printed:\n{stdout}{stderr}"
                ) from None
            out = stdout + stderr
            self.say(out.rstrip())
            if proc.returncode != 0:
                raise StepFailed(
                    f"{block.where}: exited {proc.returncode}:\n{block.body}--- it printed:\n{out}"
                )
            carried = dict(env)
            if after.exists():
                pairs = [p.split("=", 1) for p in after.read_text().split("\0") if "=" in p]
                carried = {k: v for k, v in pairs if k not in BASH_OWN and k != "AFTER"}
                cwd = Path(dict(pairs).get("PWD", str(cwd)))
        return stdout, carried, cwd

    def start(self, block: Block, cwd: Path, env: dict[str, str]) -> Background:
        self.say(f"$ {block.body.rstrip()}   (left running)".replace("\n", "\n  "))
        proc = subprocess.Popen(
            ["bash", "-c", block.body],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        return Background(block, proc)

    def check(self, block: Block, last: Block | None, printed: str) -> None:
        expected = block.body
        for shown, actual in self.same.items():
            expected = expected.replace(shown, actual)
        if last is None:
            raise StepFailed(f"{block.where}: shows output, but no step comes before it")
        bg = next((b for b in self.running if b.block is last), None)
        if bg is None:
            missing = mismatch(expected, printed)
        else:  # a background block: wait until it has printed it
            deadline = time.monotonic() + self.seconds(block, BACKGROUND_SECONDS)
            while (missing := mismatch(expected, bg.output)) and time.monotonic() < deadline:
                if bg.closed:  # it has printed all it will
                    missing = mismatch(expected, bg.output)
                    break
                time.sleep(0.1)
            printed = bg.output
        if missing is not None:
            raise StepFailed(
                f"{block.where}: the page shows {missing!r} from {last.where}, "
                f"which printed:\n{printed}"
            )

    def parse(self, block: Block) -> None:
        try:
            json.loads(block.body)
        except ValueError as exc:
            raise StepFailed(f"{block.where}: not JSON: {exc}") from None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.doc_steps PAGE", file=sys.stderr)
        return 2
    page = Path(argv[1]).resolve()
    with tempfile.TemporaryDirectory(prefix="doc-steps-") as workdir:
        try:
            Page(page, Path(workdir), dict(os.environ)).follow()
        except StepFailed as failed:
            print(f"{page.name}: {failed}", file=sys.stderr)
            for note in getattr(failed, "__notes__", []):
                print(note, file=sys.stderr)
            return 1
    print(f"{page.name}: every step works as written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
