"""Configuration: ``CHIPS_*`` environment variables only, with working local defaults.

Every service reads the same :class:`Settings`; a service that needs more subclasses it.
Defaults point at the machine's own NATS, Postgres and Redis, and at the S3 endpoint
``make up`` starts. The development secrets are refused outside development.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEV_OPERATOR_SECRET = "chips-dev-operator-secret"
DEV_SIGNING_KEY = "chips-dev-signing-key"


class Settings(BaseSettings):
    """Settings shared by every service."""

    model_config = SettingsConfigDict(env_prefix="CHIPS_", extra="ignore")

    env: Literal["development", "test", "production"] = "development"

    nats_url: str = "nats://127.0.0.1:4222"
    database_url: str = "postgresql+psycopg://postgres@127.0.0.1:5432/chips"
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "chips"
    s3_endpoint_url: str = "http://127.0.0.1:9000"
    s3_bucket: str = "chips-attachments"

    # Streams and subjects can be renamed so that several Chips installs (or test runs)
    # share one NATS without seeing each other.
    stream_prefix: str = "CHIPS"
    subject_prefix: str = "chips"
    # Workspaces are spread over this many append partitions; each is owned by one
    # eventlog replica at a time. Gateways and eventlogs must agree on it.
    append_partitions: int = 8
    # Copies JetStream keeps of each stream: 1 on one machine, 3 on a three-node cluster
    # (deploy/k8s), so one node's loss stops nothing (docs/adr/0041).
    stream_replicas: int = 1
    # Postgres's synchronous_commit for every connection, stated rather than left to the
    # server's default: "on" means an ack is given only once the commit is on disk
    # (docs/adr/0041). An empty value leaves the server's setting.
    pg_synchronous_commit: str = "on"

    operator_secret: str = DEV_OPERATOR_SECRET
    signing_key: str = DEV_SIGNING_KEY

    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str = ""

    # docs/product/websocket.md, Getting on / Staying alive: all four numbers are configuration.
    ticket_ttl_seconds: int = 30
    ws_ping_interval_seconds: float = 20.0
    ws_silence_timeout_seconds: float = 60.0
    ws_max_queued_frames: int = 1000
    replay_batch_size: int = 500
    # A turn nothing was heard from this long is not counted as working (docs/product/websocket.md:
    # ten minutes): the referee's room.working / room.idle, and a message's working_turns.
    turn_silent_seconds: float = 600.0
    # A notification not read in the app this long after it was made is mailed, for a
    # person whose email preference is "delayed" with no delay of their own (docs/adr/0132;
    # the notifier mails, the gateway answers the preference).
    notify_email_delay_seconds: float = Field(default=600.0, ge=0)

    append_timeout_seconds: float = 10.0

    # A consumer of the log (projector, search, referee, attachments, notifier) whose fold
    # fails on one event tries that workspace again after a delay that starts here and
    # doubles with each delivery, up to the max; the event is set aside on the dead-letter
    # stream once it has failed this many deliveries or this long (docs/adr/0148).
    consumer_max_attempts: int = Field(default=10, ge=1, le=19)
    consumer_give_up_seconds: float = Field(default=300.0, gt=0)
    consumer_first_delay_seconds: float = Field(default=0.1, gt=0)
    consumer_max_delay_seconds: float = Field(default=10.0, gt=0)
    # How long the projector holds posts, and search every event, to fold them together
    # rather than one by one; a read waiting for one asks for its workspace at once
    # (docs/adr/0168).
    consumer_hold_seconds: float = Field(default=0.25, gt=0, le=60)
    # The test hook: every event in this space fails a consumer's fold, as a poison event
    # would (tests/e2e/test_consumer_poison.py). Empty: off; never set it in a deployment.
    test_fold_fails_in: str = ""

    log_level: str = "INFO"

    @model_validator(mode="after")
    def _refuse_dev_secrets(self) -> Settings:
        if self.env == "production":
            if self.operator_secret == DEV_OPERATOR_SECRET:
                raise ValueError("CHIPS_OPERATOR_SECRET must be set in production")
            if self.signing_key == DEV_SIGNING_KEY:
                raise ValueError("CHIPS_SIGNING_KEY must be set in production")
        return self

    @property
    def gateway_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"
