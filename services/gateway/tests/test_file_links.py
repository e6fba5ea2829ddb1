"""Each file a frame carries gets a URL signed for the credential it is sent to."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from chips_common.rules.signed_urls import check_signature, url_key
from chips_gateway.files import FileLinks, current_versions

pytestmark = pytest.mark.unit

PHOTO = {"attachment_id": "att_1", "mime_type": "image/png", "name": "a.png", "thumbnail": True}
PAGE = {"attachment_id": "att_2", "mime_type": "text/html", "name": "a.html", "thumbnail": False}


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_every_file_of_a_frame_and_of_its_context_is_linked_for_its_recipient() -> None:
    links = FileLinks("secret", "http://gw.example/")
    event: dict[str, Any] = {
        "type": "message.new",
        "attachments": [PHOTO],
        "context": {"files": [PAGE]},
    }
    signed = links.sign_event(event, "crd_9")
    photo, page = signed["attachments"][0], signed["context"]["files"][0]
    assert photo["url"].startswith("http://gw.example/v1/attachments/att_1?")
    assert photo["thumbnail_url"].startswith("http://gw.example/v1/attachments/att_1/thumbnail?")
    assert "thumbnail_url" not in page
    q = query(photo["url"])
    assert q["tok"] == "crd_9"
    key = [url_key("secret")]
    assert check_signature(key, "att_1", q["exp"], q["tok"], "inline", q["sig"], 0) is None
    p = query(page["url"])
    assert check_signature(key, "att_2", p["exp"], p["tok"], "attachment", p["sig"], 0) is None
    assert photo["url_expires_at"].endswith("Z")
    assert "url" not in event["attachments"][0], "the event itself is left as it was"


def test_a_frame_without_files_is_left_alone() -> None:
    event = {"type": "message.post", "text": "hi"}
    assert FileLinks("secret", "http://gw").sign_event(event, "crd_1") is event


def test_current_versions_keep_the_newest_of_each_name() -> None:
    files = [
        {"name": "a", "version": 3},
        {"name": "b", "version": 1},
        {"name": "a", "version": 2},
    ]
    assert current_versions(files) == [{"name": "a", "version": 3}, {"name": "b", "version": 1}]
    assert current_versions(files, limit=1) == [{"name": "a", "version": 3}]
