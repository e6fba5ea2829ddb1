"""Echo: answers every message that is for it. Needs CHIPS_URL and CHIPS_HARNESS_TOKEN."""

import asyncio
import logging

from chips_sdk import Client

logging.basicConfig(level=logging.INFO)
client = Client(name="echo")


@client.on("message.new")
async def echo(message):
    await client.reply(message, f"You said: {message['text']}")


asyncio.run(client.run_forever())
