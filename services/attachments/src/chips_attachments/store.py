"""The bytes, in S3 only: each stored once under its sha256 (docs/architecture/design.md §6).

boto3 is blocking, so every call runs in a worker thread. Uploads go up in parts of a
fixed size from a file on disk, and downloads come down in chunks, so the service's
memory does not grow with a file's size.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError
from starlette.concurrency import iterate_in_threadpool

from chips_attachments.config import AttachmentsSettings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

CHUNK = 256 * 1024
# Two parts of 8 MB in flight at most: an upload's memory is bounded whatever its size.
TRANSFER = TransferConfig(
    multipart_threshold=16 * 1024 * 1024,
    multipart_chunksize=8 * 1024 * 1024,
    max_concurrency=2,
    use_threads=True,
)


def blob_key(sha256: str) -> str:
    return f"blobs/{sha256}"


def thumb_key(sha256: str) -> str:
    return f"thumbs/{sha256}"


class S3ClientArgs(TypedDict, total=False):
    """What ``boto3.client("s3")`` is told: where, how, and the keys when they are set."""

    endpoint_url: str | None
    region_name: str
    config: Config
    aws_access_key_id: str
    aws_secret_access_key: str


class Blobs:
    def __init__(self, settings: AttachmentsSettings) -> None:
        kwargs: S3ClientArgs = {
            "endpoint_url": settings.s3_endpoint_url or None,
            "region_name": settings.s3_region,
            "config": Config(
                retries={"max_attempts": 3, "mode": "standard"},
                max_pool_connections=20,
                connect_timeout=settings.s3_connect_timeout_seconds,
                read_timeout=settings.s3_read_timeout_seconds,
            ),
        }
        if settings.s3_access_key_id:
            kwargs["aws_access_key_id"] = settings.s3_access_key_id
            kwargs["aws_secret_access_key"] = settings.s3_secret_access_key
        elif boto3.Session().get_credentials() is None and settings.env != "production":
            # A local S3 endpoint (moto, MinIO in development) takes any key.
            kwargs["aws_access_key_id"] = "chips-dev"
            kwargs["aws_secret_access_key"] = "chips-dev"
        self.client: S3Client = boto3.client("s3", **kwargs)
        self.bucket = settings.s3_bucket
        # How long a first look at S3 may take before the file store is called away.
        self.deadline = settings.s3_deadline_seconds

    async def ensure_bucket(self) -> None:
        def ensure() -> None:
            try:
                self.client.head_bucket(Bucket=self.bucket)
            except ClientError:
                self.client.create_bucket(Bucket=self.bucket)

        await asyncio.to_thread(ensure)

    async def ping(self) -> bool:
        await asyncio.to_thread(self.client.head_bucket, Bucket=self.bucket)
        return True

    async def exists(self, key: str) -> bool:
        def head() -> bool:
            try:
                self.client.head_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    return False
                raise
            return True

        return await asyncio.to_thread(head)

    async def put_file(self, key: str, path: Path, content_type: str) -> bool:
        """Store the file under ``key`` unless it is there already; whether it was stored.

        The look first is bounded by ``deadline``: an S3 that does not answer is found out
        in seconds. The upload itself is bounded only per call (its read timeout), since a
        large file takes as long as it takes.
        """
        if await asyncio.wait_for(self.exists(key), self.deadline):
            return False
        await asyncio.to_thread(
            self.client.upload_file,
            str(path),
            self.bucket,
            key,
            ExtraArgs={"ContentType": content_type},
            Config=TRANSFER,
        )
        return True

    async def open(self, key: str) -> tuple[int, AsyncIterator[bytes]] | None:
        """The object's size and its bytes in chunks, or None when it is not there."""

        def get() -> Any:
            try:
                return self.client.get_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise

        found = await asyncio.to_thread(get)
        if found is None:
            return None
        body = found["Body"]

        def chunks() -> Iterator[bytes]:
            try:
                yield from body.iter_chunks(CHUNK)
            finally:
                body.close()

        return int(found["ContentLength"]), iterate_in_threadpool(chunks())

    async def delete(self, keys: list[str]) -> None:
        if not keys:
            return

        def remove() -> None:
            for start in range(0, len(keys), 1000):
                batch = keys[start : start + 1000]
                self.client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
                )

        await asyncio.to_thread(remove)
