"""Hashing of bearer tokens: Chips keeps only the hash (docs/architecture/design.md §7)."""

from __future__ import annotations

import hashlib


def hash_token(token: str) -> str:
    """SHA-256 of a token, hex. Tokens are 32 random bytes, so no salt or stretching is needed."""
    return hashlib.sha256(token.encode()).hexdigest()
