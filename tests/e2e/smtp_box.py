"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps what it is sent, for the
notifier's tests: the stack's notifier mails to ``stack.extra_env["notifier"]``'s port."""

from __future__ import annotations

import asyncio
import email
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from aiosmtpd.controller import Controller

from chips_devstack.stack import Stack


def smtp_port(stack: Stack) -> int:
    return int(stack.extra_env["notifier"]["CHIPS_SMTP_PORT"])


@dataclass
class Received:
    to: list[str]
    message: Message
    at: float  # time.monotonic() when it arrived

    @property
    def text(self) -> str:
        part = self.message.get_payload(decode=True)
        return part.decode() if isinstance(part, bytes) else str(self.message.get_payload())


@dataclass
class Box:
    port: int
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    controller: Controller | None = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content)
        with self.lock:
            self.received.append(Received(list(envelope.rcpt_tos), message, time.monotonic()))
        return "250 Message accepted for delivery"

    def start(self) -> Box:
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()
        return self

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def matching(self, predicate: Callable[[Received], bool]) -> list[Received]:
        with self.lock:
            return [r for r in self.received if predicate(r)]

    async def wait_for(
        self, predicate: Callable[[Received], bool], timeout: float = 60
    ) -> Received:
        """The first email that satisfies ``predicate``, once it has arrived."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.matching(predicate)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no such email within {timeout} s")
            await asyncio.sleep(0.05)
