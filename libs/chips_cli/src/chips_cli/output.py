"""What a command prints: words for people, or JSON with ``--json``; errors as one line."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn


class CliError(Exception):
    """A mistake the command line itself caught, said as one sentence."""

    def __init__(self, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.code = code


class Out:
    def __init__(self, *, json_mode: bool) -> None:
        self.json_mode = json_mode

    def data(self, value: Any, human: str) -> None:
        """The command's answer: ``value`` as JSON with --json, else ``human``."""
        print(json.dumps(value, ensure_ascii=False) if self.json_mode else human, flush=True)

    def line(self, value: Any, human: str) -> None:
        """One item of a stream (chips tail): a JSON line, or a line of words."""
        self.data(value, human)

    def note(self, words: str) -> None:
        """Something worth knowing that is not the answer: on stderr, never in the JSON."""
        print(f"chips: {words}", file=sys.stderr, flush=True)

    def fail(self, message: str, code: str | None = None) -> NoReturn:
        if self.json_mode:
            body = {"code": code or message.split(":", 1)[0], "message": message}
            print(json.dumps(body, ensure_ascii=False), file=sys.stderr)
        else:
            print(f"chips: {message}", file=sys.stderr)
        sys.exit(1)
