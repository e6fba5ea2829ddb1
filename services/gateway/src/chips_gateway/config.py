"""Gateway settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chips_common.config import Settings
from chips_common.ids import new_id


class GatewaySettings(Settings):
    port: int = 8080
    # Names this replica's reply subject; unique per process unless set.
    gateway_id: str = ""
    # How often a workspace feed asks Postgres for a head it has not heard of (a lost
    # or delayed JetStream message at the tail of the stream, docs/architecture/design.md §2).
    feed_tail_check_seconds: float = 1.0
    read_your_writes_timeout_seconds: float = 5.0
    # How long this replica may remember who a token is without asking Postgres; every
    # change to a credential or a participant makes it forget at once (docs/adr/0169).
    # 0: ask on every request.
    principal_cache_seconds: float = Field(default=30.0, ge=0.0, le=3600.0)
    # Where uploads and fetches are passed on to (docs/adr/0043).
    attachments_url: str = "http://127.0.0.1:8093"

    # Size at the edge (docs/architecture/design.md §2): one event, one HTTP body, one socket frame.
    # The largest legal event (32,000 characters of text, or a card's lines) fits in
    # max_event_bytes; a frame or body may be three times that, so that JSON escapes pass
    # and an event somewhat over the limit is told too_large rather than cut off. All
    # stay well under NATS's 1 MB max payload, so nothing oversized reaches the eventlog.
    max_event_bytes: int = 256 * 1024
    max_body_bytes: int = 768 * 1024
    ws_max_frame_bytes: int = 768 * 1024

    # Write rate limits (token buckets): per socket in this process, and per credential in
    # Redis, so the latter holds across gateways. ``*_rate`` is writes per second,
    # ``*_burst`` what may be sent at once. A socket that keeps writing after being told
    # rate_limited is closed after ``rate_limit_strikes`` more refusals. The defaults are
    # well above what a person or a harness writes (a harness's busiest turns log a few
    # events a second; a reconnect resends a few dozen at once) and well below what one
    # machine's log can take, so that one client can never take it all (docs/adr/0065).
    socket_write_rate: float = 20.0
    socket_write_burst: int = 100
    credential_write_rate: float = 40.0
    credential_write_burst: int = 200
    rate_limit_strikes: int = 50
    # Of a socket's writes, how many go to the eventlog at once; past them its writes go
    # at ``socket_write_rate``, so that a flood's burst is still mostly queued at the
    # gateway when its refusals close it, and what is queued then never reaches the log
    # (docs/adr/0155). A client writing within its rate never waits on it.
    socket_log_burst: int = 16
    # How long the credential of a socket closed for writing through its refusals (4429)
    # gets no write and no new socket: a client that ignored fifty retry_after is not let
    # straight back in (docs/adr/0065).
    rate_limit_penalty_seconds: float = 30.0
    # Writes of one socket sent to the eventlog and not answered yet. Small, so that one
    # socket's writes are never more than a few in anybody's way in the log's queue;
    # the rest wait in the socket's own queue at the gateway (docs/adr/0065). Eight
    # still carry a few hundred writes a second for one socket.
    ws_max_inflight_writes: int = 8
    # Writes read from one socket and waiting in its queue; past this many the gateway
    # stops reading the socket (its TCP window fills) until the log has answered some.
    # Until then the socket is read on, its pongs with it, so a client with many writes
    # queued is not taken for a silent one (a rate limit refuses a flood long before).
    ws_max_queued_writes: int = 1000
    # permessage-deflate on /v1/ws, when a client offers it (browsers do). Off by default:
    # it holds a compressor and a decompressor per socket (about 40 KB) and compresses
    # every event once per socket, for frames of a few hundred bytes (docs/adr/0149).
    ws_compression: bool = False

    # Browsers' cross-origin access: origins (scheme://host[:port], comma separated) that
    # may open /v1/ws and call the HTTP API. The gateway's own origin is always allowed (the
    # people's app is served from it); a socket with no Origin (not a browser) is too.
    allowed_origins: str = ""

    def origins(self) -> list[str]:
        return [o.strip().rstrip("/") for o in self.allowed_origins.split(",") if o.strip()]

    # How long GET /v1/search waits for the index to fold in the seq it answers as of
    # (after_seq, or the head when the search arrived) before answering as of less.
    search_wait_seconds: float = 5.0

    # Where the built people's app is (index.html and assets/); empty: web/dist of this
    # checkout (docs/adr/0033).
    web_dir: str = ""

    # Restarts (docs/adr/0080): how long a harness asked to restart reads "Restarting"
    # without a word from it (docs/product/websocket.md: three minutes), and how long a harness's
    # socket counts as open unless its gateway renews it (a third of it at a time).
    restart_wait_seconds: float = 180.0
    presence_ttl_seconds: float = 30.0

    # Sign-in with the team's identity provider (OpenID Connect, docs/adr/0135); off while
    # oidc_issuer is empty. People sign in to the workspace oidc_workspace names (its id).
    # oidc_allowed_domains (comma separated) limits the verified emails taken; empty takes
    # any. oidc_new_people: "invite" (only an invited email, or a person already here) or
    # "member" (anybody of the allowed domains comes in as a member).
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    oidc_workspace: str = ""
    oidc_allowed_domains: str = ""
    oidc_new_people: Literal["invite", "member"] = "invite"
    oidc_button: str = "Sign in with your team's account"

    def replica_id(self) -> str:
        if not self.gateway_id:
            self.gateway_id = new_id("gw").lower()
        return self.gateway_id
