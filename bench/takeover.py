"""A partition taken over: reading its workspaces' door state, one by one or in chunks.

A replica that takes a partition's lease reads the door state of every workspace of it
(``Appender.load_states``, docs/adr/0021). This builds N workspaces on a database of its
own, each with people, a harness and its agent, rooms, posts, a run with a card, a lane,
a pin and a reaction, appended through the real ``Appender``; then, round after round
(closed loop, one read after the other, on one connection), it times:

  one_by_one  ``state_store.load`` for each workspace in turn: a statement per table per
              workspace, as every takeover read before ``load_many``
  chunked     ``state_store.load_many`` over chunks of ``TAKEOVER_CHUNK`` workspaces:
              a statement per table per chunk
  takeover    ``Appender.load_states`` for a fresh ``Held``: the takeover itself (the
              partition's workspace ids, then the chunks)

and counts the statements of each. The states read both ways are checked equal once.
``--versus TREE`` adds ``versus``: the ``state_store.load`` of another tree (main's, say,
exported with git archive) for each workspace in turn, the old code itself.
Postgres is ``CHIPS_TEST_POSTGRES_URL`` (default 127.0.0.1:5432); the database is dropped
at the end.

    .venv/bin/python bench/takeover.py [--workspaces 200] [--rounds 5] [--label more]
        [--versus /tmp/main-tree]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


async def build(appender: Any, held: Any, n: int) -> None:
    """One workspace of a little of every kind of door state, in a few batches."""
    from opentelemetry.trace import INVALID_SPAN

    from chips_common.append import Actor, AppendRequest, IssuedCredential
    from chips_eventlog.consumer import Pending

    ws = f"ws_t{n:05d}"
    own, mem, hrn = f"usr_o{n}", f"usr_m{n}", f"hrn_h{n}"
    owner = Actor(kind="person", id=own)
    keys = iter(range(10**6))

    def request(actor: Actor, *events: dict[str, Any], **more: Any) -> Pending:
        key = f"{ws}-k{next(keys)}"
        req = AppendRequest(
            request_id=key,
            workspace_id=ws,
            credential_id=f"crd_{actor.id}",
            actor=actor,
            idempotency_key=key,
            events=list(events),
            **more,
        )
        return Pending(msg=None, request=req, span=INVALID_SPAN)  # type: ignore[arg-type]

    async def append(*items: Pending) -> list[dict[str, Any]]:
        await appender.append_group(ws, list(items), held)
        for p in items:
            assert p.answer is not None and p.answer.ok, p.answer
        return [e for p in items for e in p.answer.events]  # type: ignore[union-attr]

    def joined(pid: str, kind: str, name: str, role: str) -> Pending:
        event = {"type": "participant.joined", "participant_id": pid, "kind": kind}
        event |= {"name": name, "role": role}
        if kind == "harness":
            event["owner_id"] = own
        by = Actor(kind="operator", id="operator") if role == "owner" else owner
        credential = IssuedCredential(
            credential_id=f"crd_{pid}", participant_id=pid, token_hash=pid
        )
        return request(by, event, credentials=[credential])

    room, other = f"spc_r{n:05d}", f"spc_x{n:05d}"
    harness = Actor(kind="harness", id=hrn)
    founded = joined(own, "person", "Arjun", "owner")
    founded.request.events.insert(0, {"type": "workspace.created", "name": ws})
    await append(founded)
    made = await append(
        joined(mem, "person", "Maya", "member"),
        joined(hrn, "harness", "Scout", "member"),
        request(owner, {"type": "harness.declared", "harness_id": hrn, "capabilities": []}),
        request(owner, {"type": "space.created", "space_id": room, "kind": "group",
                        "title": "Room", "members": [mem, hrn]}),
        request(owner, {"type": "space.created", "space_id": other, "kind": "group",
                        "title": "Other", "members": [hrn]}),
        request(harness, {"command": "agent.register", "harness_id": hrn, "key": "a",
                          "name": f"Oc{n}"}),
    )  # fmt: skip
    agent = next(e["agent_id"] for e in made if e["type"] == "agent.registered")
    said = await append(
        request(owner, {"type": "membership.added", "space_id": room, "participant_id": agent}),
        *[
            request(Actor(kind="person", id=mem), {"type": "message.post", "space_id": room,
                                                   "text": f"@Oc{n} word {i}"})
            for i in range(4)
        ],
        request(harness, {"type": "run.started", "run_id": "run_1", "space_id": room,
                          "goal": "find the PO"}),
        request(harness, {"type": "approval.request", "run_id": "run_1", "approval_id": "ap1",
                          "action": "pay"}),
        request(owner, {"type": "lane.opened", "lane_id": "lane_1", "from_space_id": room,
                        "to_space_id": other, "task": {"goal": "g"}}),
    )  # fmt: skip
    message = next(e["message_id"] for e in said if e["type"] == "message.post")
    await append(
        request(owner, {"type": "message.pinned", "space_id": room, "message_id": message}),
        request(owner, {"type": "feedback", "space_id": room, "message_id": message,
                        "kind": "reaction", "emoji": "👍"}),
        request(Actor(kind="person", id=mem), {"type": "message.hidden", "space_id": room,
                                               "message_id": message}),
    )  # fmt: skip


def old_store(tree: str) -> Any:
    """Another tree's state_store module, beside this one (its imports are this tree's)."""
    import importlib.util

    path = Path(tree) / "services/eventlog/src/chips_eventlog/state_store.py"
    spec = importlib.util.spec_from_file_location("versus_state_store", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def measure(url: str, workspaces: int, rounds: int, versus: str) -> dict[str, Any]:
    from sqlalchemy import event, select
    from sqlalchemy.ext.asyncio import create_async_engine

    from chips_common.db import tables as t
    from chips_common.nats.streams import Names
    from chips_eventlog import state_store
    from chips_eventlog.consumer import TAKEOVER_CHUNK, Appender
    from chips_eventlog.leases import Held

    engine = create_async_engine(url)
    appender = Appender(engine, None, None, Names("CHIPS", "chips", 1))  # type: ignore[arg-type]
    started = time.perf_counter()
    for n in range(workspaces):
        await build(appender, Held(partition=0), n)
    print(f"built {workspaces} workspaces in {time.perf_counter() - started:.1f} s", flush=True)

    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    async with engine.connect() as conn:
        ids = [
            r.id for r in await conn.execute(select(t.workspaces.c.id).order_by(t.workspaces.c.id))
        ]

        async def one_by_one() -> dict[str, Any]:
            return {ws: await state_store.load(conn, ws) for ws in ids}

        async def chunked() -> dict[str, Any]:
            found: dict[str, Any] = {}
            for start in range(0, len(ids), TAKEOVER_CHUNK):
                found |= await state_store.load_many(conn, ids[start : start + TAKEOVER_CHUNK])
            return found

        alone, together = await one_by_one(), await chunked()
        assert list(alone) == list(together) == ids
        assert all(vars(alone[ws]) == vars(together[ws]) for ws in ids), "the states differ"
        assert all(alone[ws].cards and alone[ws].reactions for ws in ids)

        async def takeover() -> dict[str, Any]:
            held = Held(partition=0)
            await appender.load_states(held)
            assert len(held.states) == len(ids)
            return held.states

        ways = {"one_by_one": one_by_one, "chunked": chunked, "takeover": takeover}
        if versus:
            old = old_store(versus)

            async def versus_one_by_one() -> dict[str, Any]:
                return {ws: await old.load(conn, ws) for ws in ids}

            before = await versus_one_by_one()
            assert all(vars(before[ws]) == vars(together[ws]) for ws in ids), "versus differs"
            ways["versus"] = versus_one_by_one
        times: dict[str, list[float]] = {way: [] for way in ways}
        counted: dict[str, int] = {}
        for _ in range(rounds):
            for way, read in ways.items():  # alternating, so each sees the same machine
                statements.clear()
                event.listen(engine.sync_engine, "before_cursor_execute", count)
                began = time.perf_counter()
                await read()
                times[way].append((time.perf_counter() - began) * 1000)
                event.remove(engine.sync_engine, "before_cursor_execute", count)
                counted[way] = len(statements)
            print({way: round(ms[-1], 1) for way, ms in times.items()}, flush=True)
    await engine.dispose()
    return {
        way: {
            "median_ms": round(statistics.median(ms), 1),
            "min_ms": round(min(ms), 1),
            "max_ms": round(max(ms), 1),
            "statements": counted[way],
            "rounds_ms": [round(x, 1) for x in ms],
        }
        for way, ms in times.items()
    } | {"chunk": TAKEOVER_CHUNK}


def main() -> None:
    from chips_common.db.scratch import scratch_database

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--label", default="", help="suffix of the result file")
    parser.add_argument("--versus", default="", help="an exported tree of another version")
    args = parser.parse_args()
    load_before = [round(x, 2) for x in os.getloadavg()]
    with scratch_database(ADMIN, "chips_bench") as url:
        figures = asyncio.run(measure(url, args.workspaces, args.rounds, args.versus))
    summary = {
        "benchmark": "takeover",
        "workspaces": args.workspaces,
        "rounds": args.rounds,
        "versus": args.versus,
        "figures": figures,
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"takeover{'-' + args.label if args.label else ''}.json"
    out.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "figures"}), flush=True)
    for way, figure in figures.items():
        if isinstance(figure, dict):
            median, statements = figure["median_ms"], figure["statements"]
            print(f"{way:>10}: {median:8.1f} ms median, {statements} statements")
    print(f"written to {out}", flush=True)


if __name__ == "__main__":
    main()
