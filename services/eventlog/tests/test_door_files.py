"""The door's rules for a post's files, decided without Postgres (chips_eventlog.files).

spec/messages.md, Attachments; spec/websocket.md, The room's files: only the sender's own
uploads, each once; a post made from a version that is no longer the current one is
refused as stale_file, naming the file, its version and who changed it.
"""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.events import MessagePost
from chips_common.rules.files import Version
from chips_eventlog.door import Refused
from chips_eventlog.files import (
    FilesView,
    Upload,
    filled,
    named_uploads,
    plan_post,
    upload_ids_of,
)

pytestmark = pytest.mark.unit

ME, MAYA = "usr_me", "usr_maya"
ROOM = "spc_room"


def upload(
    upload_id: str, name: str = "a.html", sha: str = "1", by: str = ME, **more: Any
) -> Upload:
    return Upload(upload_id, by, name, "text/html", "file", 10, sha * 64, **more)


def post(ids: list[str], **more: Any) -> MessagePost:
    return MessagePost(space_id=ROOM, upload_ids=ids, **more)


def refusal(view: FilesView, body: MessagePost) -> Refused:
    with pytest.raises(Refused) as refused:
        plan_post(view, body, ME, 7)
    return refused.value


def test_a_first_file_is_version_one_and_its_metadata_is_filled_in() -> None:
    view = FilesView({"att_1": upload("att_1", width=3, height=4)})
    planned = plan_post(view, post(["att_1"]), ME, 7)
    assert planned is not None and planned.seq == 7
    [item] = filled(planned)["attachments"]
    assert item["version"] == 1 and item["width"] == 3 and "replaces" not in item


def test_only_the_sender_s_own_uploads_each_once() -> None:
    hers = FilesView({"att_1": upload("att_1", by=MAYA)})
    assert refusal(hers, post(["att_1"])).code == "forbidden"
    posted = FilesView({"att_1": upload("att_1", posted=True)})
    assert refusal(posted, post(["att_1"])).code == "invalid_event"
    assert refusal(FilesView(), post(["att_9"])).code == "not_found"
    twice = FilesView({"att_1": upload("att_1")})
    assert refusal(twice, post(["att_1", "att_1"])).message == "an upload is posted once"


def test_a_post_replaces_only_what_it_carries() -> None:
    body = MessagePost(space_id=ROOM, text="hi", replaces={"att_2": "att_1"})
    assert refusal(FilesView(), body).field == "replaces"


V2 = Version("att_v2", 2, "2" * 64, "Oc2")


def test_a_post_made_from_an_older_version_is_stale() -> None:
    view = FilesView(
        {"att_new": upload("att_new", sha="3")},
        {"a.html": (V2, frozenset({"att_v1", "att_v2"}))},
    )
    stale = refusal(view, post(["att_new"], replaces={"att_new": "att_v1"}))
    assert (stale.code, stale.message) == (
        "stale_file",
        "a.html is now v2, by Oc2. Fetch it and redo.",
    )
    planned = plan_post(view, post(["att_new"], replaces={"att_new": "att_v2"}), ME, 7)
    assert planned is not None and filled(planned)["attachments"][0]["version"] == 3


def test_a_replaces_naming_another_file_is_left_out() -> None:
    view = FilesView(
        {"att_new": upload("att_new", sha="3")},
        {"a.html": (V2, frozenset({"att_v1", "att_v2"}))},
    )
    planned = plan_post(view, post(["att_new"], replaces={"att_new": "att_elsewhere"}), ME, 7)
    assert planned is not None
    [item] = filled(planned)["attachments"]
    assert item["version"] == 3 and "replaces" not in item


def test_two_files_of_one_name_in_one_post_are_two_versions() -> None:
    view = FilesView({"att_a": upload("att_a", sha="4"), "att_b": upload("att_b", sha="5")})
    planned = plan_post(view, post(["att_a", "att_b"]), ME, 7)
    assert planned is not None
    assert [i["version"] for i in filled(planned)["attachments"]] == [1, 2]


# --- a card's file fields: the same rules as upload_ids -----------------------------------


def artifact(upload_id: str, **more: Any) -> MessagePost:
    return MessagePost(
        space_id=ROOM,
        kind="artifact",
        artifact={"name": "q3.csv", "form": "table", "upload_id": upload_id},
        **more,
    )


def receipt(ids: list[str], **more: Any) -> MessagePost:
    return MessagePost(
        space_id=ROOM, kind="receipt", receipt={"steps": [], "upload_ids": ids}, **more
    )


def test_a_card_s_file_fields_are_posted_as_upload_ids_are() -> None:
    assert named_uploads(artifact("att_1")) == [("att_1", "artifact.upload_id")]
    view = FilesView({"att_1": upload("att_1", name="q3.csv")})
    planned = plan_post(view, artifact("att_1"), ME, 7)
    assert planned is not None
    [item] = filled(planned)["attachments"]
    assert (item["attachment_id"], item["name"], item["version"]) == ("att_1", "q3.csv", 1)
    for kind in ("task", "handoff", "summary"):
        card = {
            "task": {"goal": "Go"},
            "handoff": {"recipient": "Oc2", "summary": "Over to you"},
            "summary": {"outcome": "Done"},
        }[kind]
        body = MessagePost(space_id=ROOM, kind=kind, **{kind: {**card, "upload_ids": ["att_1"]}})
        assert upload_ids_of(body) == ["att_1"], kind


def test_a_card_s_files_are_only_the_sender_s_own_each_once() -> None:
    hers = FilesView({"att_1": upload("att_1", by=MAYA)})
    refused = refusal(hers, artifact("att_1"))
    assert (refused.code, refused.field) == ("forbidden", "artifact.upload_id")
    posted = FilesView({"att_1": upload("att_1", posted=True)})
    assert refusal(posted, receipt(["att_1"])).field == "receipt.upload_ids"
    missing = refusal(FilesView(), receipt(["att_9"]))
    assert (missing.code, missing.field) == ("not_found", "receipt.upload_ids")
    twice = FilesView({"att_1": upload("att_1")})
    assert refusal(twice, receipt(["att_1", "att_1"])).message == "an upload is posted once"


def test_a_card_may_point_at_a_file_its_post_carries() -> None:
    view = FilesView({"att_1": upload("att_1"), "att_2": upload("att_2", name="b.txt")})
    body = receipt(["att_1", "att_2"], upload_ids=["att_1"])
    assert upload_ids_of(body) == ["att_1", "att_2"]
    planned = plan_post(view, body, ME, 7)
    assert planned is not None
    assert [i["attachment_id"] for i in filled(planned)["attachments"]] == ["att_1", "att_2"]


def test_a_post_carries_at_most_twenty_files() -> None:
    body = receipt([f"att_c{i}" for i in range(20)], upload_ids=["att_p"])
    refused = refusal(FilesView(), body)
    assert (refused.code, refused.message) == ("invalid_event", "a post carries at most 20 files")


def test_replaces_may_name_a_card_s_file() -> None:
    view = FilesView(
        {"att_new": upload("att_new", name="q3.csv", sha="3")},
        {"q3.csv": (V2, frozenset({"att_v1", "att_v2"}))},
    )
    stale = refusal(view, artifact("att_new", replaces={"att_new": "att_v1"}))
    assert stale.code == "stale_file"
