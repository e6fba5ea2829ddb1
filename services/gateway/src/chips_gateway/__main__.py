"""``python -m chips_gateway``: serve the HTTP API and /v1/ws with uvicorn."""

from __future__ import annotations

import uvicorn

from chips_common.otel import setup_tracing
from chips_common.service.logs import setup_logging
from chips_gateway.app import build_app
from chips_gateway.config import GatewaySettings
from chips_gateway.intake import Intake


def main() -> None:
    settings = GatewaySettings()
    setup_logging("gateway", settings.log_level)
    provider = setup_tracing("gateway", settings.replica_id())
    # docs/product/websocket.md, Staying alive: a ping every interval; a socket that has not
    # answered for the silence timeout is closed (the pong wait is what remains of it).
    ping_timeout = max(settings.ws_silence_timeout_seconds - settings.ws_ping_interval_seconds, 1.0)
    uvicorn.run(
        build_app(settings),
        host=settings.host,
        port=settings.port,
        # uvicorn's sans-I/O protocol, reading a socket no faster than it is served.
        ws=Intake,
        ws_per_message_deflate=settings.ws_compression,
        ws_ping_interval=settings.ws_ping_interval_seconds,
        ws_ping_timeout=ping_timeout,
        # A frame past this is refused by the socket library as its header is read (close
        # 1009), before the gateway reads or parses it.
        ws_max_size=settings.ws_max_frame_bytes,
        log_config=None,
        access_log=False,
    )
    provider.shutdown()


if __name__ == "__main__":
    main()
