"""An agent's face, end to end (docs/adr/0153; docs/product/websocket.md, Agents: "An agent
being made, renamed, archived or given a face (agent.registered, agent.updated) is sent to
its own harness, to the people who are told who everybody in the workspace is").

A harness registers an agent with an emoji for its face through the SDK, then registers it
again with a picture it uploaded: each is logged, heard live on a person's socket, and
read back over HTTP (the directory, the registration's answer, the room sheet, the
harness's hello), the picture by a URL signed for the reader that any person told of the
agent may fetch. A face that is neither one emoji nor the harness's own picture is
refused with a code and a sentence.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

import pytest
from PIL import Image

from chips_sdk import ChipsError
from chips_sdk.http import Http
from tests.e2e.client import Api, Identity, Socket

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def picture() -> bytes:
    out = BytesIO()
    Image.new("RGB", (48, 48), (230, 120, 30)).save(out, format="PNG")
    return out.getvalue()


def about(agent_id: str, kind: str) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        event = frame.get("event") or {}
        return frame["frame"] == "event" and (event.get("type"), event.get("agent_id")) == (
            kind,
            agent_id,
        )

    return match


async def directory_entry(api: Api, who: Identity, agent_id: str) -> dict[str, Any]:
    r = await api.http.get("/v1/participants", headers=api.auth(who))
    assert r.status_code == 200, r.text
    return next(p for p in r.json()["participants"] if p["participant_id"] == agent_id)


async def test_an_agent_s_face_an_emoji_then_a_picture_read_back_and_heard_live(
    api: Api,
) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    declared = {"harness_id": scout.participant_id, "capabilities": ["agents"]}
    await api.append(scout, {"type": "harness.declared", **declared})
    arjun = await Socket.open(api.base_url, owner)
    await arjun.subscribe(owner.workspace_id)
    await arjun.attached()
    async with Http(api.base_url, scout.token) as sdk:
        # Registered with an emoji: logged, heard, read back.
        fox = await sdk.register_agent(scout.participant_id, "fox", "Fox", face="🦊")
        assert fox["face"] == "🦊" and fox["face_url"] is None
        heard = (await arjun.wait_for(about(fox["id"], "agent.registered")))["event"]
        assert heard["face"] == "🦊"
        entry = await directory_entry(api, maya, fox["id"])
        assert entry["face"] == "🦊" and "face_url" not in entry

        # Registered again with a picture it uploaded: agent.updated with the new face.
        upload = await sdk.upload(picture(), name="fox.png")
        again = await sdk.register_agent(
            scout.participant_id, "fox", "Fox", face=upload["upload_id"]
        )
        assert again["id"] == fox["id"] and again["face"] == upload["upload_id"]
        heard = (await arjun.wait_for(about(fox["id"], "agent.updated")))["event"]
        assert heard["face"] == upload["upload_id"] and "name" not in heard

        # Read back, with a URL signed for the reader that any person told of it fetches.
        entry = await directory_entry(api, maya, fox["id"])
        assert entry["face"] == upload["upload_id"]
        drawn = await api.http.get(entry["face_url"].removeprefix(api.base_url))
        assert drawn.status_code == 200, drawn.text
        assert drawn.headers["content-type"] == "image/png"
        Image.open(BytesIO(drawn.content)).verify()
        kept = await sdk.register_agent(scout.participant_id, "fox", "Fox")
        assert kept["face"] == upload["upload_id"]  # no face given keeps the one it has

    # In a room: the sheet's members carry it; the harness's hello lists it.
    room = await api.open_space(owner, "Den", [maya.participant_id])
    added = {"type": "membership.added", "space_id": room, "participant_id": fox["id"]}
    seq = await api.append(owner, added)
    sheet = await api.sheet(maya, room, after_seq=seq)
    member = next(m for m in sheet["members"] if m["participant_id"] == fox["id"])
    assert member["face"] == upload["upload_id"] and member["face_url"].startswith("http")
    socket = await Socket.open(api.base_url, scout)
    hello = socket.hello_frame
    assert hello is not None and hello["frame"] == "hello", hello
    faces = {a["id"]: a.get("face") for a in hello["agents"]}
    assert faces[fox["id"]] == upload["upload_id"]
    await socket.close()
    await arjun.close()


async def test_a_face_that_is_no_emoji_nor_the_harness_s_picture_is_refused(api: Api) -> None:
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    async with Http(api.base_url, scout.token) as sdk, Http(api.base_url, owner.token) as hers:
        pdf = (await sdk.upload(PDF, name="face.pdf"))["upload_id"]
        theirs = (await hers.upload(picture(), name="me.png"))["upload_id"]
        for face, status, code, words in [
            ("OC", 422, "invalid_face", "a face is one emoji"),
            ("🦊🐻", 422, "invalid_face", "a face is one emoji"),
            (pdf, 422, "invalid_face", "application/pdf"),
            (theirs, 403, "forbidden", "this harness uploaded itself"),
            ("att_none", 404, "not_found", "POST /v1/uploads"),
        ]:
            with pytest.raises(ChipsError) as refused:
                await sdk.register_agent(scout.participant_id, "oc", "Oc", face=face)
            e = refused.value
            assert (e.status, e.code, e.field) == (status, code, "face"), (face, e)
            assert words in e.message
    # Nothing was registered by a refusal.
    r = await api.http.get("/v1/participants", headers=api.auth(owner))
    assert [p for p in r.json()["participants"] if p.get("key") == "oc"] == []
