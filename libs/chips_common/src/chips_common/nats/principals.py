"""The notice that who a workspace's tokens are may have changed (docs/adr/0169).

The eventlog publishes it on core NATS (``Names.principals_subject``) after a commit that
changed a credential or a participant of the workspace, and names every workspace when it
takes a partition's lease; every gateway forgets what it remembered of those tokens.
"""

from __future__ import annotations

import orjson

# What a notice names to forget every workspace.
EVERY_WORKSPACE = "*"


def notice(workspace_id: str) -> bytes:
    """A notice's body: the workspace whose tokens to forget."""
    return orjson.dumps({"workspace_id": workspace_id})


def noticed(data: bytes) -> str | None:
    """The workspace a notice names, or None for a body that is not one."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    workspace = body.get("workspace_id") if isinstance(body, dict) else None
    return workspace if isinstance(workspace, str) and workspace else None
