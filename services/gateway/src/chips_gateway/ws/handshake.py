"""The hello: the protocol version both sides speak, and who the socket is."""

from __future__ import annotations

import json

from chips_common.events import JsonObject
from chips_common.rules.context import Budget
from chips_gateway.agents import agents_with_rooms
from chips_gateway.frames import ServerHello
from chips_gateway.shaping import Shaper
from chips_gateway.ws.checks import is_count
from chips_gateway.ws.session import CLOSE_PROTOCOL, SERVER_PROTOCOL, SessionBase


class Handshake(SessionBase):
    """A socket's hello frame, answered with the server's."""

    __slots__ = ()

    async def on_hello(self, frame: JsonObject) -> bool:
        if self.hello:
            self.push(self.error("invalid_frame", "hello was already said on this socket"))
            return True
        protocol = frame.get("protocol") or {}
        low = protocol.get("min", 1) if isinstance(protocol, dict) else None
        high = protocol.get("max", low) if isinstance(protocol, dict) else None
        if not (is_count(low) and is_count(high)):
            self.push(self.error("invalid_frame", "protocol is {min, max} with integer versions"))
            return True
        assert isinstance(low, int) and isinstance(high, int)
        version = min(high, SERVER_PROTOCOL[1])
        if version < max(low, SERVER_PROTOCOL[0]):
            await self.send_text(
                json.dumps(
                    self.error(
                        "invalid_frame",
                        "no protocol version in common: this server speaks "
                        f"{SERVER_PROTOCOL[0]} to {SERVER_PROTOCOL[1]}, the client {low} to {high}",
                    )
                )
            )
            await self.ws.close(CLOSE_PROTOCOL)
            return False
        accepts = frame.get("accepts") or []
        self.accepts = (
            frozenset(a for a in accepts if isinstance(a, str))
            if isinstance(accepts, list)
            else frozenset()
        )
        self.hello = True
        self.shaper = Shaper(
            self.ctx.reader, self.principal, Budget.from_hello(frame.get("context")), self.ctx.links
        )
        p = self.principal
        spaces = await self.ctx.reader.current_spaces(p.workspace_id, p.participant_id)
        answer: ServerHello = {
            "frame": "hello",
            "protocol": {"min": SERVER_PROTOCOL[0], "max": SERVER_PROTOCOL[1], "version": version},
            "server": {"name": "chips", "gateway": self.ctx.settings.replica_id()},
            "workspace_id": p.workspace_id,
            "spaces": spaces,
            # The log's head as of this hello: a client that has no seq of its own yet
            # subscribes with it as since, so a reconnect before its first event resumes
            # without a gap (docs/protocol.md).
            "head_seq": await self.ctx.reader.head(p.workspace_id),
        }
        if p.kind == "harness":
            capabilities = await self.ctx.reader.capabilities(p.participant_id)
            answer["harness"] = {
                "id": p.participant_id,
                "name": p.name,
                "owner_id": p.owner_id,
                "capabilities": capabilities,
            }
            if "agents" in capabilities:
                # docs/product/websocket.md, Saying you speak agents: hello lists them with their
                # rooms.
                answer["agents"] = await agents_with_rooms(self.ctx.reader, p.participant_id)
            # "off" for a harness that does not take the dial (and one connected before it
            # was recorded), else the dial's level (docs/adr/0031).
            answer["autonomy"] = await self.ctx.reader.autonomy(p.participant_id) or "off"
        else:
            answer["person"] = {"id": p.participant_id, "name": p.name, "role": p.role}
        if p.kind == "harness":
            # Online, and the harness's next word after a restart (docs/adr/0080): counted
            # before it is answered, so whatever it does next sees it back.
            self.presence = await self.ctx.restarts.opened(p.participant_id, self, self.accepts)
        self.push(answer)
        return True
