"""Which events the projector holds to fold them together (docs/adr/0168): posts only."""

from __future__ import annotations

import pytest

from chips_projector.consumer import may_wait


def test_a_post_may_wait() -> None:
    assert may_wait({"type": "message.post", "space_id": "sp_1", "seq": 3})


@pytest.mark.parametrize(
    "kind",
    ["space.created", "space.member_added", "message.edited", "run.started", "step.updated"],
)
def test_anything_else_is_folded_at_once(kind: str) -> None:
    assert not may_wait({"type": kind, "space_id": "sp_1", "seq": 3})
