"""Search at a million messages: query times and the index's lag, on the real stack.

1. Starts the whole system on free ports (as the e2e tests do) and, through the API,
   creates WORKSPACES workspaces, each with PEOPLE people and ROOMS rooms (2,000 rooms by
   default), every room its owner and a few of the people.
2. Writes MESSAGES message.post events straight into the log (the log's bulk path: COPY
   into ``events``, each workspace's head moved on, with the eventlog stopped), words drawn
   from a Zipf-distributed vocabulary of real and made-up words, with accents, then builds
   the index with ``python -m chips_search rebuild`` (the index's bulk path: the same fold
   as the live consumer, the GIN index made once the rows are in). The projector is
   moved past the seeded seqs rather than made to fold them: it is not what is measured.
3. Queries, closed loop over HTTP (GET /v1/search, the whole path: auth, freshness, scope,
   query, snippets), as each workspace's owner (in every room) and as a person in some of
   them, for rare words, common words, a prefix alone, and two words the last a prefix.
   Prints p50/p99 per kind, and EXPLAIN ANALYZE of one query of each kind.
4. Index lag under load: RATE messages a second for SECONDS through the API (WebSockets,
   paced, each with a word of its own), while a watcher polls ``search_checkpoints``
   every 2 ms; lag is from sending a message to the index holding it. A sample of the
   words is then searched for over HTTP, and must be found.

Writes bench/results/search.json and bench/results/search-plans.txt.

    .venv/bin/python bench/search.py [--messages 1000000] [--workspaces 20] [--rooms 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import nats
import psycopg
import websockets
from ulid import ULID

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath import postgres_cpu

from chips_common.db.search_tables import TEXT_SEARCH_CONFIG, TSV_INDEX, TSV_INDEX_DDL
from chips_common.rules.search import HEADLINE_OPTIONS, build_tsquery, clean_text
from chips_common.tokens import hash_token
from chips_devstack.procs import ready
from chips_devstack.stack import UNLIMITED, Stack, local_stack
from chips_gateway.search import SEARCH_SQL
from tests.e2e.client import Api, Identity

T = TypeVar("T")
RESULTS = Path(__file__).parent / "results"
# CHIPS_EVENTS's subjects with the default prefix (chips_common.nats.streams.Names).
EVENTS_SUBJECTS = "chips.events.>"

COMMON = [
    "the",
    "to",
    "and",
    "a",
    "of",
    "for",
    "in",
    "is",
    "on",
    "we",
    "it",
    "this",
    "that",
    "with",
    "you",
    "be",
    "at",
    "have",
    "are",
    "not",
    "please",
    "can",
    "will",
    "do",
    "from",
    "as",
    "invoice",
    "meeting",
    "today",
    "team",
    "update",
    "report",
    "customer",
    "payment",
    "order",
    "deploy",
    "release",
    "review",
    "budget",
    "client",
    "project",
    "plan",
    "issue",
    "fix",
    "data",
    "ticket",
    "call",
    "email",
    "draft",
    "schedule",
    "approve",
    "vendor",
    "contract",
    "quarter",
    "revenue",
    "shipping",
]
ACCENTED = [
    "café",
    "résumé",
    "naïve",
    "zürich",
    "señor",
    "über",
    "façade",
    "crème",
    "déjà",
    "coördinate",
]
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "te",
    "sun",
    "vel",
    "dor",
    "pri",
    "an",
    "ex",
    "ma",
    "ti",
    "co",
    "ro",
    "bel",
    "fin",
    "gar",
    "hul",
    "is",
    "jo",
    "kel",
    "mun",
    "nor",
    "pel",
    "qua",
    "ris",
    "sto",
    "tur",
    "ul",
    "vin",
    "wex",
    "yar",
    "zol",
]


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """Real words first (the most used), then made-up ones, in Zipf rank order."""
    words = list(dict.fromkeys(COMMON + ACCENTED))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def load() -> str:
    """The machine's load average (1, 5, 15 minutes), as `uptime` says it: the machine is
    shared, so every figure is written beside the load it was measured under."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_seconds(pid: int | None) -> float:
    """User and system CPU a process has spent: on a shared machine latencies swing with
    what everyone else runs, the CPU a search or a message costs much less."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * q) - 1))]


def ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p99_ms": round(quantile(values, 0.99) * 1000, 2),
        "max_ms": round(max(values) * 1000, 2),
        "n": len(values),
    }


def plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


# --- 1. workspaces, people and rooms through the API ---------------------------------


async def setup(
    api: Api, workspaces: int, people: int, rooms: int, rng: random.Random
) -> list[dict[str, Any]]:
    """Every workspace at once: the eventlog takes their appends in batches."""
    seeds = [rng.randrange(2**32) for _ in range(workspaces)]
    return list(
        await asyncio.gather(
            *(
                one_workspace(api, w, people, rooms, random.Random(seeds[w]))
                for w in range(workspaces)
            )
        )
    )


async def patiently(call: Callable[[], Awaitable[T]]) -> T:
    """An API call the log answered ``unavailable`` (a loaded machine: it did not answer in
    time), or failed inside (Postgres refusing a connection: the machine's Postgres is shared
    and at times has no connection to spare), is made again after a backoff, at most five
    times. The setup's writes are made again with new keys: one the log did take meanwhile
    leaves an extra workspace, person or room that the seed never writes into, which
    changes no figure."""
    for attempt in range(5):
        try:
            return await call()
        except AssertionError as refused:
            transient = '"unavailable"' in str(refused) or "Internal Server Error" in str(refused)
            if not transient or attempt == 4:
                raise
            await asyncio.sleep(1.0 + attempt)
    raise AssertionError("unreachable")


async def one_workspace(
    api: Api, w: int, people: int, rooms: int, rng: random.Random
) -> dict[str, Any]:
    owner = await patiently(partial(api.create_workspace, f"Bench {w}", f"Owner {w}"))
    persons = [
        await patiently(partial(api.add_person, owner, f"Person {w}-{p}")) for p in range(people)
    ]
    room_ids, members = [], []
    for r in range(rooms):
        chosen = rng.sample(persons, rng.randint(2, min(5, len(persons))))
        room_ids.append(
            await patiently(
                partial(api.open_space, owner, f"Room {w}-{r}", [p.participant_id for p in chosen])
            )
        )
        members.append([owner.participant_id, *(p.participant_id for p in chosen)])
    # The person measured is in some rooms only: the one in the most, for a fair share of
    # hits (about a third of the rooms).
    counts = {p.participant_id: sum(p.participant_id in m for m in members) for p in persons}
    member = max(persons, key=lambda p: counts[p.participant_id])
    print(f"  workspace {w + 1}: {rooms} rooms", flush=True)
    return {
        "owner": owner,
        "member": member,
        "member_rooms": counts[member.participant_id],
        "rooms": room_ids,
        "room_members": members,
    }


# --- 2. a million messages into the log, then the index --------------------------------


def seed_log(
    database_url: str,
    made: list[dict[str, Any]],
    messages: int,
    vocab: list[str],
    rng: random.Random,
) -> None:
    weights = list(itertools.accumulate(1 / (rank**1.07) for rank in range(1, len(vocab) + 1)))
    per_workspace = messages // len(made)
    start = datetime.now(UTC) - timedelta(days=365)
    with psycopg.connect(plain(database_url)) as conn:
        for n, ws in enumerate(made):
            workspace_id = ws["owner"].workspace_id
            head = conn.execute(
                "SELECT head_seq FROM workspaces WHERE id = %s", (workspace_id,)
            ).fetchone()[0]
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY events (workspace_id, seq, id, type, ts, actor_id, space_id, body)"
                    " FROM STDIN"
                ) as copy,
            ):
                for i in range(per_workspace):
                    seq = head + 1 + i
                    r = rng.randrange(len(ws["rooms"]))
                    author = rng.choice(ws["room_members"][r])
                    words = rng.choices(vocab, cum_weights=weights, k=rng.randint(3, 22))
                    text = " ".join(words).capitalize() + "."
                    # The index's words are the text as the search service cleans it.
                    assert i % 1000 or clean_text(text) == text
                    ulid = str(ULID())
                    ts = start + timedelta(seconds=i * 30)
                    body = {
                        "v": 1,
                        "id": f"evt_{ulid}",
                        "seq": seq,
                        "ts": ts.isoformat().replace("+00:00", "Z"),
                        "workspace_id": workspace_id,
                        "actor": {"kind": "person", "id": author},
                        "type": "message.post",
                        "space_id": ws["rooms"][r],
                        "addressed_to": [],
                        "kind": "text",
                        "message_id": f"msg_{ulid}",
                        "text": text,
                    }
                    copy.write_row(
                        (
                            workspace_id,
                            seq,
                            body["id"],
                            "message.post",
                            ts,
                            author,
                            ws["rooms"][r],
                            json.dumps(body),
                        )
                    )
            top = head + per_workspace
            conn.execute("UPDATE workspaces SET head_seq = %s WHERE id = %s", (top, workspace_id))
            conn.execute(
                "INSERT INTO projector_checkpoints (workspace_id, seq) VALUES (%s, %s)"
                " ON CONFLICT (workspace_id) DO UPDATE SET seq = excluded.seq",
                (workspace_id, top),
            )
            conn.commit()
            print(f"  logged {(n + 1) * per_workspace:,} messages", flush=True)
        conn.execute("ANALYZE events")
        conn.commit()


def seed_index(database_url: str, made: list[dict[str, Any]]) -> None:
    """The index's bulk path done in one statement per workspace, in Postgres.

    What ``python -m chips_search rebuild`` writes for a text post (its words are its text,
    a text has no card words, its room is its space: the seed opens no threads), with the
    same tsvector expression, computed by Postgres from the log's rows rather than folded
    one event at a time in Python; then the GIN index once, and each checkpoint at its
    head. ``--index rebuild`` runs the rebuild itself instead.
    """
    tsv = f"to_tsvector('{TEXT_SEARCH_CONFIG}', (e.body->>'text') || E'\\n' || '')"
    with psycopg.connect(plain(database_url)) as conn:
        conn.execute("TRUNCATE search_docs, search_threads, search_checkpoints")
        conn.execute(f"DROP INDEX IF EXISTS {TSV_INDEX}")
        conn.commit()
        for n, ws in enumerate(made):
            workspace_id = ws["owner"].workspace_id
            conn.execute(
                "INSERT INTO search_docs (workspace_id, doc_id, seq, space_id, room_id, kind,"
                " message_kind, message_id, author_id, ts, words, extra, tsv)"
                " SELECT e.workspace_id, e.body->>'message_id', e.seq, e.space_id, e.space_id,"
                " 'message', 'text', e.body->>'message_id', e.actor_id, e.ts, e.body->>'text',"
                f" '', {tsv}"
                " FROM events e WHERE e.workspace_id = %s AND e.type = 'message.post'"
                " AND e.body->>'text' IS NOT NULL",
                (workspace_id,),
            )
            conn.execute(
                "INSERT INTO search_checkpoints (workspace_id, seq)"
                " SELECT id, head_seq FROM workspaces WHERE id = %s",
                (workspace_id,),
            )
            conn.commit()
            print(f"  indexed workspace {n + 1}", flush=True)
        conn.execute("SET maintenance_work_mem = '256MB'")
        conn.execute(TSV_INDEX_DDL)
        conn.commit()


# --- 3. queries ------------------------------------------------------------------------


def query_sets(vocab: list[str], rng: random.Random, n: int) -> dict[str, list[str]]:
    rare = vocab[3000:15000]
    mid = [w for w in vocab[40:1500] if len(w) >= 5]
    return {
        "rare": [rng.choice(rare) for _ in range(n)],
        "common": [rng.choice(COMMON[:30]) for _ in range(n)],
        "prefix": [rng.choice(mid)[:3] for _ in range(n)],
        "two_words_prefix": [f"{rng.choice(COMMON[:40])} {rng.choice(mid)[:3]}" for _ in range(n)],
    }


async def measure_queries(
    base: str,
    made: list[dict[str, Any]],
    sets: dict[str, list[str]],
    rng: random.Random,
    gateway_pid: int | None = None,
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        # Warm first: every workspace's partition and index pages read once, and the
        # gateway's connections open, so that what is measured is not the first reads
        # after the seed (the owner's figures, measured first, paid them otherwise).
        for ws in made:
            for who in ("owner", "member"):
                for queries in sets.values():
                    for q in queries[:3]:
                        r = await http.get(
                            "/v1/search",
                            params={"q": q},
                            headers={"Authorization": f"Bearer {ws[who].token}"},
                        )
                        assert r.status_code == 200, r.text
        cpu_before, searches = cpu_seconds(gateway_pid), 0
        for who in ("owner", "member"):
            for kind, queries in sets.items():
                times: list[float] = []
                hits: list[int] = []
                for q in queries:
                    ws = rng.choice(made)
                    identity: Identity = ws[who]
                    started = time.perf_counter()
                    r = await http.get(
                        "/v1/search",
                        params={"q": q},
                        headers={"Authorization": f"Bearer {identity.token}"},
                    )
                    times.append(time.perf_counter() - started)
                    assert r.status_code == 200, r.text
                    hits.append(len(r.json()["hits"]))
                figures[f"{who}.{kind}"] = {
                    **ms(times),
                    "mean_hits": statistics.mean(hits),
                    "load_after": load(),
                }
                searches += len(times)
                print(f"  {who:>6} {kind:<17} {figures[f'{who}.{kind}']}", flush=True)
        if gateway_pid is not None:
            figures["gateway_cpu_ms_per_search"] = round(
                (cpu_seconds(gateway_pid) - cpu_before) / searches * 1000, 2
            )
            print(f"  gateway CPU per search: {figures['gateway_cpu_ms_per_search']} ms")
    return figures


def search_sql() -> str:
    """The gateway's statement of a search across the caller's rooms, with psycopg's binds:
    the credential, head, checkpoint and rooms now, and the page of hits, in one."""
    sql = SEARCH_SQL
    for name in (
        "credential_id",
        "workspace_id",
        "tsquery",
        "before",
        "participant_id",
        "limit",
        "headline",
    ):
        sql = sql.replace(f":{name}", f"%({name})s")
    return sql.replace("CAST(:rooms AS text[])", "CAST(%(rooms)s AS text[])")


def rooms_now(conn: psycopg.Connection[Any], identity: Identity) -> list[str]:
    """The caller's rooms, sorted, as the gateway binds them (and the statement checks)."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT space_id FROM memberships WHERE workspace_id = %s AND participant_id = %s"
            " ORDER BY space_id",
            (identity.workspace_id, identity.participant_id),
        )
    ]


