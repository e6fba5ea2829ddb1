"""What the search service does with committed events.

Its own issue is still to come; for now it keeps up with the stream (so its consumer
never holds the stream back) and does nothing more.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.service.consumer import Handler

log = logging.getLogger(__name__)


def build_handler(engine: AsyncEngine) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        log.debug("search saw %s up to seq %d", workspace_id, seq)

    return handle
