"""pooltune's own climber: noise-aware line searches in log space, then hold and watch.

Design and rationale: docs/climber.md ("pooltune").
"""

from __future__ import annotations

from agents.climber.pooltune.climber import PooltuneClimber, PooltuneState
from agents.climber.pooltune.config import PooltuneConfig

__all__ = ["PooltuneClimber", "PooltuneConfig", "PooltuneState"]
