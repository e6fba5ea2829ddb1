"""Attachments and the room's files, end to end against the real S3 endpoint.

docs/product/messages.md, Attachments: "the client asks for an upload slot and sends the bytes;
the server sniffs what they are, strips a photo's metadata — location included — unless
the person keeps it, makes a thumbnail, and keeps the bytes once by their digest. ... A
harness gets each attachment as a signed URL bound to its own token for ten minutes, and
every fetch it makes is an event in the room and in the audit." docs/product/websocket.md, The
room's files; docs/product/spaces.md, Deleting one ("its files ... go").
"""

from __future__ import annotations

import asyncio
import hashlib
import struct
import time
import zlib
from io import BytesIO
from typing import Any

import boto3
import httpx
import pytest
from PIL import Image

from chips_common.config import DEV_SIGNING_KEY
from chips_common.rules.signed_urls import signed_path, url_key
from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket, key

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def bucket(stack: Stack) -> Any:
    s3 = boto3.client(
        "s3",
        endpoint_url=stack.env["CHIPS_S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="chips-dev",
        aws_secret_access_key="chips-dev",
    )
    return s3, stack.env["CHIPS_S3_BUCKET"]


def objects(stack: Stack, prefix: str) -> list[str]:
    s3, name = bucket(stack)
    found = s3.list_objects_v2(Bucket=name, Prefix=prefix)
    return [o["Key"] for o in found.get("Contents", [])]


async def upload(
    api: Api, who: Identity, data: bytes, name: str, content_type: str = "", **params: Any
) -> httpx.Response:
    headers = api.auth(who)
    if content_type:
        headers["Content-Type"] = content_type
    return await api.http.post(
        "/v1/uploads", params={"name": name, **params}, content=data, headers=headers
    )


async def uploaded(api: Api, who: Identity, data: bytes, name: str, **params: Any) -> str:
    r = await upload(api, who, data, name, **params)
    assert r.status_code == 201, r.text
    return str(r.json()["upload_id"])


def post(
    space_id: str, upload_ids: list[str], text: str | None = None, **more: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "message.post", "space_id": space_id, "upload_ids": upload_ids}
    if text:
        event["text"] = text
    return {**event, **more}


def gps_jpeg(colour: tuple[int, int, int] = (30, 120, 200)) -> bytes:
    im = Image.new("RGB", (64, 32), colour)
    exif = Image.Exif()
    exif[0x0112] = 6  # turned: stored sideways, shown upright
    exif[0x010F] = "Canon"
    exif[0x927C] = b"maker notes"
    exif[0x8825] = {1: "N", 2: (51.0, 30.0, 12.0), 3: "W", 4: (0.0, 7.0, 40.0)}
    out = BytesIO()
    im.save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def huge_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    z = zlib.compressobj(9)
    row = b"\x00" * (width + 1)
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


async def harness_room(api: Api, stack: Stack) -> tuple[Identity, Identity, str, Socket]:
    """A workspace, its owner, a harness with its home room, and the harness's socket."""
    owner = await api.create_workspace()
    harness, home = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_a, harness)
    await sock.subscribe(owner.workspace_id)
    return owner, harness, home, sock


async def delivered(sock: Socket, seq: int, kind: str = "message.new") -> dict[str, Any]:
    frame = await sock.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["seq"] == seq and f["event"]["type"] == kind
    )
    return dict(frame["event"])


async def test_a_harness_fetches_a_posted_file_by_its_signed_url_and_the_fetch_is_logged(
    stack: Stack, api: Api
) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    upload_id = await uploaded(api, owner, PDF, "po.pdf")
    seq = await api.append(owner, post(home, [upload_id], "The PO"))
    message = await delivered(sock, seq)
    [attachment] = message["attachments"]
    assert attachment["attachment_id"] == upload_id
    assert attachment["mime_type"] == "application/pdf" and attachment["version"] == 1
    assert attachment["sha256"] == hashlib.sha256(PDF).hexdigest()
    assert "tok=" in attachment["url"] and "sig=" in attachment["url"]
    async with httpx.AsyncClient() as http:
        got = await http.get(attachment["url"])
    assert got.status_code == 200 and got.content == PDF
    assert got.headers["content-disposition"].startswith("inline")
    assert got.headers["x-content-type-options"] == "nosniff"
    fetched = await sock.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "attachment.fetched"
    )
    event = fetched["event"]
    assert event["attachment_id"] == upload_id and event["space_id"] == home
    assert event["actor"] == {"kind": "harness", "id": harness.participant_id}
    assert event["message_id"] == message["message_id"]
    # The owner's own session fetches it too, with its token, and that is no harness's fetch.
    mine = await api.http.get(f"/v1/attachments/{upload_id}", headers=api.auth(owner))
    assert mine.status_code == 200 and mine.content == PDF
    await sock.close()


