"""Chips for harness authors: an asyncio client for ``/v1/ws`` and the HTTP API.

::

    from chips_sdk import Client

    client = Client()  # CHIPS_URL and CHIPS_HARNESS_TOKEN from the environment

    @client.on("message.new")
    async def answer(message):
        await client.reply(message, f"You said: {message['text']}")

    asyncio.run(client.run_forever())

docs/harness-guide.md walks from nothing to a harness that reports runs and asks approvals.
"""

from chips_sdk.client import Client
from chips_sdk.errors import (
    ChipsError,
    ConnectionClosed,
    Forbidden,
    IdempotencyKeyReused,
    InvalidEvent,
    InvalidRequest,
    NotFound,
    Unauthorized,
    Unavailable,
)
from chips_sdk.frames import Ack, Context, Hello, MessageNew, MessageOverheard, Room
from chips_sdk.http import Http
from chips_sdk.render import note_without_rules, render_context, render_room_note
from chips_sdk.runs import Run, RunFailed, Step
from chips_sdk.settings import SettingError, gateway_urls, harness_token

__all__ = [
    "Ack",
    "ChipsError",
    "Client",
    "ConnectionClosed",
    "Context",
    "Forbidden",
    "Hello",
    "Http",
    "IdempotencyKeyReused",
    "InvalidEvent",
    "InvalidRequest",
    "MessageNew",
    "MessageOverheard",
    "NotFound",
    "Room",
    "Run",
    "RunFailed",
    "SettingError",
    "Step",
    "Unauthorized",
    "Unavailable",
    "gateway_urls",
    "harness_token",
    "note_without_rules",
    "render_context",
    "render_room_note",
]
