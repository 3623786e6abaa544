"""The agent loop's answers to faults, mixed into :class:`agents.loop.AgentLoop`.

- A server restart: nothing of the agent's is in force any more (the server runs its startup
  values, which are no DBA's change); the state file keeps the tuple from before the first
  change, which a stop still restores; the agent checks the new server process and profiles
  again.
- A clock step on the database host: no delta spans it; a profile in progress starts afresh.
- The agent's own change that failed half-way: its values are adopted as the agent's.
- A state directory that refuses the original tuple (full, read-only): phase ``blocked``,
  no knob changes, the reason in the log and the status; every sample tries again.

docs/agent.md, "Faults".
"""

from __future__ import annotations

import logging
from typing import Any

from agents.approval import ApprovalGate, Outcome
from agents.phase import GATED_PHASES, Phase
from agents.server_watch import ServerEvent, ServerWatch
from agents.service_client import Uploader
from agents.state import OriginalTupleFile, StatusFile
from agents.status import Counters
from agents.targets.base import Snapshot, Target

logger = logging.getLogger("agents.loop")


class FaultHandling:
    """The fault responses of the loop; the attributes below are the loop's."""

    phase: Phase
    applied: dict[str, int]
    counters: Counters
    target: Target
    gate: ApprovalGate | None
    original: OriginalTupleFile
    status_file: StatusFile
    uploader: Uploader
    watch: ServerWatch
    _previous: Snapshot | None

    def _enter_profiling(self) -> None:
        raise NotImplementedError

    def _follow(self, outcome: Outcome) -> None:
        raise NotImplementedError

    def _server_event(self, snapshot: Snapshot, in_force: dict[str, int]) -> bool:
        """Handle a restart or a clock step seen in ``snapshot`` (True: the sample is used
        up), and take the agent's own half-applied values into :attr:`applied`."""
        event = self.watch.observe(snapshot)
        if event is ServerEvent.RESTART:
            logger.warning("the server restarted; its tuple is now %s: profiling again", in_force)
            self.counters.server_restarts += 1
            self.applied = dict(in_force)
            self._previous = None  # read with the old process's pid: not a profile's start
            if self.phase not in GATED_PHASES:  # a request or a quiet period stands
                self._enter_profiling()
            self.target.check()  # a new server process: its pid, plugins and collectors
            return True
        if event is ServerEvent.CLOCK_STEP:
            if self.phase is Phase.PROFILING:
                self._enter_profiling()
            return True
        self.applied.update(self.watch.own_values(in_force, self.applied))
        return False

    def _original_saved(self) -> bool:
        """No change unless the tuple to put back is on disk: else phase ``blocked``."""
        if self.original.ensure_saved(self.target.engine, self.applied):
            return True
        self.phase = Phase.BLOCKED
        return False

    def _blocked_sample(self) -> None:
        """Blocked: once the original is on disk, profile again (or, in approve mode, apply
        the approved start that was blocked)."""
        if self._original_saved():
            self._follow(Phase.PROFILING if self.gate is None else Phase.AWAITING_APPROVAL)

    def status(self) -> dict[str, Any]:
        raise NotImplementedError

    def _write_status(self) -> None:
        """The loop's status plus the faults' fields (why no knob may change, reports held
        in memory), to the status file or its fallback; never raises."""
        document = self.status()
        document["state_error"] = self.original.problem
        document["spool_held_in_memory"] = self.uploader.spool.held
        self.status_file.write(document)