async def test_a_photo_s_location_and_metadata_are_stripped_unless_kept(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    r = await upload(api, owner, gps_jpeg(), "holiday.jpg")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["kind"] == "photo" and body["metadata_stripped"] is True
    assert (body["width"], body["height"]) == (32, 64)  # turned upright first
    back = await api.http.get(f"/v1/attachments/{body['upload_id']}", headers=api.auth(owner))
    assert back.status_code == 200
    with Image.open(BytesIO(back.content)) as im:
        assert dict(im.getexif()) == {}, "no EXIF, GPS or maker notes are left"
        assert "exif" not in im.info and im.size == (32, 64)
    thumb = await api.http.get(
        f"/v1/attachments/{body['upload_id']}/thumbnail", headers=api.auth(owner)
    )
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg"
    kept = await upload(api, owner, gps_jpeg(), "kept.jpg", keep_metadata="true")
    back = await api.http.get(
        f"/v1/attachments/{kept.json()['upload_id']}", headers=api.auth(owner)
    )
    with Image.open(BytesIO(back.content)) as im:
        assert 0x8825 in im.getexif(), "a person may keep a photo's location"


async def test_html_declared_as_a_png_is_served_as_a_download(stack: Stack, api: Api) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    page = b"<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>"
    r = await upload(api, owner, page, "cat.png", content_type="image/png")
    assert r.status_code == 201, r.text
    assert r.json()["mime_type"] == "text/html" and r.json()["kind"] == "file"
    seq = await api.append(owner, post(home, [r.json()["upload_id"]]))
    [attachment] = (await delivered(sock, seq))["attachments"]
    async with httpx.AsyncClient() as http:
        got = await http.get(attachment["url"])
    assert got.status_code == 200 and got.content == page
    assert got.headers["content-disposition"].startswith("attachment;")
    assert got.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in got.headers["content-security-policy"]
    assert got.headers["content-type"] != "image/png"
    await sock.close()


async def test_the_same_bytes_twice_are_stored_once(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    data = b"the same bytes, " + key("same").encode() * 100
    first = await upload(api, owner, data, "a.txt")
    second = await upload(api, owner, data, "b.txt")
    assert first.status_code == second.status_code == 201
    assert first.json()["upload_id"] != second.json()["upload_id"]
    assert first.json()["stored"] is True and second.json()["stored"] is False
    digest = hashlib.sha256(data).hexdigest()
    assert objects(stack, f"blobs/{digest}") == [f"blobs/{digest}"]


async def test_caps_refuse_a_file_by_what_its_bytes_are_with_the_spec_s_sentence(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    member = await api.add_person(owner, "Maya Chen")
    caps = {"type": "attachment.caps_set", "videos_bytes": 1_000_000}
    await api.refused(member, caps, "forbidden", "owner's or admin's")
    await api.append(owner, caps)
    ftyp = struct.pack(">I4s", 24, b"ftyp") + b"isom\x00\x00\x02\x00isomiso2"
    video = ftyp + b"\x00" * (1_500_000 - len(ftyp))
    r = await upload(api, owner, video, "notes.txt", content_type="text/plain")
    assert r.status_code == 413, r.text
    assert r.json() == {
        "code": "too_large",
        "message": "Videos here are capped at 1 MB, and this one is 1.5 MB.",
    }
    words = b"plain words " * 125_000  # 1.5 MB called a video, but it is a file
    r = await upload(api, owner, words, "clip.mp4", content_type="video/mp4")
    assert r.status_code == 201 and r.json()["kind"] == "file"
    caps_now = await api.http.get("/v1/uploads/caps", headers=api.auth(member))
    assert caps_now.json()["videos_bytes"] == 1_000_000


async def test_a_signed_url_with_any_byte_changed_is_refused(stack: Stack, api: Api) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    upload_id = await uploaded(api, owner, PDF, "po.pdf")
    seq = await api.append(owner, post(home, [upload_id]))
    [attachment] = (await delivered(sock, seq))["attachments"]
    url = httpx.URL(attachment["url"])
    target = url.raw_path.decode()
    base = f"{url.scheme}://{url.netloc.decode()}"
    async with httpx.AsyncClient(base_url=base) as http:
        assert (await http.get(target)).status_code == 200
        for i, ch in enumerate(target):
            if i < len("/v1/attachments/"):
                continue  # another route altogether
            other = "0" if ch != "0" else "1"
            mutated = target[:i] + other + target[i + 1 :]
            got = await http.get(mutated)
            assert got.status_code in (403, 404), f"{mutated} answered {got.status_code}"
            assert got.content != PDF
    await sock.close()


async def test_another_s_upload_another_room_s_file_and_a_left_member_are_refused(
    stack: Stack, api: Api
) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    maya = await api.add_person(owner, "Maya Chen")
    hers = await uploaded(api, maya, PDF + b"maya", "hers.pdf")
    before = await api.head(owner)
    await api.refused(owner, post(home, [hers]), "forbidden", "its sender's own uploads")
    mine = await uploaded(api, owner, PDF + b"mine", "mine.pdf")
    await api.append(owner, post(home, [mine]))
    await api.refused(owner, post(home, [mine]), "invalid_event", "posted already")
    # A room the harness is not in: its file is not the harness's to fetch.
    other = await api.open_space(owner, "Private", [maya.participant_id])
    private = await uploaded(api, owner, PDF + b"private", "private.pdf")
    await api.append(owner, post(other, [private]))
    got = await api.http.get(f"/v1/attachments/{private}", headers=api.auth(harness))
    assert got.status_code == 403 and got.content != PDF + b"private"
    # Nothing refused was logged.
    logged = [e for e in await api.read(owner, since=before) if e["type"] == "message.post"]
    assert [e["upload_ids"] for e in logged] == [[mine], [private]]
    # A harness taken out of the room has a URL it was given; it gets nothing with it.
    shared = await api.open_space(owner, "Shared", [harness.participant_id])
    seq = await api.append(owner, post(shared, [await uploaded(api, owner, PDF + b"s", "s.pdf")]))
    frame = await sock.wait_for(lambda f: f["frame"] == "event" and f["event"]["seq"] == seq)
    url = frame["event"]["attachments"][0]["url"]
    async with httpx.AsyncClient() as http:
        assert (await http.get(url)).status_code == 200
        await api.append(
            owner,
            {
                "type": "membership.removed",
                "space_id": shared,
                "participant_id": harness.participant_id,
            },
        )
        left = await http.get(url)
    assert left.status_code == 403 and b"%PDF" not in left.content
    await sock.close()


async def test_a_bomb_and_a_truncated_photo_are_refused_and_the_service_stays_up(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    bomb = huge_png(20_000, 20_000)
    assert len(bomb) < 2_000_000
    r = await upload(api, owner, bomb, "bomb.png")
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "image_too_large" and "20,000 × 20,000" in r.json()["message"]
    photo = gps_jpeg()
    r = await upload(api, owner, photo[: len(photo) // 2], "cut.jpg")
    assert r.status_code == 422 and r.json()["code"] == "unreadable_file", r.text
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{stack.url('attachments')}/readyz")).status_code == 200
    r = await upload(api, owner, photo, "whole.jpg")
    assert r.status_code == 201, r.text


async def test_a_post_made_from_an_older_version_is_stale_and_versions_are_listed(
    stack: Stack, api: Api
) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    maya = await api.add_person(owner, "Maya")
    room = await api.open_space(owner, "Alphabet", [maya.participant_id, harness.participant_id])
    v1 = await uploaded(api, owner, b"<html>A-E</html>", "ascii-alphabet.html")
    await api.append(owner, post(room, [v1], "A-E"))
    v2 = await uploaded(api, maya, b"<html>A-J</html>", "ascii-alphabet.html")
    await api.append(maya, post(room, [v2], "F-J are in.", replaces={v2: v1}))
    late = await uploaded(api, owner, b"<html>A-G</html>", "ascii-alphabet.html")
    r = await api.post_event(
        owner, {**post(room, [late], "mine", replaces={late: v1}), "idempotency_key": key()}
    )
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "stale_file"
    assert r.json()["message"] == "ascii-alphabet.html is now v2, by Maya. Fetch it and redo."
    # The same refusal on the socket is an error frame; bytes the same as v2's are not stale.
    same = await uploaded(api, owner, b"<html>A-J</html>", "ascii-alphabet.html")
    person = await Socket.open(stack.gateway_b, owner)
    k = await person.write(post(room, [late], "again", replaces={late: v1}))
    assert (await person.answer(k))["code"] == "stale_file"
    await api.append(owner, post(room, [same], "the same", replaces={same: v1}))
    # A harness's turn carries the room's files, current versions, each with its URL.
    seq = await api.append(owner, {"type": "message.post", "space_id": room, "text": "@Scout look"})
    turn = await delivered(sock, seq)
    [current] = turn["context"]["files"]
    assert (current["name"], current["version"], current["attachment_id"]) == (
        "ascii-alphabet.html",
        2,
        v2,
    )
    assert current["by"]["name"] == "Maya" and "sig=" in current["url"]
    listed = await api.http.get(f"/v1/spaces/{room}/files", headers=api.auth(harness))
    assert [(f["name"], f["version"]) for f in listed.json()["files"]] == [
        ("ascii-alphabet.html", 2)
    ]
    versions = await api.http.get(
        f"/v1/spaces/{room}/files",
        params={"name": "ascii-alphabet.html"},
        headers=api.auth(maya),
    )
    got = [(f["version"], f["attachment_id"], f.get("replaces")) for f in versions.json()["files"]]
    assert got == [(2, v2, v1), (1, v1, None)]  # the same bytes again are no new version
    strangers = await api.http.get(f"/v1/spaces/{home}/files", headers=api.auth(maya))
    assert strangers.status_code == 403
    await person.close()
    await sock.close()


async def test_taking_a_message_back_takes_its_files_from_view(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Room")
    upload_id = await uploaded(api, owner, PDF + b"back", "back.pdf")
    seq = await api.append(owner, post(room, [upload_id]))
    [said] = [e for e in await api.read(owner, since=seq - 1) if e["seq"] == seq]
    # The room's line reads back with its file, linked for the reader, as it was drawn live.
    [line] = [x for x in await api.lines(owner, room, after_seq=seq) if x["seq"] == seq]
    [attachment] = line["attachments"]
    assert attachment["attachment_id"] == upload_id and attachment["name"] == "back.pdf"
    assert line["addressed_to"] == []  # a room with no harness: for nobody to take a turn
    async with httpx.AsyncClient() as http:
        got = await http.get(attachment["url"])
    assert got.status_code == 200 and got.content == PDF + b"back"
    deleted = await api.append(
        owner, {"type": "message.deleted", "space_id": room, "message_id": said["message_id"]}
    )
    [line] = [x for x in await api.lines(owner, room, after_seq=deleted) if x["seq"] == seq]
    assert line["deleted"] is True and "attachments" not in line
    got = await api.http.get(f"/v1/attachments/{upload_id}", headers=api.auth(owner))
    assert got.status_code == 404
    listed = await api.http.get(f"/v1/spaces/{room}/files", headers=api.auth(owner))
    assert listed.json()["files"] == []


async def test_deleting_a_space_leaves_no_object_of_its_files_in_s3(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    doomed = await api.open_space(owner, "Doomed")
    keeper = await api.open_space(owner, "Keeper")
    only_here = gps_jpeg(colour=(7, 77, 177))  # no other test's photo: its bytes are its own
    shared = PDF + key("shared").encode()
    only_id = await uploaded(api, owner, only_here, "only.jpg")
    await api.append(owner, post(doomed, [only_id, await uploaded(api, owner, shared, "s.pdf")]))
    await api.append(owner, post(keeper, [await uploaded(api, owner, shared, "s.pdf")]))
    only_sha = (await api.http.get(f"/v1/spaces/{doomed}/files", headers=api.auth(owner))).json()[
        "files"
    ]
    digests = {f["name"]: f["sha256"] for f in only_sha}
    assert objects(stack, f"blobs/{digests['only.jpg']}")
    assert objects(stack, f"thumbs/{digests['only.jpg']}")
    await api.append(owner, {"type": "space.erased", "space_id": doomed})
    for _ in range(200):
        if not objects(stack, f"blobs/{digests['only.jpg']}"):
            break
        await asyncio.sleep(0.05)
    assert objects(stack, f"blobs/{digests['only.jpg']}") == []
    assert objects(stack, f"thumbs/{digests['only.jpg']}") == []
    # Bytes another room still holds stay for it.
    assert objects(stack, f"blobs/{digests['s.pdf']}") == [f"blobs/{digests['s.pdf']}"]
    gone = await api.http.get(f"/v1/attachments/{only_id}", headers=api.auth(owner))
    assert gone.status_code in (403, 404)


@pytest.mark.parametrize("size", [0])
async def test_an_empty_upload_is_refused_with_a_clear_error(
    stack: Stack, api: Api, size: int
) -> None:
    owner = await api.create_workspace()
    r = await upload(api, owner, b"" * size, "empty.txt")
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"
    r = await api.http.post("/v1/uploads", content=b"x")
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


async def test_a_card_s_file_fields_post_the_sender_s_own_uploads_once_into_its_room(
    stack: Stack, api: Api
) -> None:
    """A card naming files (an artifact's upload_id, a receipt's upload_ids, …) is posted as
    upload_ids are: only the sender's own uploads, once, into a room the sender is in; the
    door fills in attachments; a refusal logs nothing."""
    owner, harness, home, sock = await harness_room(api, stack)
    maya = await api.add_person(owner, "Maya Chen")
    csv = b"region,total\nnorth,12\nsouth,30\n"
    mine = await uploaded(api, harness, csv, "q3.csv")
    hers = await uploaded(api, owner, csv + b"owner", "q3.csv")

    def artifact(space_id: str, upload_id: str) -> dict[str, Any]:
        card = {"name": "q3.csv", "form": "table", "upload_id": upload_id}
        return {"type": "message.post", "space_id": space_id, "kind": "artifact", "artifact": card}

    def receipt(space_id: str, upload_ids: list[str]) -> dict[str, Any]:
        card = {"steps": [{"title": "Totalled Q3"}], "upload_ids": upload_ids}
        return {"type": "message.post", "space_id": space_id, "kind": "receipt", "receipt": card}

    before = await api.head(owner)
    # Another's upload, in either kind of field.
    refused = await api.refused(
        harness, artifact(home, hers), "forbidden", "its sender's own uploads"
    )
    assert refused.get("field") in (None, "artifact.upload_id")
    await api.refused(harness, receipt(home, [hers]), "forbidden", "its sender's own uploads")
    # A room the sender is not in: nothing is learnt of the upload there.
    elsewhere = await api.open_space(owner, "Private", [maya.participant_id])
    await api.refused(harness, artifact(elsewhere, mine), "forbidden", "")
    # The same upload twice in one card.
    await api.refused(harness, receipt(home, [mine, mine]), "invalid_event", "posted once")
    # Its own upload, into its room: the door fills in the message's attachments.
    seq = await api.append(harness, artifact(home, mine))
    [message] = [e for e in await api.read(owner, since=seq - 1, limit=1)]
    assert message["artifact"]["upload_id"] == mine
    [attachment] = message["attachments"]
    assert (attachment["attachment_id"], attachment["name"]) == (mine, "q3.csv")
    assert attachment["version"] == 1
    got = await api.http.get(f"/v1/attachments/{mine}", headers=api.auth(owner))
    assert got.status_code == 200 and got.content == csv
    files = await api.http.get(f"/v1/spaces/{home}/files", headers=api.auth(owner))
    assert [f["attachment_id"] for f in files.json()["files"]] == [mine]
    # Once only: a second card naming it is refused.
    await api.refused(harness, receipt(home, [mine]), "invalid_event", "posted already")
    # Nothing refused was logged.
    logged = [e for e in await api.read(owner, since=before) if e["type"] == "message.post"]
    assert [e["seq"] for e in logged] == [seq]
    await sock.close()


def mp4(width: int, height: int, seconds: float) -> bytes:
    """A movie's headers as a camera writes them (ftyp, moov with mvhd and a video trak)."""

    def box(kind: bytes, *content: bytes) -> bytes:
        body = b"".join(content)
        return struct.pack(">I4s", 8 + len(body), kind) + body

    upright = (0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)
    tkhd = box(
        b"tkhd",
        struct.pack(">B3xIIIII8xhhhh", 0, 0, 0, 1, 0, 0, 0, 0, 0, 0),
        struct.pack(">9i", *upright),
        struct.pack(">II", width << 16, height << 16),
    )
    hdlr = box(b"hdlr", struct.pack(">I4x4s12x", 0, b"vide"), b"VideoHandler\x00")
    mvhd = box(b"mvhd", struct.pack(">B3xIIII", 0, 0, 0, 1000, int(seconds * 1000)), bytes(80))
    ftyp = box(b"ftyp", b"isom\x00\x00\x02\x00isomiso2avc1mp41")
    return (
        ftyp
        + box(b"moov", mvhd, box(b"trak", tkhd, box(b"mdia", hdlr)))
        + box(b"mdat", bytes(4096))
    )


async def test_a_video_s_width_height_and_duration_are_measured(stack: Stack, api: Api) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    r = await upload(api, owner, mp4(1280, 720, 12.5), "clip.mp4")
    assert r.status_code == 201, r.text
    answer = r.json()
    assert answer["kind"] == "video" and answer["mime_type"] == "video/mp4"
    assert (answer["width"], answer["height"], answer["duration_ms"]) == (1280, 720, 12_500)
    seq = await api.append(owner, post(home, [answer["upload_id"]], "The clip"))
    [attachment] = (await delivered(sock, seq))["attachments"]
    assert (attachment["width"], attachment["height"], attachment["duration_ms"]) == (
        1280,
        720,
        12_500,
    )
    await sock.close()


async def test_an_expired_url_and_a_withdrawn_token_get_no_bytes(stack: Stack, api: Api) -> None:
    """A URL past its ten minutes, and one made for a token since withdrawn, get 403."""
    owner, harness, home, sock = await harness_room(api, stack)
    upload_id = await uploaded(api, owner, PDF + b"late", "late.pdf")
    seq = await api.append(owner, post(home, [upload_id]))
    [attachment] = (await delivered(sock, seq))["attachments"]
    url = httpx.URL(attachment["url"])
    token_id = url.params["tok"]
    # The same URL as the gateway signs it, but ten minutes and a second ago: a right
    # signature over an expiry that has passed.
    key = url_key(stack.env.get("CHIPS_SIGNING_KEY", DEV_SIGNING_KEY))
    late, _ = signed_path(key, upload_id, token_id, "inline", time.time() - 601)
    base = f"{url.scheme}://{url.netloc.decode()}"
    async with httpx.AsyncClient(base_url=base) as http:
        fresh, _ = signed_path(key, upload_id, token_id, "inline", time.time())
        assert (await http.get(fresh)).status_code == 200  # the key is the stack's
        expired = await http.get(late)
        assert expired.status_code == 403 and expired.content != PDF + b"late"
        await api.append(
            owner, {"type": "harness.disconnected", "harness_id": harness.participant_id}
        )
        withdrawn = await http.get(str(url.raw_path.decode()))
    assert withdrawn.status_code == 403 and withdrawn.content != PDF + b"late"
    await sock.close()
