"""The door's refusals for files (rules/files.py): posting uploads, caps, the fetch audit."""

from __future__ import annotations

from typing import Any

import pytest

from chips_eventlog.state import FileVersion, Upload

pytestmark = pytest.mark.unit


def uploaded(
    w: Any, upload_id: str, by: str, name: str = "po.pdf", sha: str = "s1", posted: bool = False
) -> None:
    """What state_store.prefetch reads for a batch that names the upload."""
    w.state.uploads[upload_id] = Upload(
        upload_id, by, name, "application/pdf", "file", 10, sha, posted=posted
    )


def post(w: Any, *ids: str, **fields: Any) -> dict[str, Any]:
    return {"type": "message.post", "space_id": w.room, "upload_ids": list(ids), **fields}


def test_attachments_from_a_client(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        {
            "type": "message.post",
            "space_id": w.room,
            "text": "x",
            "attachments": [
                {
                    "attachment_id": "att_1",
                    "name": "a",
                    "mime_type": "text/plain",
                    "kind": "file",
                    "byte_size": 1,
                    "sha256": "s",
                    "version": 1,
                }
            ],
        },
        "invalid_event",
        "attachments are filled in by Chips",
    )


def test_replaces_an_upload_the_post_does_not_carry(w: Any) -> None:
    uploaded(w, "upl_1", w.MEM)
    w.says_no(
        w.p(w.MEM),
        post(w, "upl_1", replaces={"upl_9": "att_0"}),
        "invalid_event",
        "replaces names an upload this post does not carry",
    )


def test_uploads_posted_by_a_stranger(w: Any) -> None:
    uploaded(w, "upl_1", w.OUT)
    w.says_no(w.p(w.OUT), post(w, "upl_1"), "forbidden", "not a member")


def test_an_upload_twice_in_one_post(w: Any) -> None:
    uploaded(w, "upl_1", w.MEM)
    w.says_no(w.p(w.MEM), post(w, "upl_1", "upl_1"), "invalid_event", "an upload is posted once")


def test_no_such_upload(w: Any) -> None:
    w.says_no(w.p(w.MEM), post(w, "upl_x"), "not_found", "no upload upl_x")


def test_another_s_upload(w: Any) -> None:
    uploaded(w, "upl_1", w.OWN)
    w.says_no(
        w.p(w.MEM), post(w, "upl_1"), "forbidden", "a post carries only its sender's own uploads"
    )


def test_an_upload_posted_twice(w: Any) -> None:
    uploaded(w, "upl_1", w.MEM)
    w.ok(w.p(w.MEM), post(w, "upl_1"))
    assert w.state.posted_files == []  # written with the batch, then forgotten
    uploaded(w, "upl_1", w.MEM, posted=True)  # as the next batch reads it back
    w.says_no(w.p(w.MEM), post(w, "upl_1"), "invalid_event", "upload upl_1 was posted already")


def test_a_file_made_from_an_old_version_is_stale(w: Any) -> None:
    w.state.files[(w.room, "po.pdf")] = (
        FileVersion("upl_a", 1, "s1", w.OWN, 10),
        FileVersion("upl_b", 2, "s2", w.OWN, 11),
    )
    uploaded(w, "upl_1", w.MEM, sha="s3")
    w.says_no(
        w.p(w.MEM),
        post(w, "upl_1", replaces={"upl_1": "upl_a"}),
        "stale_file",
        "po.pdf is now v2, by Arjun. Fetch it and redo.",
    )


def test_versions_follow_in_one_batch_and_one_post(w: Any) -> None:
    uploaded(w, "upl_1", w.MEM, sha="s1")
    uploaded(w, "upl_2", w.MEM, sha="s2")
    uploaded(w, "upl_3", w.MEM, sha="s3")
    first = w.send(w.p(w.MEM), post(w, "upl_1"))
    assert [a["version"] for a in first[0]["attachments"]] == [1]
    # settle() forgets what the batch read; a later batch reads the posted version again
    w.state.files[(w.room, "po.pdf")] = (FileVersion("upl_1", 1, "s1", w.MEM, first[0]["seq"]),)
    uploaded(w, "upl_2", w.MEM, sha="s2")
    uploaded(w, "upl_3", w.MEM, sha="s3")
    both = w.ok(w.p(w.MEM), post(w, "upl_2", "upl_3"))
    assert [a["version"] for a in both[0]["attachments"]] == [2, 3]


def test_a_first_file_is_version_one_and_its_metadata_is_filled_in(w: Any) -> None:
    w.state.uploads["upl_1"] = Upload(
        "upl_1", w.MEM, "a.png", "image/png", "photo", 10, "s1", width=3, height=4
    )
    [logged] = w.ok(w.p(w.MEM), post(w, "upl_1"))
    [item] = logged["attachments"]
    assert (item["version"], item["width"], item["height"]) == (1, 3, 4)
    assert "replaces" not in item and "duration_ms" not in item
    assert [(f.upload_id, f.seq, f.version) for f in w.state.posted_files] == []  # settled


