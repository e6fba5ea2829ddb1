"""Attachments settings (docs/configuration.md, Attachments)."""

from __future__ import annotations

from chips_common.config import Settings


class AttachmentsSettings(Settings):
    port: int = 8093
    # The ceiling nothing gets past; the workspace's caps per kind sit under it.
    max_attachment_bytes: int = 256_000_000
    # A picture with more pixels than this is refused before it is decoded
    # (decompression bombs).
    max_image_pixels: int = 50_000_000
    # How long decoding, stripping and thumbnailing one file may take.
    process_timeout_seconds: float = 30.0
    thumbnail_px: int = 320
    # Rotation: URLs signed with the previous key are still accepted until they expire.
    previous_signing_key: str = ""
    # Where an upload's bytes wait (on disk, never whole in memory) until they are in S3.
    spool_dir: str = ""
    # S3 credentials; when unset, boto3's usual chain (AWS_* variables, profiles, roles).
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    s3_region: str = "us-east-1"
