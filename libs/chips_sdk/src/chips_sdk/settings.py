"""Where Chips is and which token a harness runs on, from the environment.

One rule for the SDK and the ``chips`` command, so both find the same gateway from the
same settings:

- ``CHIPS_URL``: the gateway (several, comma-separated, are tried in turn);
- else ``CHIPS_PORT_BASE``: the local stack moved to its own ports (``make up`` puts the
  gateway on the base itself; docs/configuration.md);
- else the local stack's usual gateway, ``http://127.0.0.1:8080``.

A harness runs on its own token, ``CHIPS_HARNESS_TOKEN`` (``chips connect`` prints it),
never on a person's (``chips_pt_…``): a person's token makes a socket that hears what the
person hears, not the ``message.new`` a harness answers, so a harness on it would sit
silent. Pure functions of a mapping, so they are tested without touching ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

DEFAULT_URL = "http://127.0.0.1:8080"
# make up puts the gateway at CHIPS_PORT_BASE + 0 (chips_common.local.OFFSETS agrees; a
# test in libs/chips_cli checks it), and the ten ports after it for the rest.
GATEWAY_OFFSET = 0
PORT_BASE_TOP = 65535 - 10
PERSON_TOKEN_PREFIX = "chips_pt_"


class SettingError(ValueError):
    """A setting that cannot be used, said in one sentence naming the variable to fix."""


def gateway_urls(environ: Mapping[str, str] | None = None) -> list[str]:
    """The gateway URLs to try, in order: ``CHIPS_URL``, else ``CHIPS_PORT_BASE``, else 8080.

    Raises :class:`SettingError` for a ``CHIPS_PORT_BASE`` that is not a port base.
    """
    env = os.environ if environ is None else environ
    urls = [u.strip().rstrip("/") for u in env.get("CHIPS_URL", "").split(",") if u.strip()]
    if urls:
        return urls
    raw = env.get("CHIPS_PORT_BASE", "").strip()
    if not raw:
        return [DEFAULT_URL]
    try:
        base = int(raw)
    except ValueError:
        raise SettingError(f"CHIPS_PORT_BASE={raw!r} is not a port number") from None
    if not 1024 <= base <= PORT_BASE_TOP:
        raise SettingError(f"CHIPS_PORT_BASE={base} must be between 1024 and {PORT_BASE_TOP}")
    return [f"http://127.0.0.1:{base + GATEWAY_OFFSET}"]


def is_person_token(token: str) -> bool:
    return token.startswith(PERSON_TOKEN_PREFIX)


def harness_token(environ: Mapping[str, str] | None = None) -> str:
    """The token a harness runs on: ``CHIPS_HARNESS_TOKEN`` (else ``CHIPS_TOKEN``), and
    never a person's.

    Raises :class:`SettingError` with the one sentence saying which variable to set.
    """
    env = os.environ if environ is None else environ
    for name in ("CHIPS_HARNESS_TOKEN", "CHIPS_TOKEN"):
        token = env.get(name, "").strip()
        if not token:
            continue
        if is_person_token(token):
            raise SettingError(
                f"{name} is a person's token (chips_pt_…), and a harness runs on its own: set "
                "CHIPS_HARNESS_TOKEN to the token `chips connect` printed (chips_at_…)"
            )
        return token
    raise SettingError(
        "no token: set CHIPS_HARNESS_TOKEN to the token `chips connect` printed (chips_at_…)"
    )