def credential_of(conn: psycopg.Connection[Any], identity: Identity) -> str:
    row = conn.execute(
        "SELECT id FROM credentials WHERE token_hash = %s", (hash_token(identity.token),)
    ).fetchone()
    assert row is not None
    return str(row[0])


def measure_sql(
    database_url: str, made: list[dict[str, Any]], sets: dict[str, list[str]], rng: random.Random
) -> tuple[dict[str, Any], str]:
    """The query alone, as the gateway sends it, on one warm connection: how much of a
    search's time is Postgres's. And the plan of the slowest query of each kind."""
    sql = search_sql()
    figures: dict[str, Any] = {}
    plans = []
    # Autocommit and never prepared, as the gateway's search engine sends it.
    with psycopg.connect(plain(database_url), autocommit=True, prepare_threshold=None) as conn:
        credentials: dict[str, str] = {}
        rooms: dict[str, list[str]] = {}
        for who in ("owner", "member"):
            for kind, queries in sets.items():
                times: list[float] = []
                worst: tuple[float, str, dict[str, Any]] = (0.0, "", {})
                for q in queries:
                    ws = rng.choice(made)
                    identity: Identity = ws[who]
                    pid = identity.participant_id
                    if pid not in credentials:
                        credentials[pid] = credential_of(conn, identity)
                        rooms[pid] = rooms_now(conn, identity)
                    params = {
                        "credential_id": credentials[pid],
                        "rooms": rooms[pid],
                        "workspace_id": identity.workspace_id,
                        "participant_id": pid,
                        "tsquery": build_tsquery(q),
                        "before": 2**63 - 1,
                        "limit": 21,
                        "headline": HEADLINE_OPTIONS,
                    }
                    started = time.perf_counter()
                    conn.execute(sql, params).fetchall()
                    took = time.perf_counter() - started
                    times.append(took)
                    worst = max(worst, (took, q, params), key=lambda w: w[0])
                figures[f"{who}.{kind}"] = {**ms(times), "load_after": load()}
                print(f"  sql {who:>6} {kind:<17} {figures[f'{who}.{kind}']}", flush=True)
                plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, worst[2]).fetchall()
                plans.append(
                    f"--- slowest of {who}'s {kind}: q={worst[1]!r} ({worst[0] * 1000:.1f} ms;"
                    f" {len(worst[2]['rooms'])} rooms), run again under EXPLAIN ANALYZE\n"
                )
                plans.extend(row[0] + "\n" for row in plan)
    return figures, "".join(plans)


