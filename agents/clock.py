"""The agent's two clocks: the monotonic clock times everything (sample periods, profile
windows, climb lengths, drains), the wall clock only dates things (reports, state and status
files, approval deadlines that outlive a restart). A wall clock stepped by an hour then moves
dates, never a decision. docs/agent.md, "Faults".

Every wall-clock reading of the agent goes through ``time.time`` (here, or the loop's
``wall_clock``), so a test harness can step it for a whole agent process.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


def utc_datetime(seconds: float) -> datetime:
    """The aware UTC datetime of a wall-clock reading (seconds since the epoch)."""
    return datetime.fromtimestamp(seconds, UTC)


def utc_now() -> datetime:
    """The wall clock now, as an aware UTC datetime."""
    return utc_datetime(time.time())
