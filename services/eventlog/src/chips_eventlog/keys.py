"""Idempotency keys: what a key remembers, and whether a request may reuse it.

A key is the credential's (docs/architecture/design.md §2). The same request sent again under it is
answered as a duplicate, with the first answer; another request under a used key is
refused ``idempotency_key_reused``, naming the first request's seq, as the IETF's
Idempotency-Key draft and the payment APIs that follow it do (docs/adr/0126). Requests
are told apart by their fingerprint, the hash of what the client sent.
"""

from __future__ import annotations

from typing import NamedTuple

from chips_eventlog.refused import Refused

REUSED = "idempotency_key_reused"


class Seen(NamedTuple):
    """What a key produced: the workspace, the seqs logged, the first request's print."""

    workspace_id: str
    seqs: list[int]
    fingerprint: str | None


def check_reuse(seen: Seen, fingerprint: str | None) -> Refused | None:
    """The refusal for a request under a key ``seen`` before, or None for a re-send.

    A key (or a request) without a fingerprint is not compared: Chips' own writers
    derive their keys from what they decide, and keys logged before fingerprints were
    kept have none.
    """
    if seen.fingerprint is None or fingerprint is None or seen.fingerprint == fingerprint:
        return None
    first = seen.seqs[-1] if seen.seqs else None
    at = f" (seq {first})" if first is not None else ""
    return Refused(
        REUSED,
        f"this idempotency key was used for another request{at}; a new request takes a new key",
        "idempotency_key",
        {"seq": first},
    )