def explain(database_url: str, made: list[dict[str, Any]], sets: dict[str, list[str]]) -> str:
    """EXPLAIN ANALYZE of the gateway's own query, one of each kind, as the member."""
    ws = made[0]
    out = []
    with psycopg.connect(plain(database_url), autocommit=True, prepare_threshold=None) as conn:
        sql = search_sql()
        for kind, queries in sets.items():
            q = queries[0]
            params = {
                "credential_id": credential_of(conn, ws["member"]),
                "rooms": rooms_now(conn, ws["member"]),
                "workspace_id": ws["owner"].workspace_id,
                "participant_id": ws["member"].participant_id,
                "tsquery": build_tsquery(q),
                "before": 2**63 - 1,
                "limit": 21,
                "headline": HEADLINE_OPTIONS,
            }
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
            out.append(f"--- {kind}: q={q!r} (member of {len(params['rooms'])} rooms)\n")
            out.extend(row[0] + "\n" for row in plan)
    return "".join(out)


# --- 4. lag under load -----------------------------------------------------------------


async def measure_lag(
    base: str,
    database_url: str,
    made: list[dict[str, Any]],
    rate: int,
    seconds: float,
    nats_url: str | None = None,
    search_pid: int | None = None,
    search_every: int = 0,
    gateway_pid: int | None = None,
    pids: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The index's lag at ``rate``; with ``pids``, the CPU each of those processes (and all
    of Postgres) spent per message sent."""
    url = base.replace("http://", "ws://") + "/v1/ws"
    # With ``search_every``: every so many acks, a search for the message's word as of its
    # seq, sent the moment the ack is read (as a client that writes, then searches): from
    # the ack to the answer, the gateway's wait for the index included.
    probe_http = httpx.AsyncClient(base_url=base, timeout=30) if search_every else None
    probes: list[float] = []
    probes_missed = [0]
    probe_tasks: set[asyncio.Task[None]] = set()

    async def probe(k: str, seq: int, at: float) -> None:
        assert probe_http is not None
        owner, word = words[k]
        for attempt in range(2):
            try:
                r = await probe_http.get(
                    "/v1/search",
                    params={"q": word, "after_seq": seq},
                    headers={"Authorization": f"Bearer {owner.token}"},
                )
                break
            except httpx.TransportError:
                # A kept-alive connection the gateway closed as it was reused: sent again
                # on a new one, as a client does (its time still runs from the ack).
                if attempt:
                    raise
        done_at = time.perf_counter()
        assert r.status_code == 200, r.text
        if len(r.json()["hits"]) == 1 and r.json()["as_of_seq"] >= seq:
            probes.append(done_at - at)
        else:
            probes_missed[0] += 1

    sent: dict[str, float] = {}
    # When each event reached CHIPS_EVENTS (heard on its subject, as the search service's
    # consumer is handed it): the log's part of the lag (it answers, then publishes) and
    # the index's part are told apart.
    streamed: dict[tuple[str, int], float] = {}
    listener = None
    if nats_url:
        listener = await nats.connect(nats_url)

        async def heard(msg: Any) -> None:
            event = json.loads(msg.data)
            streamed.setdefault((event["workspace_id"], event["seq"]), time.perf_counter())

        await listener.subscribe(EVENTS_SUBJECTS, cb=heard)
    acked: dict[str, tuple[str, int, float]] = {}  # key -> (workspace, seq, ack time)
    searchable: dict[str, float] = {}
    words: dict[str, tuple[Identity, str]] = {}
    total = int(rate * seconds)
    done = asyncio.Event()
    run = f"{random.randrange(16**6):06x}"

    waiting: dict[str, list[tuple[int, str]]] = {}  # per workspace, a heap of (seq, key)

    known: dict[str, int] = {}  # each workspace's checkpoint, as last heard

    def searchable_upto(ws_id: str, checkpoint: int, now: float) -> None:
        known[ws_id] = max(checkpoint, known.get(ws_id, 0))
        heap = waiting.get(ws_id, [])
        while heap and heap[0][0] <= checkpoint:
            searchable[heapq.heappop(heap)[1]] = now
        if len(searchable) == total:
            done.set()

    async def watch() -> None:
        # The index's checkpoints as they commit (the trigger of docs/adr/0111 notifies
        # each one), so a line is searchable the moment its fold commits, with no polling
        # from here; a read of every checkpoint each half second is the net (an ack read
        # after the notification of its fold, say).
        async with await psycopg.AsyncConnection.connect(plain(database_url)) as conn:
            await conn.set_autocommit(True)
            await conn.execute("LISTEN search_checkpoint")
            while not done.is_set():
                rows = await (
                    await conn.execute("SELECT workspace_id, seq FROM search_checkpoints")
                ).fetchall()
                now = time.perf_counter()
                for ws_id, checkpoint in rows:
                    searchable_upto(ws_id, checkpoint, now)
                async for notice in conn.notifies(timeout=0.5):
                    ws_id, _, seq = notice.payload.partition(" ")
                    searchable_upto(ws_id, int(seq), time.perf_counter())
                    if done.is_set():
                        break

    sockets = []
    for ws in made:
        sock = await websockets.connect(
            url, additional_headers={"Authorization": f"Bearer {ws['owner'].token}"}
        )
        await sock.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
        await sock.recv()
        sockets.append((ws, sock))

    failed: list[BaseException] = []
    retries = [0]
    tries: dict[str, int] = {}
    pending: set[asyncio.Task[None]] = set()

    async def resend(sock: Any, k: str, delay: float) -> None:
        await asyncio.sleep(delay)
        await sock.send(events[k])

    events: dict[str, str] = {}  # key -> the frame sent, to send again with the same key

    async def read(ws: dict[str, Any], sock: Any) -> None:
        try:
            async for raw in sock:
                frame = json.loads(raw)
                if frame["frame"] == "ack" and frame.get("seq") is not None:
                    k = frame["idempotency_key"]
                    ws_id = ws["owner"].workspace_id
                    acked[k] = (ws_id, frame["seq"], time.perf_counter())
                    heapq.heappush(waiting.setdefault(ws_id, []), (frame["seq"], k))
                    # An ack read after its fold's commit was heard: searchable already.
                    searchable_upto(ws_id, known.get(ws_id, 0), acked[k][2])
                    if search_every and len(acked) % search_every == 0:
                        task = asyncio.create_task(probe(k, frame["seq"], acked[k][2]))
                        probe_tasks.add(task)
                elif frame["frame"] == "error" and frame.get("code") == "unavailable":
                    # The log did not answer in time (a loaded machine): sent again with
                    # the same key, as a client does, after a backoff and at most three
                    # times (sending again at once only feeds the queue it waits in); its
                    # lag runs from the first send.
                    k = frame["idempotency_key"]
                    tries[k] = tries.get(k, 0) + 1
                    if tries[k] <= 3:
                        retries[0] += 1
                        pending.add(asyncio.create_task(resend(sock, k, 0.5 * tries[k])))
                elif frame["frame"] == "error":
                    raise AssertionError(frame)
        except BaseException as exc:
            failed.append(exc)
            done.set()
            raise

    load_before = load()
    cpu_before = cpu_seconds(search_pid)
    gateway_cpu_before = cpu_seconds(gateway_pid)
    every_before = {n: cpu_seconds(pid) for n, pid in (pids or {}).items()}
    postgres_before = postgres_cpu()
    scans_before = checkpoint_scans(database_url)
    waits_before = await search_waits(base)
    readers = [asyncio.create_task(read(ws, sock)) for ws, sock in sockets]
    watcher = asyncio.create_task(watch())
    started = time.perf_counter()
    for i in range(total):
        due = started + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        ws, sock = sockets[i % len(sockets)]
        # A key of its own per rate and run: a key sent again is a duplicate the log answers
        # with the first one's seq (and its words), which is not what is measured.
        k = f"lag{rate}-{run}-{i}"
        word = f"lagword{i}x{random.randrange(10**6)}"
        words[k] = (ws["owner"], word)
        events[k] = json.dumps(
            {
                "frame": "event",
                "event": {
                    "type": "message.post",
                    "space_id": ws["rooms"][i % len(ws["rooms"])],
                    "text": f"load test line {word}",
                    "idempotency_key": k,
                },
            }
        )
        sent[k] = time.perf_counter()
        await sock.send(events[k])
    sending = time.perf_counter() - started
    # Bounded: what was not searchable by then is counted, not waited for.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 180)
    if failed:
        raise failed[0]
    watcher.cancel()
    for task in readers:
        task.cancel()
    if probe_tasks:
        await asyncio.gather(*probe_tasks)
    if probe_http is not None:
        await probe_http.aclose()
    gateway_cpu = cpu_seconds(gateway_pid) - gateway_cpu_before
    every = {n: cpu_seconds(pid) - every_before[n] for n, pid in (pids or {}).items()}
    every["postgres (whole machine)"] = postgres_cpu() - postgres_before
    # Postgres counts a backend's scans when its transaction ends, at most once a second.
    await asyncio.sleep(1.5)
    scans = checkpoint_scans(database_url) - scans_before
    waits_after = await search_waits(base)
    waits = {k: v - waits_before.get(k, 0) for k, v in waits_after.items()}
    for _, sock in sockets:
        await sock.close()
    found = [k for k in sent if k in searchable and k in acked]
    lags = [searchable[k] - sent[k] for k in found]
    after_ack = [searchable[k] - acked[k][2] for k in found]
    search_cpu = cpu_seconds(search_pid) - cpu_before
    if listener is not None:
        await listener.close()
    on_stream = [k for k in found if acked[k][:2] in streamed]
    ack_to_stream = [streamed[acked[k][:2]] - acked[k][2] for k in on_stream]
    stream_to_searchable = [searchable[k] - streamed[acked[k][:2]] for k in on_stream]
    acks = [acked[k][2] - sent[k] for k in sent if k in acked]
    # Every sampled word is found over HTTP, as of the seq it was logged at; a word that is
    # not is looked for in the log and the index, and said.
    missed: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for k in random.sample(found, min(100, len(found))):
            owner, word = words[k]
            r = await http.get(
                "/v1/search",
                params={"q": word, "after_seq": acked[k][1]},
                headers={"Authorization": f"Bearer {owner.token}"},
            )
            assert r.status_code == 200, r.text
            if len(r.json()["hits"]) != 1:
                missed.append(await where_is(database_url, k, word, acked[k], r.json()))
    if missed:
        print(f"  NOT FOUND: {missed}", flush=True)
    return {
        "load_before": load_before,
        "load_after": load(),
        "rate_per_second": rate,
        "messages": total,
        "acked": len(acked),
        "searchable": len(found),
        "not_acked_after_180_s": total - len(acked),
        "sent_again_after_unavailable": retries[0],
        "achieved_send_rate": round(total / sending, 1),
        # The rate the log took them at: first send to last ack.
        "acked_per_second": round(
            len(acked) / max(1e-9, max((a[2] for a in acked.values()), default=0) - started), 1
        ),
        "sampled_words_not_found": missed,
        # Every process's CPU over the run, per message sent.
        "cpu_ms_per_message": {
            n: round(c / max(1, total) * 1000, 3) for n, c in sorted(every.items())
        },
        # The search service's CPU over the run, per message it indexed.
        "search_cpu_ms_per_message": round(search_cpu / max(1, len(found)) * 1000, 3)
        if search_pid is not None
        else None,
        # The gateway's CPU over the run, per message sent (the socket relays them all;
        # with --search-after-ack its searches and their waits for the index too).
        "gateway_cpu_ms_per_message": round(gateway_cpu / max(1, total) * 1000, 3)
        if gateway_pid is not None
        else None,
        # Every read of search_checkpoints over the run, by anyone (the search service's
        # folds, the searches' statements, a gateway polling it while it waits).
        "checkpoint_scans": scans,
        # The gateway's own count (since ADR 0111) of searches that waited for the index, by
        # what ended the wait, and of the checkpoint reads it made while they waited.
        "search_waits": waits or None,
        "send_to_searchable": ms(lags) if lags else None,
        "ack_to_searchable": ms(after_ack) if after_ack else None,
        # The two parts of ack_to_searchable: the eventlog publishing the event after it
        # answered, and the search service folding it from the stream.
        "ack_to_stream": ms(ack_to_stream) if ack_to_stream else None,
        "stream_to_searchable": ms(stream_to_searchable) if stream_to_searchable else None,
        "send_to_ack": ms(acks) if acks else None,
        # With --search-after-ack: a search sent at the ack, to its answer with the line.
        "search_after_ack": ms(probes) if probes else None,
        "search_after_ack_without_the_line": probes_missed[0] if search_every else None,
    }


async def search_waits(base: str) -> dict[str, float]:
    """The gateway's counters of searches' waits for the index, from its /metrics (none
    before ADR 0111)."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        text = (await http.get("/metrics")).text
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("chips_gateway_search_wait"):
            name, value = line.rsplit(" ", 1)
            if not name.endswith("_created") and "_created{" not in name:
                counts[name] = float(value)
    return counts


