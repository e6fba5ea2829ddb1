"""The partitions a replica serves: leases, heartbeat, takeover, one pull loop each.

Each partition of the append stream is served by the replica that holds its lease
(docs/adr/0022); a partition just taken reads its workspaces' door state ahead, beside its
appends (docs/adr/0021). The outbox is swept on start and every so often.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NotFoundError
from sqlalchemy import select

from chips_common import otel
from chips_common.db import tables as t
from chips_common.nats.principals import EVERY_WORKSPACE
from chips_common.nats.pull import Flow
from chips_common.service.metrics import LagProbe
from chips_eventlog import metrics, state_store
from chips_eventlog.intake import Intake
from chips_eventlog.leases import Held, Leases
from chips_eventlog.publishing import SWEEP_SETTLED_SECONDS

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


# Workspaces whose door state a takeover reads together, each table once for them all.
TAKEOVER_CHUNK = 250


class Partitions(Intake):
    """The append loop's partitions part."""

    async def run(
        self,
        stop: asyncio.Event,
        batch_size: int,
        sweep_seconds: float,
        ack_wait: float,
        lease_check_seconds: float,
        lease_ttl_seconds: float = 5.0,
    ) -> None:
        """Serve the partitions this replica leases until ``stop``, renewing the leases by
        heartbeat and rebalancing as replicas come and go (docs/adr/0022)."""
        await self._drop_unpartitioned_consumer()
        await self.heard.start()
        swept = await self.sweep_outbox()
        if swept:
            log.info("re-published %d events from the outbox", swept)
        sweeper = asyncio.create_task(self._sweep_every(stop, sweep_seconds))
        publisher = asyncio.create_task(self.publisher())
        leases = Leases(self.engine, self.names.partitions, lease_ttl_seconds)
        await leases.open()
        log.info("eventlog replica %s", leases.holder)
        running: dict[int, tuple[asyncio.Task[None], asyncio.Event]] = {}
        beat = min(lease_check_seconds, lease_ttl_seconds / 3)
        # The heartbeat has a task of its own, so that nothing the rebalancing waits for
        # (a partition finishing its batch) can delay a renewal.
        heart = asyncio.create_task(self._beat(stop, leases, beat))

        async def halt(partition: int) -> None:
            task, done = running.pop(partition)
            done.set()
            await asyncio.gather(task, return_exceptions=True)

        try:
            while not stop.is_set():
                try:
                    for partition, (task, _) in list(running.items()):
                        held = leases.held.get(partition)
                        if held is not None and (held.lost or held.fenced):
                            # Another replica holds it now: stop writing, forget its state.
                            await halt(partition)
                            leases.forget(partition)
                        elif task.done():  # a partition loop that crashed is started again
                            await halt(partition)
                            await leases.release(partition)
                    taken, give_back = await leases.rebalance(set(running))
                    for partition in give_back:
                        await halt(partition)
                        await leases.release(partition)
                        log.info("handed back append partition %d", partition)
                    for held in taken:
                        done = asyncio.Event()
                        task = asyncio.create_task(
                            self.serve_partition(held, done, batch_size, ack_wait)
                        )
                        running[held.partition] = (task, done)
                    if taken:
                        # A holder before this one may have died between a commit and
                        # its notice: every gateway forgets who its tokens were.
                        await self.tell_principals(EVERY_WORKSPACE)
                        log.info(
                            "serving append partitions %s (took %s)",
                            sorted(running),
                            {h.partition: h.epoch for h in taken},
                        )
                except Exception as exc:
                    # Postgres away (restarting, failing over): the partitions whose
                    # leases lapse stop writing, and are taken again, at a new epoch,
                    # once it answers (docs/adr/0022).
                    log.warning("could not look at the partition leases: %r", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), beat)
        finally:
            # Every partition finishes its batch in flight at once, then the leases go.
            for _, done in running.values():
                done.set()
            await asyncio.gather(*(task for task, _ in running.values()), return_exceptions=True)
            # What was answered is published before the leases go (the outbox would
            # heal it anyway, a moment later).
            await self.drain_publisher(5)
            publisher.cancel()
            heart.cancel()
            await asyncio.gather(heart, return_exceptions=True)
            await leases.close()
            sweeper.cancel()

    @staticmethod
    async def _beat(stop: asyncio.Event, leases: Leases, every: float) -> None:
        """Renew the leases until ``stop``; mark each one found lost (its loop then ends)."""
        while not stop.is_set():
            try:
                lost = await leases.heartbeat()
            except Exception:
                log.exception("could not renew the partition leases")
                lost = {p for p, held in leases.held.items() if not held.fresh()}
                with contextlib.suppress(Exception):
                    await leases.reopen()
            for partition in sorted(lost):
                held = leases.held.get(partition)
                if held is not None and not held.lost:
                    log.error("lost the lease of append partition %d", partition)
                    metrics.LEASES_LOST.inc()
                    held.lost = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)

    async def load_states(self, held: Held) -> None:
        """Read ahead the door state of every workspace of a partition just taken (ADR 0021).

        Runs beside the partition's appends, never in front of them: a partition of many
        workspaces takes seconds to read on a loaded machine, and a request must not wait
        for workspaces it does not write to (a batch whose workspace is not read yet reads
        it itself). Read outside any append's transaction: a batch still checks the
        state's head seq against the head row it locks, and reads the state again when
        they differ (a commit of the previous holder, or of a batch of this lease, that
        landed after this read); and a state a batch put in place first is kept. A
        failure here only leaves a workspace to be read by its first batch.

        The workspaces are read :data:`TAKEOVER_CHUNK` at a time, each table once per
        chunk (a few statements for hundreds of workspaces, not seventeen for each), and
        the lease is looked at between chunks.
        """
        started = time.monotonic()
        try:
            async with self.engine.connect() as conn:
                found = await conn.execute(select(t.workspaces.c.id))
                ids = [r.id for r in found if self.names.partition_of(r.id) == held.partition]
                for start in range(0, len(ids), TAKEOVER_CHUNK):
                    if held.fenced or held.lost:
                        return
                    chunk = [w for w in ids[start : start + TAKEOVER_CHUNK] if w not in held.states]
                    for workspace_id, state in (await state_store.load_many(conn, chunk)).items():
                        held.states.setdefault(workspace_id, state)
        except Exception:
            log.exception("partition %d: door state not read ahead", held.partition)
            return
        log.info(
            "partition %d: door state of %d workspaces read in %.0f ms",
            held.partition,
            len(ids),
            (time.monotonic() - started) * 1000,
        )

    async def serve_partition(
        self, held: Held, done: asyncio.Event, batch_size: int, ack_wait: float
    ) -> None:
        """Append the requests of one partition until ``done``; the batch in flight finishes.

        While the lease's last renewal is older than its time to live, nothing is pulled;
        once a commit is fenced, the partition is another replica's and this loop ends.
        """
        partition = held.partition
        durable = self.names.consumer(f"eventlog_p{partition}")
        sub = await self.js.pull_subscribe(
            self.names.append_partition_subject(partition),
            durable=durable,
            stream=self.names.append_stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=ack_wait,
                max_deliver=self.max_deliver,
                max_ack_pending=20_000,
            ),
        )
        lag = LagProbe(self.names.append_stream, durable)
        # Pull requests kept open, as every consumer of the log keeps them (docs/adr/0116):
        # one request per batch size of appends rather than two requests and a "no
        # messages" answer per append. While the lease is stale nothing is asked for;
        # what the requests still open bring meanwhile waits in the queue, unhandled,
        # and is naked for whoever serves the partition next if this loop ends
        # (docs/adr/0162).
        flow = Flow(sub, batch_size)
        # The door state of this partition's workspaces lives in ``held`` while the lease
        # does, and goes with it (docs/adr/0021).
        reading = asyncio.create_task(self.load_states(held))
        try:
            while not done.is_set() and not (held.fenced or held.lost):
                if not held.fresh():
                    await asyncio.sleep(0.05)
                    continue
                await lag.maybe_update(self.js)
                try:
                    msgs = await flow.next(timeout=1)
                except (TimeoutError, NatsTimeout):
                    continue
                await self.handle_batch(msgs, held)
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            with contextlib.suppress(Exception):  # the connection may be gone already
                await flow.give_back()
            await sub.unsubscribe()

    async def _drop_unpartitioned_consumer(self) -> None:
        """Remove the single consumer of releases before partitions (it would overlap)."""
        with contextlib.suppress(NotFoundError):
            await self.js.delete_consumer(self.names.append_stream, self.names.consumer("eventlog"))

    async def _sweep_every(self, stop: asyncio.Event, seconds: float) -> None:
        while not stop.is_set():
            await asyncio.sleep(seconds)
            if self.principals_owed:
                await self.tell_principals(EVERY_WORKSPACE)
            try:
                await self.sweep_outbox(SWEEP_SETTLED_SECONDS)
            except Exception:
                log.exception("outbox sweep failed")
