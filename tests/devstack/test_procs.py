"""What chips-dev recorded of a process it started is found again, and only that process."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import psutil
import pytest

from chips_devstack.procs import Started, free_port


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_process_is_found_though_the_boot_time_moved_a_second(
    sleeper: subprocess.Popen[bytes],
) -> None:
    started = psutil.Process(sleeper.pid).create_time()
    # The start time is counted from the boot time, a whole second that moves when the
    # clock is stepped: read again later, it may be a second off what was recorded.
    for moved in (-1.0, 1.0, 0.0):
        assert Started("nats", sleeper.pid, started + moved).alive()


def test_another_process_given_the_same_pid_is_not_it(sleeper: subprocess.Popen[bytes]) -> None:
    started = psutil.Process(sleeper.pid).create_time()
    assert not Started("nats", sleeper.pid, started - 60).alive()
    sleeper.kill()
    sleeper.wait()
    assert not Started("nats", sleeper.pid, started).alive()


def test_a_port_handed_out_is_not_handed_out_again_while_its_service_starts() -> None:
    """The kernel may give the same free port twice before the first asker binds it: two
    services of one stack were once given one port. The second ask gets another."""
    kernel = iter([47001, 47001, 47001, 47002])
    first = free_port(lambda: next(kernel))
    second = free_port(lambda: next(kernel))
    assert (first, second) == (47001, 47002)
