"""What a replica remembers of who tokens are, and when it stops trusting it (docs/adr/0169)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from chips_common.db.principals import Principal
from chips_common.nats.principals import EVERY_WORKSPACE, notice, noticed
from chips_gateway.known import Answer, Known, usable

NOON = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def principal(workspace: str = "ws_1", pid: str = "usr_1", **more: object) -> Principal:
    return Principal("crd_" + pid, workspace, pid, "person", "Dana", "member", None, **more)  # type: ignore[arg-type]


@dataclass
class Connection:
    """What :class:`Known` reads of a NATS connection."""

    is_connected: bool = True
    stats: dict[str, int] = field(default_factory=lambda: {"reconnects": 0})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def known(keep: float = 30.0, most: int = 100) -> tuple[Known, Clock, Connection]:
    clock, nc = Clock(), Connection()
    k = Known(keep, most=most, clock=clock, wall=lambda: NOON)
    k.nc = nc  # type: ignore[assignment]
    return k, clock, nc


# --- usable: the pure decision ------------------------------------------------------------


def test_an_answer_stands_while_young_under_the_same_connection() -> None:
    answer = Answer(principal(), learnt=10.0, epoch=3)
    assert usable(answer, 39.9, NOON, 3, 30.0)
    assert not usable(answer, 40.0, NOON, 3, 30.0)  # as old as it may be
    assert not usable(answer, 11.0, NOON, 4, 30.0)  # the connection came back since
    assert not usable(answer, 11.0, NOON, None, 30.0)  # the connection is down


def test_a_credential_that_expires_is_not_taken_past_its_expiry() -> None:
    expires = NOON + timedelta(seconds=5)
    answer = Answer(principal(expires_at=expires), learnt=10.0, epoch=0)
    assert usable(answer, 11.0, NOON, 0, 30.0)
    assert not usable(answer, 11.0, expires, 0, 30.0)
    assert not usable(answer, 11.0, expires + timedelta(seconds=1), 0, 30.0)


# --- Known -------------------------------------------------------------------------------


def test_an_answer_is_remembered_and_read_back() -> None:
    k, clock, _ = known()
    assert k.get("h1") is None
    k.put("h1", principal(), k.stamp())
    assert k.get("h1") == principal()
    clock.now += 29.9
    assert k.get("h1") == principal()
    clock.now += 0.1
    assert k.get("h1") is None
    assert "h1" not in k.answers  # a stale answer is dropped when met


def test_a_notice_forgets_its_workspace_only() -> None:
    k, _, _ = known()
    k.put("a", principal("ws_1", "usr_a"), k.stamp())
    k.put("b", principal("ws_2", "usr_b"), k.stamp())
    k.forget("ws_1")
    assert k.get("a") is None and k.get("b") is not None
    k.forget(EVERY_WORKSPACE)
    assert k.get("b") is None


def test_an_answer_asked_before_a_notice_is_not_kept() -> None:
    """Postgres answered as of before a revocation whose notice came while it was asked."""
    k, _, _ = known()
    stamp = k.stamp()
    k.forget("ws_other")  # any notice at all
    k.put("h1", principal(), stamp)
    assert k.get("h1") is None


def test_nothing_is_kept_or_trusted_while_the_connection_is_down_or_after_it_came_back() -> None:
    k, _, nc = known()
    k.put("h1", principal(), k.stamp())
    nc.is_connected = False
    assert k.get("h1") is None
    k.put("h2", principal(), k.stamp())
    assert "h2" not in k.answers
    nc.is_connected = True
    stamp = k.stamp()
    k.put("h3", principal(), stamp)
    nc.stats["reconnects"] += 1  # it went and came back: a notice may have been missed
    assert k.get("h3") is None
    k.put("h4", principal(), stamp)  # asked before it went
    assert "h4" not in k.answers


def test_nothing_is_kept_before_notices_can_be_heard() -> None:
    k = Known(30.0)
    k.put("h1", principal(), k.stamp())
    assert k.get("h1") is None


def test_a_keep_of_zero_keeps_nothing() -> None:
    k, _, _ = known(keep=0.0)
    k.put("h1", principal(), k.stamp())
    assert k.get("h1") is None and not k.answers


def test_the_oldest_answers_go_past_the_most_kept() -> None:
    k, _, _ = known(most=2)
    for key in ("a", "b", "c"):
        k.put(key, principal(pid=key), k.stamp())
    assert list(k.answers) == ["b", "c"]


def test_a_notice_reads_back_its_workspace() -> None:
    assert noticed(notice("ws_9")) == "ws_9"
    assert noticed(notice(EVERY_WORKSPACE)) == EVERY_WORKSPACE
    for junk in (b"", b"[]", b'{"workspace_id": 3}', b'{"workspace_id": ""}', b"\xff"):
        assert noticed(junk) is None
