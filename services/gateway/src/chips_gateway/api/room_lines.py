"""What a room's lines carry beside their words, read from the log for ``room_lines``.

The events a person's room draws between its lines, and what Chips filled in on each post
(its files, who it was for, what the referee said, what was heard in a voice note), so a
line read back is the line drawn live (docs/adr/0100, docs/adr/0141).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, select

from chips_common.db import tables as t
from chips_common.events import JsonObject, LoggedJson, canonical
from chips_gateway import rows as typed
from chips_gateway.files import FileLinks


def feedback_item(f: Any) -> typed.FeedbackItem:
    """A feedback row, as a line lists it: what is not set is left out."""
    item: typed.FeedbackItem = {"from": f["from_id"], "kind": f["kind"]}
    if f["emoji"] is not None:
        item["emoji"] = f["emoji"]
    if f["note"] is not None:
        item["note"] = f["note"]
    if f["reasons"] is not None:
        item["reasons"] = f["reasons"]
    return item


def line_of(
    row: Any,
    feedback: list[typed.FeedbackItem],
    said: typed.Said | None,
    links: FileLinks,
    credential_id: str,
    now: float,
) -> typed.Line:
    """A message row as the room shows it, with what Chips filled in on its post."""
    line: typed.Line = {
        "id": row["id"],
        "seq": row["seq"],
        "kind": row["kind"],
        "author_id": row["author_id"],
        "text": row["text"],
        "reply_to": row["reply_to"],
        "ts": row["ts"].isoformat(),
        "edited": row["edited"],
        "deleted": row["deleted"],
        "pinned": row["pinned"],
        "feedback": feedback,
    }
    if row["card"] is not None:
        line["card"] = row["card"]
    if said:
        fill_in(line, said, links, credential_id, now)
    # A harness's reply said on its run (docs/product/jacobian-channel.md, on the run).
    if row["run_id"] is not None:
        line["run_id"] = row["run_id"]
    # The agents whose turns heard it while working (message.heard).
    if row["heard_by"]:
        line["heard_by"] = row["heard_by"]
    return line


# The events a person's room draws beside its lines: agents coming and going, asks of a
# harness for an agent, the room paused or let carry on, spend warnings and ceilings, and
# who is working (docs/adr/0100).
DRAWN_BESIDE = (
    "agent.attached",
    "agent.released",
    "agent.fork",
    "agent.asked",
    "exchange.set",
    "budget.warning",
    "space.spend_ceiling_set",
    "room.working",
    "room.idle",
)


async def room_events(
    conn: Any, workspace_id: str, space_id: str, start: int, end: int
) -> list[LoggedJson]:
    """The room's events of the kinds in :data:`DRAWN_BESIDE` with ``start <= seq < end``,
    oldest first: the newest 500 of them, since what stands now matters most."""
    e = t.events.c
    rows = await conn.execute(
        select(e.body)
        .where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id == space_id,
                e.seq >= start,
                e.seq < end,
                e.type.in_(DRAWN_BESIDE),
            )
        )
        .order_by(e.seq.desc())
        .limit(500)
    )
    return [canonical(row.body) for row in reversed(rows.all())]


async def posted_with(conn: Any, workspace_id: str, seqs: list[int]) -> dict[int, typed.Said]:
    """What Chips filled in on each of these posts: the files it carries, in their order,
    and who it was for (``addressed_to``).

    Read from the logged events, so a line reads back as it was drawn live; a line taken
    back is not asked for (its files go with it).
    """
    if not seqs:
        return {}
    e = t.events.c
    found = await conn.execute(
        select(
            e.seq,
            e.body["attachments"].label("attachments"),
            e.body["addressed_to"].label("addressed_to"),
            e.body["held"].label("held"),
            e.body["held_for"].label("held_for"),
            e.body["held_since"].label("held_since"),
            e.body["exchange"].label("exchange"),
            e.space_id,
        ).where(and_(e.workspace_id == workspace_id, e.seq.in_(seqs), e.type == "message.post"))
    )
    posted: dict[int, typed.Said] = {}
    rows = list(found)
    heard = await heard_in(conn, workspace_id, rows)
    for r in rows:
        said: typed.Said = {}
        if r.attachments:
            said["attachments"] = [
                {**a, "heard": heard[a["attachment_id"]]} if a["attachment_id"] in heard else a
                for a in r.attachments
            ]
        if isinstance(r.addressed_to, list):
            said["addressed_to"] = r.addressed_to
        # What the referee said of it (ADR 0083), and words a free agent said while in no
        # room (ADR 0071), so a held line reads back as it was drawn live.
        if r.held is True:
            said["held"] = True
            if isinstance(r.held_for, list):
                said["held_for"] = r.held_for
        if isinstance(r.exchange, dict):
            said["exchange"] = r.exchange
        if isinstance(r.held_since, str):
            said["held_since"] = r.held_since
        if said:
            posted[int(r.seq)] = said
    return posted


async def heard_in(conn: Any, workspace_id: str, rows: list[Any]) -> dict[str, JsonObject]:
    """What was heard in the voice notes these posts carry, by attachment (ADR 0137):
    ``attachment.transcribed`` logged after them in their rooms."""
    notes = {
        a["attachment_id"]: r
        for r in rows
        for a in r.attachments or ()
        if a.get("kind") == "voice_note"
    }
    if not notes:
        return {}
    e = t.events.c
    found = await conn.execute(
        select(e.body).where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id.in_(sorted({r.space_id for r in notes.values()})),
                e.seq > min(r.seq for r in notes.values()),
                e.type == "attachment.transcribed",
                e.body["attachment_id"].astext.in_(sorted(notes)),
            )
        )
    )
    return {
        b["attachment_id"]: {k: b[k] for k in ("outcome", "transcript", "note", "engine") if k in b}
        for (b,) in found
    }


def fill_in(
    line: typed.Line, said: typed.Said, links: FileLinks, credential_id: str, now: float
) -> None:
    """A line's files, each linked for the caller, and who it was for."""
    if "attachments" in said:
        line["attachments"] = [links.link(a, credential_id, now) for a in said["attachments"]]
    if "addressed_to" in said:
        line["addressed_to"] = said["addressed_to"]
    if "held" in said:
        line["held"] = said["held"]
    if "held_for" in said:
        line["held_for"] = said["held_for"]
    if "held_since" in said:
        line["held_since"] = said["held_since"]
    if "exchange" in said:
        line["exchange"] = said["exchange"]
