"""The command and a harness find the same gateway: the SDK's rule agrees with make up's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chips_common.local import LocalConfigError, local_ports
from chips_sdk import SettingError, gateway_urls

CHIPS = str(Path(sys.executable).parent / "chips")


@pytest.mark.parametrize("base", ["1024", "18300", "18400", "65525"])
def test_the_sdk_finds_the_gateway_where_make_up_puts_it(base: str) -> None:
    env = {"CHIPS_PORT_BASE": base}
    assert gateway_urls(env) == [f"http://127.0.0.1:{local_ports(env)['gateway']}"]


@pytest.mark.parametrize("base", ["", "1023", "65526", "x"])
def test_both_refuse_or_default_alike(base: str) -> None:
    env = {"CHIPS_PORT_BASE": base}
    try:
        gateway = local_ports(env)["gateway"]
    except LocalConfigError:
        with pytest.raises(SettingError):
            gateway_urls(env)
    else:
        assert gateway_urls(env) == [f"http://127.0.0.1:{gateway}"]


def chips(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CHIPS_")}
    return subprocess.run(
        [CHIPS, *args], env={**clean, **env}, capture_output=True, text=True, timeout=30
    )


def test_the_command_uses_the_same_rule() -> None:
    # Nothing listens on these (a port below 1024 is nobody's here): doctor names the URL.
    moved = chips("doctor", CHIPS_PORT_BASE="18471")
    assert "http://127.0.0.1:18471" in moved.stdout, moved.stdout + moved.stderr
    told = chips("doctor", CHIPS_URL="http://127.0.0.1:9", CHIPS_PORT_BASE="18471")
    assert "nothing answers at http://127.0.0.1:9 " in told.stdout, told.stdout


def test_doctor_takes_url_after_the_command() -> None:
    done = chips("doctor", "--url", "http://127.0.0.1:9")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "FAIL  gateway: nothing answers at http://127.0.0.1:9 " in done.stdout, done.stderr
    assert "connection refused" in done.stdout