def checkpoint_scans(database_url: str) -> int:
    """How many scans of ``search_checkpoints`` Postgres has counted (sequential and by
    index), whoever made them."""
    with psycopg.connect(plain(database_url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
            " WHERE relname = 'search_checkpoints'"
        ).fetchone()
    return int(row[0]) if row else 0


async def where_is(
    database_url: str, key: str, word: str, ack: tuple[str, int, float], answer: Any
) -> dict[str, Any]:
    """Where a word the search did not find is: its events in the log, its index row."""
    async with await psycopg.AsyncConnection.connect(plain(database_url)) as conn:
        logged = await (
            await conn.execute(
                "SELECT seq, type, space_id FROM events WHERE workspace_id = %s"
                " AND body->>'text' LIKE %s ORDER BY seq",
                (ack[0], f"%{word}"),
            )
        ).fetchall()
        indexed = await (
            await conn.execute(
                "SELECT seq, room_id FROM search_docs WHERE workspace_id = %s AND words LIKE %s",
                (ack[0], f"%{word}"),
            )
        ).fetchall()
        checkpoint = await (
            await conn.execute(
                "SELECT seq FROM search_checkpoints WHERE workspace_id = %s", (ack[0],)
            )
        ).fetchone()
    return {
        "key": key,
        "word": word,
        "acked_seq": ack[1],
        "answer": answer,
        "logged": [list(r) for r in logged],
        "indexed": [list(r) for r in indexed],
        "checkpoint_now": checkpoint[0] if checkpoint else None,
    }


# --- the run -----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--workspaces", type=int, default=20)
    parser.add_argument("--rooms", type=int, default=100, help="rooms per workspace")
    parser.add_argument("--people", type=int, default=9, help="people per workspace")
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=200, help="per kind and searcher")
    parser.add_argument(
        "--rate", default="500", help="messages a second, for lag (several: 100,500)"
    )
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument(
        "--index",
        choices=("sql", "rebuild"),
        default="sql",
        help="build the index in Postgres from the log, or by python -m chips_search rebuild",
    )
    parser.add_argument("--out", default="search", help="names bench/results/<out>.json")
    parser.add_argument("--lag-only", action="store_true", help="seed, then only the lag")
    parser.add_argument(
        "--search-after-ack",
        type=int,
        default=0,
        metavar="N",
        help="during the lag, every Nth acked message is searched for as of its seq at once",
    )
    args = parser.parse_args()
    OUT[0] = args.out
    rng = random.Random(7)
    figures: dict[str, Any] = {
        "benchmark": "search",
        "messages": args.messages,
        "workspaces": args.workspaces,
        "rooms": args.workspaces * args.rooms,
        "command": "python bench/search.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.python_version()}",
        "index_built_by": args.index,
    }
    with local_stack(prefix="chips-bench-", gateways=1, env=UNLIMITED) as stack:
        figures.update(asyncio.run(run(stack, args, rng, figures)))
    plans = figures.pop("plans")
    save(figures, plans)
    print(json.dumps(figures, indent=2))
    print(plans)


