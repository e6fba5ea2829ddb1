"""A client generated from the OpenAPI document, by a mainstream generator nobody here
wrote (openapi-python-client), walks the README's way through Chips: make a workspace and
a room, post, upload a file and fetch it back, read the room back. So the document cannot
drift from what the API answers without this failing.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from chips_devstack.stack import Stack


@pytest.fixture(scope="module")
def generated(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The client, generated afresh from the running gateway's document and imported."""
    root = tmp_path_factory.mktemp("generated")
    document = root / "openapi.json"
    document.write_bytes(httpx.get(f"{stack.gateway_a}/openapi.json", timeout=20).content)
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-python-client"),
            "generate",
            "--path",
            str(document),
            "--meta",
            "none",
            "--output-path",
            str(root / "chips_api_client"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # Every schema and operation of the document made it into the client.
    assert "Unable to" not in run.stdout and "will be omitted" not in run.stdout, run.stdout
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("chips_api_client")
    finally:
        sys.path.remove(str(root))


@pytest.mark.timeout(400)
def test_the_walkthrough_with_a_generated_client(stack: Stack, generated: Any) -> None:
    from chips_api_client import AuthenticatedClient, Client  # type: ignore[import-not-found]
    from chips_api_client.api.default import (  # type: ignore[import-not-found]
        create_workspace,
        fetch,
        post_event,
        read_events,
        upload,
    )
    from chips_api_client.models import (  # type: ignore[import-not-found]
        Ack,
        MessagePost,
        SpaceCreated,
        Upload,
        WorkspaceIn,
        WorkspaceMade,
    )
    from chips_api_client.types import File  # type: ignore[import-not-found]

    made = create_workspace.sync(
        client=Client(base_url=stack.gateway_a),
        body=WorkspaceIn(name="Generated", owner_name="Gen"),
        x_chips_operator_secret="chips-dev-operator-secret",
    )
    assert isinstance(made, WorkspaceMade), made
    client = AuthenticatedClient(base_url=stack.gateway_a, token=made.token)

    opened = post_event.sync(
        client=client, body=SpaceCreated(title="Plans", idempotency_key="gen-room")
    )
    assert isinstance(opened, Ack) and opened.space_id, opened
    said = post_event.sync(
        client=client,
        body=MessagePost(space_id=opened.space_id, text="hello", idempotency_key="gen-hi"),
    )
    assert isinstance(said, Ack) and said.message_id, said

    stored = upload.sync(
        client=client, body=File(payload=b"the minutes\n", file_name="minutes.txt"), name="m.txt"
    )
    assert isinstance(stored, Upload) and stored.mime_type.startswith("text/plain"), stored
    shared = post_event.sync(
        client=client,
        body=MessagePost(
            space_id=opened.space_id,
            text="the minutes",
            upload_ids=[stored.upload_id],
            idempotency_key="gen-file",
        ),
    )
    assert isinstance(shared, Ack) and shared.message_id, shared

    got = fetch.sync_detailed(client=client, attachment_id=stored.attachment_id)
    assert got.status_code == 200 and got.content == b"the minutes\n"
    assert got.headers["content-type"].startswith("text/plain")

    page = read_events.sync(client=client, space_id=opened.space_id, since=0)
    posts = [e for e in page.to_dict()["events"] if e["type"] == "message.post"]
    assert [p["text"] for p in posts] == ["hello", "the minutes"]
    assert posts[1]["attachments"][0]["attachment_id"] == stored.attachment_id
