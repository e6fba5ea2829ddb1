"""A run as it goes: started, its steps, status, usage, cards, and how it ended.

``async with client.report_run(message) as run:`` logs ``run.started``; the block reports
steps (``async with run.step("Read the PO"):``), status and usage, asks approvals and
questions and waits for their answers, and replies; leaving the block logs
``run.completed`` with the last reply as its summary, or ``run.failed`` with what the
exception said. Every write has a key derived from the run's id, so a retried run report
is applied once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from chips_sdk.frames import Ack
from chips_sdk.speaking import speaker_for

if TYPE_CHECKING:  # the client builds runs; a run only calls it
    from chips_sdk.client import Client


class RunFailed(Exception):
    """Raise inside a run to end it as failed with your own words, without a traceback."""


class Run:
    """One turn of a harness, reported to Chips. Build it with :meth:`Client.report_run`."""

    def __init__(
        self,
        client: Client,
        message_or_space: Mapping[str, Any] | str,
        goal: str | None = None,
        *,
        run_id: str | None = None,
    ) -> None:
        self.client = client
        if isinstance(message_or_space, str):
            self.space_id = message_or_space
            self.message: Mapping[str, Any] | None = None
        else:
            self.space_id = str(message_or_space["space_id"])
            self.message = message_or_space
        self.goal = goal or (self.message or {}).get("text") or "A turn"
        self.run_id = run_id or f"run_{uuid.uuid4().hex}"
        self.summary: str | None = None
        self.steps = 0
        self.cards = 0
        self.ended = False

    def key(self, what: str) -> str:
        return f"{self.run_id}-{what}"

    async def _send(self, what: str, event: dict[str, Any]) -> Ack:
        return await self.client.send({**event, "run_id": self.run_id}, key=self.key(what))

    # --- the run's life ---------------------------------------------------------------

    async def start(self) -> Ack:
        event: dict[str, Any] = {
            "type": "run.started",
            "space_id": self.space_id,
            "goal": self.goal[:2000],
        }
        if self.message is not None and self.message.get("message_id"):
            event["message_id"] = self.message["message_id"]
        # The turn of the one agent the message is for; the run's other events are read
        # as that agent's at the door.
        speaker = speaker_for(self.message) if self.message is not None else None
        if speaker is not None:
            event["actor"] = speaker
        return await self._send("started", event)

    async def complete(self, summary: str | None = None) -> Ack:
        self.ended = True
        event: dict[str, Any] = {"type": "run.completed"}
        if summary or self.summary:
            event["summary"] = summary or self.summary
        return await self._send("completed", event)

    async def fail(self, why: str) -> Ack:
        self.ended = True
        return await self._send("failed", {"type": "run.failed", "why": why[:2000] or "failed"})

    async def __aenter__(self) -> Run:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if self.ended:
            return False
        if exc is None:
            await self.complete()
        elif isinstance(exc, Exception):
            await self.fail(str(exc) or type(exc).__name__)
            # RunFailed is the harness ending the run on purpose: it is reported, not raised.
            return isinstance(exc, RunFailed)
        # A cancelled task (the harness is stopping) reports nothing: it may never get
        # the answer, and the run is the harness's to end when it comes back.
        return False

    # --- what happens in it -----------------------------------------------------------

    async def status(
        self,
        verb: str | None = None,
        *,
        text: str | None = None,
        phase: str | None = None,
        progress: float | None = None,
    ) -> Ack:
        """``run.status``: what the run is doing now (the thinking bubble)."""
        fields = {"verb": verb, "text": text, "phase": phase, "progress": progress}
        event = {"type": "run.status", **{k: v for k, v in fields.items() if v is not None}}
        return await self.client.send({**event, "run_id": self.run_id})

    async def log_step(
        self,
        step_id: str,
        status: str,
        *,
        title: str | None = None,
        summary: str | None = None,
    ) -> Ack:
        """``step.log``: one step (a tool call) started, done or failed."""
        event: dict[str, Any] = {"type": "step.log", "step_id": step_id, "status": status}
        if title:
            event["title"] = title[:200]
        if summary:
            event["summary"] = summary
        return await self._send(f"step-{step_id}-{status}", event)

    @asynccontextmanager
    async def step(self, title: str) -> AsyncIterator[Step]:
        """A step: ``started`` now, ``done`` when the block ends, ``failed`` if it raises."""
        self.steps += 1
        step = Step(f"stp_{self.steps}", title)
        await self.log_step(step.step_id, "started", title=title)
        try:
            yield step
        except Exception as exc:
            await self.log_step(step.step_id, "failed", title=title, summary=str(exc) or None)
            raise
        await self.log_step(step.step_id, "done", title=title, summary=step.summary)

    async def usage(
        self,
        tokens_in: int,
        tokens_out: int,
        *,
        cost_usd: float | None = None,
        model: str | None = None,
    ) -> Ack:
        """``usage``: what the run spent. Report a cost when you know it."""
        event: dict[str, Any] = {"type": "usage", "tokens_in": tokens_in, "tokens_out": tokens_out}
        if cost_usd is not None:
            event["cost_usd"] = cost_usd
        if model:
            event["model"] = model
        return await self.client.send({**event, "run_id": self.run_id})

    async def reply(self, text: str, **fields: Any) -> Ack:
        """Say ``text`` in the run's room (as a reply to its message); it becomes the
        run's summary unless another reply comes after it."""
        self.summary = text
        if self.message is not None:
            return await self.client.reply(self.message, text, **fields)
        return await self.client.post(self.space_id, text, **fields)

    async def ask_approval(
        self,
        action: str,
        *,
        preview: str | None = None,
        risk: str | None = None,
        expires_at: str | None = None,
        answerers: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Put up an approval card and wait for the decision.

        Returns the ``approval.resolved`` event: ``decision`` is ``approve``, ``edit``
        (with ``edited``) or ``deny``. ``timeout`` raises ``TimeoutError``; the card stays.
        """
        self.cards += 1
        approval_id = f"apv_{self.run_id[4:]}_{self.cards}"
        event: dict[str, Any] = {
            "type": "approval.request",
            "approval_id": approval_id,
            "action": action,
        }
        optional = {"preview": preview, "risk": risk, "expires_at": expires_at}
        event.update({k: v for k, v in optional.items() if v is not None})
        if answerers is not None:
            event["answerers"] = list(answerers)
        return await self._ask(
            f"approval-{self.cards}",
            event,
            lambda e: e.get("type") == "approval.resolved" and e.get("approval_id") == approval_id,
            timeout,
        )

    async def ask_question(
        self,
        prompt: str,
        options: Sequence[tuple[str, str] | Mapping[str, str]] = (),
        *,
        free_text: bool = False,
        default: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Ask the people a question (one option per button) and wait for the answer.

        ``options`` are ``(label, value)`` pairs or ``{"label", "value"}``. Returns the
        ``question.answered`` event: ``value`` for a tap, ``text`` for typed words.
        """
        self.cards += 1
        question_id = f"qst_{self.run_id[4:]}_{self.cards}"
        buttons = [
            dict(o) if isinstance(o, Mapping) else {"label": o[0], "value": o[1]} for o in options
        ]
        event: dict[str, Any] = {
            "type": "question.ask",
            "question_id": question_id,
            "prompt": prompt,
            "options": buttons,
            "free_text": free_text,
        }
        if default is not None:
            event["default"] = default
        return await self._ask(
            f"question-{self.cards}",
            event,
            lambda e: e.get("type") == "question.answered" and e.get("question_id") == question_id,
            timeout,
        )

    async def _ask(
        self, what: str, event: dict[str, Any], answered: Any, timeout: float | None
    ) -> dict[str, Any]:
        # Listen before asking, so an answer that comes at once is not missed.
        expected = self.client.expect(answered)
        try:
            await self._send(what, event)
            return await asyncio.wait_for(asyncio.shield(expected), timeout)
        finally:
            self.client.forget(expected)


class Step:
    """A step in progress; set ``summary`` to say what it found."""

    def __init__(self, step_id: str, title: str) -> None:
        self.step_id = step_id
        self.title = title
        self.summary: str | None = None
