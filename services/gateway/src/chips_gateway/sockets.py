"""The sockets open on this gateway, by participant, so a withdrawn token closes them.

``chips disconnect`` logs ``harness.disconnected`` (the door withdraws the tokens in the
same transaction). Every gateway learns of it two ways (docs/adr/0031): the gateway
that took the request publishes a notice on core NATS, which every gateway hears at once
and which reaches a socket that never subscribed; and each subscribed socket sees the
event itself go by in its workspace's feed, which is read from the log and never lost.
Either closes the harness's sockets with an ``unauthorized`` error frame and code 4401.
A revoked device (``device.revoked``, docs/adr/0125) is closed the same two ways, by its
credential: its person's other devices stay open.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Protocol

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg

from chips_gateway.frames import NotificationFrame

log = logging.getLogger(__name__)


class Revocable(Protocol):
    def revoke(self, why: str) -> None: ...


def disconnected_why(name: str) -> str:
    return (
        f"{name} was disconnected: its token was withdrawn, so reconnecting will not help; "
        "ask its owner for new lines (chips connect custom)"
    )


REVOKED_WHY = (
    "this device was revoked: it is signed out everywhere; pair it again with an invite "
    "or a pairing code from one of your devices"
)


DEACTIVATED_WHY = (
    "this person was deactivated by a workspace owner or admin: every device, key and "
    "harness of theirs is signed out"
)


def seen_key(prefix: str, participant_id: str) -> str:
    """Redis: when the participant last subscribed on any gateway (``chips doctor``)."""
    return f"{prefix}:seen:{participant_id}"


class Sockets:
    def __init__(self) -> None:
        self.by_participant: dict[str, set[Revocable]] = {}
        self.by_credential: dict[str, set[Revocable]] = {}
        self.nc: Nats | None = None
        self.subject = ""

    def add(self, participant_id: str, socket: Revocable, credential_id: str = "") -> None:
        self.by_participant.setdefault(participant_id, set()).add(socket)
        if credential_id:
            self.by_credential.setdefault(credential_id, set()).add(socket)

    def discard(self, participant_id: str, socket: Revocable, credential_id: str = "") -> None:
        for index, key in (
            (self.by_participant, participant_id),
            (self.by_credential, credential_id),
        ):
            sockets = index.get(key)
            if sockets is not None:
                sockets.discard(socket)
                if not sockets:
                    del index[key]

    def has(self, participant_id: str) -> bool:
        return participant_id in self.by_participant

    def send(self, participant_id: str, frame: NotificationFrame) -> int:
        """Queue ``frame`` on every socket of the participant on this gateway (a
        notification, docs/adr/0132); how many sockets."""
        sockets = list(self.by_participant.get(participant_id, ()))
        for socket in sockets:
            push = getattr(socket, "push", None)
            if callable(push):
                push(dict(frame))
        return len(sockets)

    def revoke_credential(self, credential_id: str, why: str) -> int:
        """Close every socket opened with the credential on this gateway."""
        sockets = list(self.by_credential.get(credential_id, ()))
        for socket in sockets:
            socket.revoke(why)
        return len(sockets)

    def revoke(self, participant_id: str, why: str) -> int:
        """Close every socket of the participant on this gateway; how many there were."""
        sockets = list(self.by_participant.get(participant_id, ()))
        for socket in sockets:
            socket.revoke(why)
        return len(sockets)

    async def start(self, nc: Nats, subject: str) -> None:
        self.nc, self.subject = nc, subject
        await nc.subscribe(subject, cb=self._on_notice)

    async def notify(self, participant_id: str, why: str, credential_id: str = "") -> None:
        """Tell every gateway (this one too) to close the participant's sockets, or only
        those of one credential of theirs."""
        if self.nc is None:
            return
        body: dict[str, str] = {"participant_id": participant_id, "why": why}
        if credential_id:
            body["credential_id"] = credential_id
        # Best effort: each subscribed socket also sees the logged event go by.
        with contextlib.suppress(Exception):
            await self.nc.publish(self.subject, json.dumps(body).encode())

    async def _on_notice(self, msg: Msg) -> None:
        try:
            body = json.loads(msg.data)
            if body.get("credential_id"):
                self.revoke_credential(str(body["credential_id"]), str(body["why"]))
            else:
                self.revoke(str(body["participant_id"]), str(body["why"]))
        except (ValueError, KeyError, TypeError):
            log.warning("a disconnect notice that is not one was ignored")
