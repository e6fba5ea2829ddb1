"""The notice that who a workspace's tokens are may have changed (docs/adr/0169, 0172).

The eventlog publishes it on core NATS (``Names.principals_subject``) after a commit that
changed a credential or a participant of the workspace, and names every workspace when it
takes a partition's lease; every gateway forgets what it remembered of those tokens and
replies that it has. Each gateway says it is here every ``HERE_EVERY`` seconds
(``Names.gateways_subject``), so the eventlog knows whose replies to wait for before it
answers the change's writer (:class:`Listeners`).
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


# A gateway says it is here this often (``Names.gateways_subject``), and is no longer
# waited for once it has not said so for this long (three missed, and a little).
HERE_EVERY = 2.0
HERE_LAPSE = 3 * HERE_EVERY + 0.5


def here(replica: str, *, gone: bool = False) -> bytes:
    """A gateway's word that it listens for notices (or, ``gone``, no longer does); also
    the body of its reply to a notice, that it has forgotten what the notice named."""
    return orjson.dumps({"replica": replica, "gone": gone})


def heard_here(data: bytes) -> tuple[str, bool] | None:
    """The replica a gateway's word names and whether it is gone, or None for a body that
    is not one."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    replica = body.get("replica")
    if not isinstance(replica, str) or not replica:
        return None
    return replica, body.get("gone") is True


class Listeners:
    """The gateways a notice's sender waits for: each one heard from (its word that it is
    here, or a reply to a notice) within ``lapse`` seconds, and not gone since."""

    def __init__(self, lapse: float = HERE_LAPSE) -> None:
        self.lapse = lapse
        self.last: dict[str, float] = {}

    def heard(self, replica: str, now: float) -> None:
        self.last[replica] = now

    def gone(self, replica: str) -> None:
        self.last.pop(replica, None)

    def expected(self, now: float) -> frozenset[str]:
        for replica in [r for r, t in self.last.items() if now - t > self.lapse]:
            del self.last[replica]
        return frozenset(self.last)


def unconfirmed(expected: frozenset[str], confirmed: set[str]) -> frozenset[str]:
    """The gateways a notice waits for still."""
    return expected.difference(confirmed)
