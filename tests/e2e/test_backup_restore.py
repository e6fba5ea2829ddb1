"""A backup restored into an empty database and bucket is the workspace again.

``chips-backup backup`` (chips_common/backup.py) dumps the log of record and the tables
beside it from one snapshot, and copies the S3 objects its attachment rows name;
``chips-backup restore`` loads both into an empty database and bucket and rebuilds the
read models and the search index from the log. Every row of the workspace (its log, rooms,
messages, files, runs, the search index) and every file's bytes are then the same as in
the original (docs/operations.md, Backups).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api
from tests.e2e.test_attachments import PDF, bucket, post, uploaded
from tests.e2e.test_changing_words import about, said


def plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def with_db(url: str, name: str) -> str:
    base, _, rest = url.rpartition("/")
    query = rest.partition("?")[2]
    return f"{base}/{name}" + (f"?{query}" if query else "")


def rows_of(url: str, workspace_id: str) -> dict[str, list[Any]]:
    """Every row of the workspace in every table that has a workspace_id, in order."""
    out: dict[str, list[Any]] = {}
    with psycopg.connect(plain(url)) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name = 'workspace_id'"
                " AND table_name NOT IN ('outbox') ORDER BY table_name"
            )
        ]
        for table in tables:
            found = conn.execute(
                f"SELECT * FROM {table} WHERE workspace_id = %s", (workspace_id,)
            ).fetchall()
            out[table] = sorted(repr(row) for row in found)
    return out


def chips_backup(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "chips_common.backup", *argv],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.timeout(400)
async def test_a_restored_backup_is_the_workspace_again(
    stack: Stack, api: Api, tmp_path: Path
) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    rooms = [
        await api.open_space(owner, f"Room {i}", [maya.participant_id, scout.participant_id])
        for i in range(2)
    ]
    for i in range(20):
        await said(api, [owner, maya, scout][i % 3], rooms[i % 2], f"wombat line {i}")
    seq, mid = await said(api, owner, rooms[0], "a line to change")
    await api.append(owner, about("message.edited", rooms[0], mid, text="a changed wombat line"))
    data = {name: PDF + f"% {name}\n".encode() for name in ("a.pdf", "b.pdf")}
    for name, body in data.items():
        upload_id = await uploaded(api, owner, body, name)
        await api.append(owner, post(rooms[1], [upload_id], f"the file {name}"))
    head = await api.head(owner)
    await api.lines(owner, rooms[1], after_seq=head)  # the read models hold it all
    r = await api.http.get(
        "/v1/search",
        params={"q": "wombat", "after_seq": head, "limit": 50},
        headers=api.auth(owner),
    )
    assert len(r.json()["hits"]) == 21

    # Back up.
    started = time.monotonic()
    chips_backup(stack.env, "backup", str(tmp_path / "b"))
    backed_up = time.monotonic() - started

    # Restore into an empty database and an empty bucket of the same servers.
    original = stack.env["CHIPS_DATABASE_URL"]
    name = f"{original.rpartition('/')[2].partition('?')[0]}_restored"
    with psycopg.connect(plain(with_db(original, "postgres")), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    restored_url = with_db(original, name)
    target = {
        **stack.env,
        "CHIPS_DATABASE_URL": restored_url,
        "CHIPS_S3_BUCKET": stack.env["CHIPS_S3_BUCKET"] + "-restored",
    }
    try:
        started = time.monotonic()
        print(chips_backup(target, "restore", str(tmp_path / "b")))
        restored_in = time.monotonic() - started

        # Every row of the workspace is the same: log, rooms, messages, files, search.
        before, after = (
            rows_of(original, owner.workspace_id),
            rows_of(restored_url, owner.workspace_id),
        )
        assert set(before) == set(after)
        differ = [table for table in before if before[table] != after[table]]
        assert differ == [], f"tables that differ after the restore: {differ}"
        assert len(after["events"]) == head and len(after["search_docs"]) >= 23

        # Every file's bytes are in the new bucket.
        s3, original_bucket = bucket(stack)
        with psycopg.connect(plain(restored_url)) as conn:
            shas = [
                r[0]
                for r in conn.execute(
                    "SELECT sha256 FROM attachments WHERE workspace_id = %s", (owner.workspace_id,)
                )
            ]
        assert sorted(shas) == sorted(hashlib.sha256(b).hexdigest() for b in data.values())
        for sha in shas:
            got = s3.get_object(Bucket=target["CHIPS_S3_BUCKET"], Key=f"blobs/{sha}")["Body"]
            assert hashlib.sha256(got.read()).hexdigest() == sha
        del original_bucket
    finally:
        with psycopg.connect(plain(with_db(original, "postgres")), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"backup {backed_up:.1f} s, restore {restored_in:.1f} s, {head} events of this workspace")
