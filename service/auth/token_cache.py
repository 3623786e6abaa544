"""A short-lived, per-process cache of agent-token lookups (the hot routes' authentication).

An entry is the agent's row as read from the database (who it is, its host, its current
and previous token, when it was revoked), used for at most ``ttl_s`` after it was read. The
rules (revoked? replaced by a rotation? the overlap over?) are applied to it at each
request, so only changes made *elsewhere* are seen late, and never later than ``ttl_s``: a
revocation or a rotation on another replica takes effect on this one within ``ttl_s``. This
process forgets an agent at once when it revokes, rotates or re-enrols it itself.
docs/service.md, "Agent tokens".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class AgentTokenRecord:
    """What a token check needs to know of an agent, read in one query."""

    agent_id: int
    host_id: int
    hostname: str
    engine: str
    token_hash: str
    previous_token_hash: str | None
    previous_token_expires_at: datetime | None
    revoked_at: datetime | None


class TokenCache:
    """Token hash → (credentials, when read); bounded in age and in size."""

    def __init__(
        self,
        ttl_s: float,
        *,
        max_entries: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[AgentTokenRecord, float]] = {}

    def get(self, token_hash: str) -> AgentTokenRecord | None:
        """The credentials read for this token less than ``ttl_s`` ago, else None."""
        entry = self._entries.get(token_hash)
        if entry is None:
            return None
        credentials, read_at = entry
        if self._clock() - read_at >= self.ttl_s:
            with self._lock:
                self._entries.pop(token_hash, None)
            return None
        return credentials

    def put(self, token_hash: str, credentials: AgentTokenRecord, *, read_at: float) -> None:
        """Remember ``credentials`` as read at ``read_at`` (this cache's clock, taken before
        the query: the age counts from before the database answered)."""
        if self.ttl_s <= 0:
            return
        with self._lock:
            if len(self._entries) >= self.max_entries:
                # Oldest first (insertion order): drop a tenth, not one per insert.
                for key in list(self._entries)[: max(1, self.max_entries // 10)]:
                    del self._entries[key]
            self._entries[token_hash] = (credentials, read_at)

    def now(self) -> float:
        return self._clock()

    def forget_agent(self, agent_id: int) -> None:
        """Drop every token of ``agent_id`` (its state changed here)."""
        with self._lock:
            for key in [k for k, (c, _) in self._entries.items() if c.agent_id == agent_id]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
