"""The context lines that are not words: joined, left, renamed, archived and unarchived.

docs/product/websocket.md, What you're told with a question: a line is said, "joined and left",
"renamed: … the room's new title", "archived and unarchived"; each line has its seq, when
(at) and who (from: id, kind, name), and "a live delivery, a replay after a reconnect and
a restart on either side hand over the same lines". The room's context over HTTP answers
"in the same shape".
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api
from tests.e2e.test_messages import heard, post
from tests.e2e.test_turn_news import live_harness, replayed


def who(identity: Any, kind: str, name: str) -> dict[str, str]:
    return {"id": identity.participant_id, "kind": kind, "name": name}


async def test_room_changes_are_lines_of_the_spec_s_shape_live_replayed_and_read(
    stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    bot = await live_harness(stack, scout)
    try:
        spoke = await post(api, scout, room, "Ready.")
        seqs = []
        for change in (
            api.add_to_room(owner, room, maya.participant_id),
            api.remove_from_room(owner, room, maya.participant_id),
            api.change_room(owner, room, title="Planning Q3"),
            api.change_room(owner, room, state="closed"),
            api.change_room(owner, room, state="open"),
        ):
            r = await change
            assert r.status_code == 200, r.text
            seqs.append(r.json()["seq"])
        # The unarchive's answer is the last event it logged: Scout's given agent coming
        # back after the room's space.updated (docs/adr/0154), which is the line's.
        (unarchived,) = [
            e["seq"]
            for e in await api.read(owner, since=seqs[3], space_id=room)
            if e["type"] == "space.updated" and e.get("state") == "open"
        ]
        assert unarchived < seqs[4]
        seqs[4] = unarchived
        asked = await post(api, owner, room, "@Scout where are we?")
        live = await heard(bot, asked)
    finally:
        await bot.close()
    arjun, maya_chen = who(owner, "person", "Arjun Rao"), who(maya, "person", "Maya Chen")
    lines = live["context"]["lines"]
    assert [{k: v for k, v in line.items() if k != "at"} for line in lines] == [
        {"seq": seqs[0], "kind": "joined", "from": maya_chen},
        {"seq": seqs[1], "kind": "left", "from": maya_chen},
        {"seq": seqs[2], "kind": "renamed", "from": arjun, "title": "Planning Q3"},
        {"seq": seqs[3], "kind": "archived", "from": arjun},
        {"seq": seqs[4], "kind": "unarchived", "from": arjun},
    ]
    assert all(line["at"].endswith("Z") for line in lines)
    assert live["context"]["since_seq"] == spoke
    # A harness that reconnects and catches up is handed the same lines.
    again = await replayed(stack, scout, spoke, asked)
    assert again["context"] == live["context"]
    # Read over HTTP, the room's context holds them in the same shape.
    r = await api.http.get(
        f"/v1/spaces/{room}/context", params={"before": asked}, headers=api.auth(scout)
    )
    assert r.status_code == 200, r.text
    assert [line for line in r.json()["lines"] if line["seq"] in seqs] == lines