OUT = ["search"]


def save(figures: dict[str, Any], plans: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{OUT[0]}.json").write_text(json.dumps(figures, indent=2) + "\n")
    (RESULTS / f"{OUT[0]}-plans.txt").write_text(plans)


async def run(
    stack: Stack, args: argparse.Namespace, rng: random.Random, figures: dict[str, Any]
) -> dict[str, Any]:
    database_url = stack.env["CHIPS_DATABASE_URL"]
    api = Api(stack.gateway_a)
    t0 = time.perf_counter()
    print("creating workspaces, people and rooms through the API", flush=True)
    made = await setup(api, args.workspaces, args.people, args.rooms, rng)
    await api.close()
    t1 = time.perf_counter()
    print("writing the messages into the log", flush=True)
    for name in ("eventlog", "projector", "search"):
        stack.stop(name)
    vocab = vocabulary(rng, args.vocabulary)
    seed_log(database_url, made, args.messages, vocab, rng)
    t2 = time.perf_counter()
    if args.index == "rebuild":
        print("building the index (python -m chips_search rebuild)", flush=True)
        rebuilt = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "chips_search", "rebuild"],
            env={**os.environ, **stack.env},
            capture_output=True,
            text=True,
            check=True,
        )
        print("  " + rebuilt.stdout.strip(), flush=True)
    else:
        print("building the index in Postgres (INSERT … SELECT from the log)", flush=True)
        await asyncio.to_thread(seed_index, database_url, made)
    with psycopg.connect(plain(database_url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE search_docs")
        # Summed over the partitions (docs/adr/0051), when the table has them.
        size = conn.execute(
            "SELECT pg_size_pretty(coalesce((SELECT sum(pg_total_relation_size(inhrelid))"
            " FROM pg_inherits WHERE inhparent = 'search_docs'::regclass), 0)"
            " + pg_total_relation_size('search_docs')),"
            " pg_size_pretty(coalesce((SELECT sum(pg_relation_size(inhrelid))"
            " FROM pg_inherits WHERE inhparent = 'search_docs_tsv'::regclass), 0)"
            " + pg_relation_size('search_docs_tsv')), count(*) FROM search_docs"
        ).fetchone()
    assert size is not None
    t3 = time.perf_counter()
    for name in ("eventlog", "projector", "search"):
        stack.start(name)
    for name in ("eventlog", "projector", "search"):
        deadline = time.monotonic() + 900
        while not ready(stack.url(name)):
            assert time.monotonic() < deadline, f"{name} did not come back"
            await asyncio.sleep(0.5)
    seeding = {
        "load_after": load(),
        "api_setup_seconds": round(t1 - t0, 1),
        "log_copy_seconds": round(t2 - t1, 1),
        "index_rebuild_seconds": round(t3 - t2, 1),
        "index_rows": size[2],
        "table_and_indexes_size": size[0],
        "gin_index_size": size[1],
    }
    print(f"  {seeding}", flush=True)
    sets = query_sets(vocab, rng, args.queries)
    queries: dict[str, Any] = {}
    plans = ""
    if not args.lag_only:
        print("queries over HTTP (closed loop)", flush=True)
        queries = await measure_queries(
            stack.gateway_a, made, sets, rng, stack.procs["gateway_a"].pid
        )
        plans = explain(database_url, made, sets)
        print("the query alone, in Postgres", flush=True)
        sql_figures, slowest = await asyncio.to_thread(measure_sql, database_url, made, sets, rng)
        queries["postgres_only"] = sql_figures
        plans += slowest
        save({**figures, "seeding": seeding, "queries": queries}, plans)
    lags = []
    for rate in (int(r) for r in str(args.rate).split(",")):
        print(f"index lag at {rate} messages a second", flush=True)
        lag = await measure_lag(
            stack.gateway_a,
            database_url,
            made,
            rate,
            args.seconds,
            stack.env["CHIPS_NATS_URL"],
            stack.procs["search"].pid,
            args.search_after_ack,
            stack.procs["gateway_a"].pid,
            {
                n.removeprefix("infra-"): proc.pid
                for n, proc in stack.procs.items()
                if n != "infra-redis" and proc.popen is not None
            },
        )
        print(f"  {lag}", flush=True)
        lags.append(lag)
        save({**figures, "seeding": seeding, "queries": queries, "lag": lags}, plans)
    return {"seeding": seeding, "queries": queries, "lag": lags, "plans": plans}


if __name__ == "__main__":
    main()
