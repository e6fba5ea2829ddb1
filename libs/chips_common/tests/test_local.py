"""The local stack's ports and run directory (``make up``, ``chips``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chips_common.local import (
    DEFAULT_PORTS,
    LocalConfigError,
    local_ports,
    run_dir,
)


def test_without_a_base_the_usual_ports() -> None:
    assert local_ports({}) == DEFAULT_PORTS
    assert local_ports({})["gateway"] == 8080


def test_a_base_moves_every_port_into_a_range_of_its_own() -> None:
    ports = local_ports({"CHIPS_PORT_BASE": "18300"})
    assert ports["gateway"] == 18300
    assert sorted(ports.values()) == list(range(18300, 18300 + len(DEFAULT_PORTS)))


@pytest.mark.parametrize("raw", ["abc", "80", "65530"])
def test_a_base_that_cannot_be_used_is_one_sentence(raw: str) -> None:
    with pytest.raises(LocalConfigError, match="CHIPS_PORT_BASE"):
        local_ports({"CHIPS_PORT_BASE": raw})


def test_the_run_directory_is_the_checkout_s_whatever_the_working_directory() -> None:
    checkout = Path(sys.prefix).parent
    if Path(sys.prefix).name != ".venv":
        pytest.skip("not run from a checkout's .venv")
    assert run_dir({}) == checkout / ".run"
    assert run_dir({"CHIPS_RUN_DIR": "/tmp/elsewhere"}) == Path("/tmp/elsewhere")
