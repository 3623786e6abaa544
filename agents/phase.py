"""The agent's phases, as ``pooltune-agent status`` shows them (docs/agent.md, "The loop")."""

from __future__ import annotations

import enum


class Phase(enum.StrEnum):
    STARTING = "starting"
    PROFILING = "profiling"
    CLIMBING = "climbing"
    HOLDING = "holding"
    #: A DBA set a value outside the agent's bounds: change nothing until it is back.
    PAUSED = "paused"
    #: The original tuple cannot be saved (state directory full or read-only): change
    #: nothing until it can.
    BLOCKED = "blocked"
    #: ``mode = "approve"``: a request waits for an admin; nothing changes meanwhile.
    AWAITING_APPROVAL = "awaiting-approval"
    #: ``mode = "approve"``: the request was rejected, expired or superseded; nothing changes
    #: until the agent asks again.
    IDLE = "idle"
    #: ``mode = "recommend"``: the recommendation is reported; no knob ever changes.
    RECOMMENDED = "recommended"
    STOPPED = "stopped"


#: Phases that wait on a person (or only report): the workload is watched, never tuned.
GATED_PHASES = frozenset({Phase.AWAITING_APPROVAL, Phase.IDLE, Phase.RECOMMENDED})
