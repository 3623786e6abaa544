"""Bearer tokens: random, shown once, stored as sha256 (they are high-entropy, so no KDF)."""

from __future__ import annotations

import hashlib
import secrets

AGENT_TOKEN_PREFIX = "pta_"
ENROLLMENT_TOKEN_PREFIX = "pte_"


def new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
