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
    # How long one S3 call may wait to connect and for each read, and how long the first
    # look of an upload or a fetch may wait on the file store: an S3 that does not answer
    # costs an upload a clear ``unavailable`` in seconds, never a client's own timeout.
    s3_connect_timeout_seconds: float = 3.0
    s3_read_timeout_seconds: float = 10.0
    s3_deadline_seconds: float = 8.0
    # Voice notes (docs/adr/0137): the engine that hears them (``pocketsphinx``, ``none``,
    # or ``module:attribute`` naming a factory of one's own), the longest one heard, how
    # long hearing one may take, and how often the replica looks for one to hear.
    transcriber: str = "pocketsphinx"
    voice_note_max_seconds: int = 300
    hearing_timeout_seconds: float = 120.0
    hearing_poll_seconds: float = 1.0