def test_a_replaces_naming_another_file_is_left_out(w: Any) -> None:
    w.state.files[(w.room, "po.pdf")] = (FileVersion("upl_a", 1, "s1", w.OWN, 10),)
    uploaded(w, "upl_1", w.MEM, sha="s3")
    [logged] = w.ok(w.p(w.MEM), post(w, "upl_1", replaces={"upl_1": "upl_elsewhere"}))
    [item] = logged["attachments"]
    assert item["version"] == 2 and "replaces" not in item


def test_a_post_with_files_is_not_a_turn_passed(w: Any) -> None:
    uploaded(w, "upl_1", w.H1)
    logged = w.ok(w.h(w.H1), post(w, "upl_1", text="NO_REPLY"))
    assert logged[0]["type"] == "message.post"


def test_caps_set_by_a_member(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        {"type": "attachment.caps_set", "photos_bytes": 1000},
        "forbidden",
        "the attachment caps are a workspace owner's or admin's",
    )


def test_a_fetch_logged_by_a_person(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        {
            "type": "attachment.fetched",
            "space_id": w.room,
            "attachment_id": "att_1",
            "name": "po.pdf",
        },
        "forbidden",
        "only a harness's fetches are logged",
    )


def test_a_fetch_by_a_harness_outside_the_room(w: Any) -> None:
    w.says_no(
        w.h(w.H2),
        {
            "type": "attachment.fetched",
            "space_id": w.other,
            "attachment_id": "att_1",
            "name": "po.pdf",
        },
        "forbidden",
        "not a member",
    )


# --- a card's file fields: the same rules as upload_ids (main's test_door_files) ---------


def artifact(w: Any, upload_id: str, **more: Any) -> dict[str, Any]:
    card = {"name": "q3.csv", "form": "table", "upload_id": upload_id}
    return {
        "type": "message.post",
        "space_id": w.room,
        "kind": "artifact",
        "artifact": card,
        **more,
    }


def receipt(w: Any, ids: list[str], **more: Any) -> dict[str, Any]:
    card = {"steps": [], "upload_ids": ids}
    return {"type": "message.post", "space_id": w.room, "kind": "receipt", "receipt": card, **more}


def test_a_card_s_file_fields_are_posted_as_upload_ids_are(w: Any) -> None:
    from chips_common.events import MessagePost
    from chips_eventlog.rules.files import named_in_raw, named_uploads, upload_ids_of

    body = MessagePost.model_validate(artifact(w, "upl_1"))
    assert named_uploads(body) == [("upl_1", "artifact.upload_id")]
    assert named_in_raw(artifact(w, "upl_1")) == ["upl_1"]
    uploaded(w, "upl_1", w.H1, name="q3.csv")
    [logged] = w.ok(w.h(w.H1), artifact(w, "upl_1"))
    [item] = logged["attachments"]
    assert (item["attachment_id"], item["name"], item["version"]) == ("upl_1", "q3.csv", 1)
    cards = {
        "task": {"goal": "Go"},
        "handoff": {"recipient": "Oc2", "summary": "Over to you"},
        "summary": {"outcome": "Done"},
    }
    for kind, card in cards.items():
        post_ = MessagePost(space_id=w.room, kind=kind, **{kind: {**card, "upload_ids": ["a"]}})
        assert upload_ids_of(post_) == ["a"], kind


def test_a_card_s_files_are_only_the_sender_s_own_each_once(w: Any) -> None:
    uploaded(w, "upl_1", w.OWN)
    refused = w.refused(w.h(w.H1), artifact(w, "upl_1"))
    assert (refused.code, refused.field) == ("forbidden", "artifact.upload_id")
    missing = w.refused(w.h(w.H1), receipt(w, ["upl_9"]))
    assert (missing.code, missing.field) == ("not_found", "receipt.upload_ids")
    uploaded(w, "upl_2", w.H1)
    twice = w.refused(w.h(w.H1), receipt(w, ["upl_2", "upl_2"]))
    assert twice.message == "an upload is posted once"


def test_a_card_may_point_at_a_file_its_post_carries(w: Any) -> None:
    uploaded(w, "upl_1", w.H1)
    uploaded(w, "upl_2", w.H1, name="b.txt")
    [logged] = w.ok(w.h(w.H1), receipt(w, ["upl_1", "upl_2"], upload_ids=["upl_1"]))
    assert [i["attachment_id"] for i in logged["attachments"]] == ["upl_1", "upl_2"]


def test_a_post_carries_at_most_twenty_files(w: Any) -> None:
    body = receipt(w, [f"upl_c{i}" for i in range(20)], upload_ids=["upl_p"])
    refused = w.refused(w.h(w.H1), body)
    assert (refused.code, refused.message) == ("invalid_event", "a post carries at most 20 files")
