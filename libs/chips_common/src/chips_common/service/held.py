"""Events whose fold may wait: their messages held, and folded a moment later (docs/adr/0162).

A consumer's fold of some events changes nothing anybody reads before its next fold of
the same workspace: the referee's of a person's post (what it changes of a room is read
only by its later folds, which read the log in order from the checkpoint, and by its
clock, which reads the log up to the head before it looks), search's of an event it does
not index (it only moves the checkpoint). Folding each such event in a transaction of its
own, the moment it comes, costs a transaction per event for nothing.

Such an event's message is held here, unacked, instead: it is acked with its workspace's
next fold, which reads the log past it, whether that fold is prompted by an event that
cannot wait or by the wait running out (``wait`` seconds after the workspace's first held
message, or at once once ``most`` messages are held). Nothing changes of the guarantees:
the fold still reads the log in order from its checkpoint and saves the checkpoint in its
own transaction; a message is acked only after a fold past it committed (a crash before
that has it delivered again); and a failed fold settles the held messages with its own,
through the same retries and dead letter (``poison.py``).

A reader that must see a seq asks for it (``want``, from a nudge: docs/adr/0168): a
workspace wanted is due at once, whether its messages are held already or come after the
ask; the ask is dropped once a fold of the workspace reaches its seq, or after
``want_for`` seconds (the reader has given up by then).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from nats.aio.msg import Msg

from chips_common.nats import nudge


@dataclass
class Waiting:
    """A workspace's held messages: the highest seq among them, and since when."""

    since: float
    seq: int = 0
    msgs: list[Msg] = field(default_factory=list)


class Held:
    """The messages held, by workspace; pure but for the clock it is given."""

    def __init__(
        self,
        wait: float = 1.0,
        most: int = 1000,
        clock: Callable[[], float] = time.monotonic,
        want_for: float = 5.0,
    ) -> None:
        self.wait, self.most, self.clock, self.want_for = wait, most, clock, want_for
        self.by_workspace: dict[str, Waiting] = {}
        self.count = 0
        # Workspaces a reader waits for: the seq it waits for, and until when it is asked.
        self.wanted: dict[str, tuple[int, float]] = {}

    def want(self, workspace_id: str, seq: int) -> bool:
        """A reader waits for ``seq`` of the workspace: it is due at once (now if held, or
        as soon as its messages come). Returns whether anything of it is held now."""
        asked = self.wanted.get(workspace_id)
        seq = max(seq, asked[0]) if asked else seq
        self.wanted[workspace_id] = (seq, self.clock() + self.want_for)
        return workspace_id in self.by_workspace

    def folded(self, workspace_id: str, seq: int) -> None:
        """A fold of the workspace up to ``seq`` is about to run: an ask it answers is
        dropped."""
        asked = self.wanted.get(workspace_id)
        if asked is not None and seq >= asked[0]:
            del self.wanted[workspace_id]

    def hold(self, workspace_id: str, msgs: list[Msg], seq: int) -> None:
        waiting = self.by_workspace.get(workspace_id)
        if waiting is None:
            waiting = self.by_workspace[workspace_id] = Waiting(self.clock())
        waiting.seq = max(waiting.seq, seq)
        waiting.msgs.extend(msgs)
        self.count += len(msgs)

    def take(self, workspace_id: str) -> Waiting | None:
        """What is held of the workspace, let go (its fold is about to run)."""
        waiting = self.by_workspace.pop(workspace_id, None)
        if waiting is not None:
            self.count -= len(waiting.msgs)
        return waiting

    def due(self) -> dict[str, Waiting]:
        """The workspaces whose wait ran out or that a reader waits for (every one, once
        ``most`` messages are held), let go: they are folded now."""
        if self.count >= self.most:
            return self.settled(self.take_all())
        now = self.clock()
        late = [
            w
            for w, held in self.by_workspace.items()
            if now - held.since >= self.wait or w in self.wanted
        ]
        return self.settled({w: waiting for w in late if (waiting := self.take(w)) is not None})

    def settled(self, due: dict[str, Waiting]) -> dict[str, Waiting]:
        """Drop the asks ``due`` answers (its fold reaches their seq) and those past their
        time; returns ``due``."""
        if self.wanted:
            now = self.clock()
            for workspace_id, (seq, until) in list(self.wanted.items()):
                waiting = due.get(workspace_id)
                if until <= now or (waiting is not None and waiting.seq >= seq):
                    del self.wanted[workspace_id]
        return due

    def take_all(self) -> dict[str, Waiting]:
        everything, self.by_workspace, self.count = self.by_workspace, {}, 0
        return everything

    def next_in(self, longest: float) -> float:
        """Seconds until the first wait runs out, at most ``longest`` (nothing held)."""
        if not self.by_workspace:
            return longest
        if not self.wanted.keys().isdisjoint(self.by_workspace):
            return 0.0
        first = min(held.since for held in self.by_workspace.values())
        return max(0.0, min(longest, first + self.wait - self.clock()))


class LateAcks:
    """Messages of events the consumer does not act on, acked together a moment later
    rather than one by one as they come (docs/adr/0168): one write for many acks, for the
    consumer and for the server. Nothing waits on them; a crash before they are acked has
    them delivered again, and read past again. Pure but for the clock it is given."""

    def __init__(
        self, wait: float = 0.2, most: int = 256, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.wait, self.most, self.clock = wait, most, clock
        self.msgs: list[Msg] = []
        self.since = 0.0

    def add(self, msgs: list[Msg]) -> None:
        if not self.msgs:
            self.since = self.clock()
        self.msgs.extend(msgs)

    def due(self) -> list[Msg]:
        """What is to be acked now (everything, once ``wait`` has passed since the first
        or ``most`` are waiting), let go."""
        if not self.msgs or (len(self.msgs) < self.most and self.clock() - self.since < self.wait):
            return []
        return self.take_all()

    def take_all(self) -> list[Msg]:
        msgs, self.msgs = self.msgs, []
        return msgs

    def next_in(self, longest: float) -> float:
        """Seconds until what waits is due, at most ``longest`` (nothing waits)."""
        if not self.msgs:
            return longest
        return max(0.0, min(longest, self.since + self.wait - self.clock()))


def heard(
    held: Held | None, wake: Callable[[], None], *, paced: bool
) -> Callable[[Msg], Awaitable[None]]:
    """What a consumer does with a nudge (docs/adr/0168): the ask is recorded in ``held``;
    the flow is woken when the workspace is held now, or always when it is paced (what is
    asked for may still be waiting on the server)."""

    async def nudged(msg: Msg) -> None:
        asked = nudge.decode(msg.data)
        if asked is None:
            return
        held_now = held.want(*asked) if held is not None else False
        if held_now or paced:
            wake()

    return nudged
