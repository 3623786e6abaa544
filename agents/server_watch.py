"""Who changed the server between two samples: a restart, a clock step, the agent, a DBA.

- **A restart** cuts the agent's connection, and the server comes back with its startup
  values: its uptime went back, or its start (sample time − uptime) moved later. That is
  nobody's manual change.
- **A clock step** on the database host moves the server's uptime (MariaDB's ``Uptime`` and
  PostgreSQL's ``now() - pg_postmaster_start_time()`` follow the wall clock) while the
  connection stays up: not a restart.
- **The agent's own change that failed half-way** (a ``SET GLOBAL`` went through, the next
  one or the read-back did not): the values it sent are its own, not a DBA's.
- Anything else that differs from what the agent applied was set by someone else.

docs/agent.md, "Faults".
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping

from agents.targets.base import Snapshot, Target

logger = logging.getLogger(__name__)

#: How far the server's estimated start may move later without a restart: the uptime has a
#: one-second resolution and a sample's time is taken after its queries ran.
START_SLACK_S = 10.0


class ServerEvent(enum.Enum):
    RESTART = "restart"
    CLOCK_STEP = "clock-step"


class ServerWatch:
    """Classifies what the loop sees; fed every snapshot and every change the agent sends."""

    def __init__(self) -> None:
        self._uptime_s: float | None = None
        #: The server's start on the agent's monotonic clock, as of the last snapshot.
        self._started: float | None = None
        self._reconnected = False
        #: Values sent to the server and not yet read back.
        self._in_flight: dict[str, int] = {}

    # -- restarts and clock steps -------------------------------------------------------

    def connection_lost(self) -> None:
        """A sample failed: the next one may come over a new connection (a restart needs one)."""
        self._reconnected = True

    def observe(self, snapshot: Snapshot) -> ServerEvent | None:
        """What happened to the server since the last snapshot, if anything."""
        started = snapshot.taken_at - snapshot.uptime_s
        last_uptime, last_started = self._uptime_s, self._started
        self._uptime_s, self._started = snapshot.uptime_s, started
        reconnected, self._reconnected = self._reconnected, False
        if last_uptime is None or last_started is None:
            return None
        went_back = snapshot.uptime_s < last_uptime
        if reconnected and (went_back or started - last_started > START_SLACK_S):
            self._in_flight.clear()  # the server forgot everything the agent had sent
            return ServerEvent.RESTART
        if went_back or abs(started - last_started) > START_SLACK_S:
            logger.warning(
                "the server's uptime moved from %.0fs to %.0fs while the connection stayed "
                "up: its clock was stepped, not a restart",
                last_uptime,
                snapshot.uptime_s,
            )
            return ServerEvent.CLOCK_STEP
        return None

    # -- the agent's own changes --------------------------------------------------------

    def send(self, target: Target, changes: Mapping[str, int]) -> dict[str, int]:
        """``target.apply(changes)``, remembering ``changes`` until the server read them
        back: an error half-way leaves them in flight for :meth:`own_values`."""
        self._in_flight.update({name: int(value) for name, value in changes.items()})
        read_back = target.apply(changes)
        self._in_flight.clear()
        return read_back

    def own_values(self, in_force: Mapping[str, int], applied: Mapping[str, int]) -> dict[str, int]:
        """The values of ``in_force`` that differ from ``applied`` because the agent sent
        them (a change that failed half-way): the agent's own, not a DBA's."""
        own = {
            name: value
            for name, value in in_force.items()
            if applied.get(name) != value and self._in_flight.get(name) == value
        }
        if own:
            logger.info("the server runs %s: the agent's own change, sent before an error", own)
            for name in own:
                del self._in_flight[name]
        return own
