"""Speaking as one of the harness's agents (docs/product/websocket.md, Agents: Speaking as one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def speaker_for(message: Mapping[str, Any]) -> dict[str, str] | None:
    """The actor to answer a ``message.new`` as: the one agent of yours it is for
    (``for``), or None when it is for the harness itself or for several agents (then each
    answers, naming itself as ``actor``)."""
    taking: list[Any] = list(message.get("for") or [])
    if len(taking) == 1 and str(taking[0]).startswith("agt_"):
        return {"kind": "agent", "id": str(taking[0])}
    return None
