"""Where the local stack (``make up``) lives on this machine: its ports and its run directory.

``CHIPS_PORT_BASE`` moves every port of the local stack at once (the services and the
infrastructure ``make up`` would start), so two checkouts run side by side. Without it
the stack uses the usual ports. Clients find the gateway by the SDK's own copy of the
rule (``chips_sdk.settings.gateway_urls``, which must not import this package); a test
in libs/chips_cli checks that the two agree. ``CHIPS_RUN_DIR`` is where ``make up`` keeps its state,
logs and traces; by default ``.run/`` at the top of the checkout whose ``.venv`` runs the
command, so ``chips trace`` finds the traces from any directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

# Each service's port without CHIPS_PORT_BASE (the gateway's is where clients connect) ...
DEFAULT_PORTS: dict[str, int] = {
    "gateway": 8080,
    "eventlog": 8091,
    "projector": 8092,
    "attachments": 8093,
    "referee": 8094,
    "search": 8095,
    "nats": 4222,
    "redis": 6379,
    "s3": 9000,
    "postgres": 5432,
    # Added after the rest, so that every other port keeps its offset.
    "notifier": 8096,
}
# ... and its offset from CHIPS_PORT_BASE with it.
OFFSETS: dict[str, int] = {name: i for i, name in enumerate(DEFAULT_PORTS)}


class LocalConfigError(ValueError):
    """A local setting that cannot be used, said in one sentence."""


def port_base(environ: Mapping[str, str] | None = None) -> int | None:
    raw = (os.environ if environ is None else environ).get("CHIPS_PORT_BASE", "").strip()
    if not raw:
        return None
    try:
        base = int(raw)
    except ValueError:
        raise LocalConfigError(f"CHIPS_PORT_BASE={raw!r} is not a port number") from None
    top = 65535 - len(OFFSETS) + 1
    if not 1024 <= base <= top:
        raise LocalConfigError(f"CHIPS_PORT_BASE={base} must be between 1024 and {top}")
    return base


def local_ports(environ: Mapping[str, str] | None = None) -> dict[str, int]:
    """Every port of the local stack, by name: the defaults, or moved by CHIPS_PORT_BASE."""
    base = port_base(environ)
    if base is None:
        return dict(DEFAULT_PORTS)
    return {name: base + offset for name, offset in OFFSETS.items()}


def checkout_root() -> Path | None:
    """The checkout whose ``.venv`` runs this Python, if it is one."""
    prefix = Path(sys.prefix)
    if prefix.name == ".venv" and (prefix.parent / "pyproject.toml").exists():
        return prefix.parent
    return None


def run_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("CHIPS_RUN_DIR"):
        return Path(env["CHIPS_RUN_DIR"]).resolve()
    root = checkout_root()
    return (root / ".run") if root else Path(".run").resolve()
