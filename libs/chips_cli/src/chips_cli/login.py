"""``chips login``: this command line as a paired device of a person (docs/adr/0125).

The key pair is made here (ECDSA P-256); the private key is written to a file only its
owner can read (mode 0600; ``CHIPS_DEVICE_FILE``, else ``~/.config/chips/device.json``)
and the server is given the public half. Every later command with no token signs a fresh
challenge with it for a short-lived session, as the app in a browser does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from chips_cli.output import CliError, Out
from chips_common.rules.devices import b64encode, signed_bytes
from chips_sdk import Http
from chips_sdk.errors import ChipsError


def device_file() -> Path:
    if found := os.environ.get("CHIPS_DEVICE_FILE"):
        return Path(found)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "chips" / "device.json"


def read_device() -> dict[str, Any] | None:
    path = device_file()
    if not path.is_file():
        return None
    return dict(json.loads(path.read_text()))


def write_device(data: dict[str, Any]) -> Path:
    path = device_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    path.chmod(0o600)  # a file there already keeps its mode through O_CREAT
    return path


def split_invite(invite: str, default_url: str) -> tuple[str, str]:
    """The server and the secret of an invite link, or a bare secret or code."""
    if "#/invite/" in invite:
        url, _, secret = invite.partition("#/invite/")
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}", secret
    return default_url, invite.strip()


async def login(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips login INVITE``: pair this command line through an invite link or a code."""
    url, secret = split_invite(args.invite, http.url)
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    async with Http(url, None) as anon:
        paired = await anon.request(
            "POST",
            "/v1/invites/accept",
            json={
                "invite": secret,
                "public_key": b64encode(public),
                "device_name": args.name,
                "kind": "cli",
            },
        )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    path = write_device(
        {
            "url": url,
            "device_id": paired["device_id"],
            "workspace_id": paired["workspace_id"],
            "participant_id": paired["participant_id"],
            "name": paired.get("name"),
            "private_key": pem,
        }
    )
    out.data(
        {k: paired[k] for k in ("device_id", "workspace_id", "participant_id")},
        f"signed in to {paired.get('workspace_name', 'Chips')} as {paired.get('name')}; "
        f"this device's key is in {path}",
    )


async def session_token(device: dict[str, Any]) -> str:
    """A fresh session for the device in the key file.

    Each signed time of a device must be newer than its last (docs/adr/0125): a command
    that ran in this same second already (a script's quick succession) is waited out by
    signing again in the next second, once or twice."""
    key = serialization.load_pem_private_key(device["private_key"].encode(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CliError(f"{device_file()} does not hold a device key: run chips login again")
    for attempt in range(3):
        ts, nonce = int(time.time()), secrets.token_urlsafe(16)
        signature = key.sign(
            signed_bytes(device["device_id"], ts, nonce), ec.ECDSA(hashes.SHA256())
        )
        try:
            async with Http(device["url"], None) as anon:
                answer = await anon.request(
                    "POST",
                    "/v1/sessions",
                    json={
                        "device_id": device["device_id"],
                        "ts": ts,
                        "nonce": nonce,
                        "signature": b64encode(signature),
                    },
                )
        except ChipsError as exc:
            if exc.code != "replayed" or attempt == 2:
                raise
            await asyncio.sleep(ts + 1.02 - time.time())
            continue
        return str(answer["token"])
    raise AssertionError("unreachable")


async def logout(http: Http, args: argparse.Namespace, out: Out) -> None:
    """``chips logout``: revoke this device and forget its key."""
    device = read_device()
    if device is None:
        raise CliError("this command line is not paired (chips login pairs it)", "not_found")
    if http.token:
        await http.request("DELETE", f"/v1/devices/{device['device_id']}")
    device_file().unlink()
    out.data({"device_id": device["device_id"]}, "signed out; this device is revoked")


def token_of(args: argparse.Namespace) -> str | None:
    """The token a command is sent with; with none, the device ``chips login`` paired."""
    return args.token or os.environ.get("CHIPS_TOKEN") or os.environ.get("CHIPS_HARNESS_TOKEN")


def need_token(args: argparse.Namespace) -> None:
    if not token_of(args) and read_device() is None:
        raise CliError("this command needs a person's token: pass --token or set CHIPS_TOKEN")
