"""What the reader may do in a room and on its waiting cards: the room sheet's ``may``.

The facts come from the read models; the answer from the rules the door decides each act
by (``chips_common.rules.may``), asked for the reader, so an app that offers what ``may``
says offers exactly what the door would take (docs/adr/0142).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import projector_tables as pt
from chips_common.rules import may
from chips_common.rules.deciders import approval_deciders
from chips_gateway.auth import Principal
from chips_gateway.rows import CardMay, RoomMay

# The most waiting cards one sheet answers for (the newest).
CARDS = 200


def main_of(row: Any) -> bool:
    return row.kind == "agent" and bool((row.agent or {}).get("main"))


async def room_may(
    conn: AsyncConnection, caller: Principal, space: Any, room_id: str, members: Sequence[Any]
) -> RoomMay:
    """The sheet's ``may`` for ``caller``: the room's acts, who they may take out (of the
    ``members`` the sheet shows) and add, and each waiting card's state for them."""
    ws_id = caller.workspace_id
    p, m = pt.rm_participants, pt.rm_members
    people = (
        await conn.execute(
            select(p.c.id, p.c.kind, p.c.name, p.c.role, p.c.owner_id, p.c.agent).where(
                p.c.workspace_id == ws_id
            )
        )
    ).all()
    by_id = {row.id: row for row in people}
    here = {
        row.participant_id: row.standing
        for row in await conn.execute(
            select(m.c.participant_id, m.c.standing).where(m.c.space_id == room_id)
        )
    }
    me = by_id.get(caller.participant_id)
    role = me.role if me is not None else None
    room = may.Room(space["kind"], space["state"], space["locked"], space["home_of"], space["key"])
    home = space["home_of"]
    main_room = home is not None and any(main_of(row) and row.owner_id == home for row in people)
    shown = [
        may.Member(
            row.participant_id,
            row.standing,
            row.name or "",
            main_of(by_id[row.participant_id]) if row.participant_id in by_id else False,
        )
        for row in members
    ]
    others = [
        may.Candidate(
            row.id,
            row.kind,
            row.name,
            active=(row.agent or {}).get("state", "active") == "active",
            main=main_of(row),
            main_home_here=main_of(row) and home is not None and row.owner_id == home,
        )
        for row in people
        if row.id not in here and row.kind in ("person", "harness", "agent")
    ]
    standing = here.get(caller.participant_id) if caller.kind == "person" else None
    acts = may.room_acts(room, caller.participant_id, standing, role, shown, others, main_room)
    return {
        "rename": acts.rename,
        "archive": acts.archive,
        "unarchive": acts.unarchive,
        "lock": acts.lock,
        "unlock": acts.unlock,
        "delete": acts.delete,
        "pause": acts.pause,
        "pin": acts.pin,
        "take_back": acts.take_back,
        "remove": list(acts.remove),
        "add": list(acts.add),
        "cards": await cards_may(conn, caller, space["id"], standing is not None, by_id),
    }


async def cards_may(
    conn: AsyncConnection,
    caller: Principal,
    space_id: str,
    in_room: bool,
    by_id: Mapping[str, Row[*tuple[Any, ...]]],
) -> list[CardMay]:
    """Each card of the room still waiting for an answer, newest first: where it stands
    for the caller and who decides it."""
    c, r = pt.rm_cards, pt.rm_runs
    rows = (
        await conn.execute(
            select(c.c.kind, c.c.id, c.c.harness_id, c.c.body, c.c.expires_at, r.c.state)
            .select_from(
                c.outerjoin(r, and_(r.c.workspace_id == c.c.workspace_id, r.c.id == c.c.run_id))
            )
            .where(
                and_(
                    c.c.workspace_id == caller.workspace_id,
                    c.c.space_id == space_id,
                    c.c.answered_seq.is_(None),
                )
            )
            .order_by(c.c.asked_seq.desc())
            .limit(CARDS)
        )
    ).all()
    now = datetime.now(UTC)
    out: list[CardMay] = []
    for row in rows:
        harness = by_id.get(row.harness_id)
        owner = harness.owner_id if harness is not None else None
        named = (row.body or {}).get("answerers")
        answerers = [a for a in named if isinstance(a, str)] if isinstance(named, list) else []
        card = may.Card(row.kind, False, row.expires_at, row.state, owner, answerers)
        out.append(
            {
                "kind": row.kind,
                "id": row.id,
                "state": may.card_state(card, caller.participant_id, in_room, now),
                "deciders": approval_deciders(owner, answerers) if row.kind == "approval" else [],
            }
        )
    return out
