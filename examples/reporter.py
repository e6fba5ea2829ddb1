"""A harness that reports its work: a run with steps, an approval, a question, and usage.

For each message that is for it, it starts a run, reads the room (a step), asks a person
to approve writing a summary, asks which length they want, reports what it spent, and
answers. A denial ends the run well, with nothing written. Needs CHIPS_URL and
CHIPS_HARNESS_TOKEN.
"""

import asyncio
import logging

from chips_sdk import Client, note_without_rules, render_context

logging.basicConfig(level=logging.INFO)
client = Client(name="reporter")


@client.on("message.new")
async def work(message):
    async with client.report_run(message, goal=f"Summarise: {message['text']}") as run:
        async with run.step("Read the room") as step:
            prompt = "\n\n".join(
                [
                    note_without_rules(message.get("room"), client.participant_id),
                    render_context(message.get("context")),
                    message["text"],
                ]
            )
            step.summary = f"{len(prompt)} characters for the model"
        await run.status("Waiting for a person", phase="waiting")
        decision = await run.ask_approval(
            "files.write", preview="Write summary.txt in the shared folder", risk="low"
        )
        if decision["decision"] == "deny":
            await run.reply("Understood: I wrote nothing.")
            return
        answer = await run.ask_question(
            "How long should the summary be?", [("One line", "short"), ("A page", "long")]
        )
        length = answer.get("value") or answer.get("text")
        await run.usage(tokens_in=len(prompt), tokens_out=42, cost_usd=0.002, model="example-1")
        await run.reply(f"Done: summary.txt is written, {length}.")


asyncio.run(client.run_forever())
