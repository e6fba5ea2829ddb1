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
from chips_eventlog.files import FilesView, Upload, filled, plan_post

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
