"""Workload-change detection while the pooltune climber holds its tuple.

A robust two-sided CUSUM on log throughput against a slowly adapting baseline, so drift of
±20% over tens of minutes is followed rather than mistaken for a change, and a check on the
connection count. Why these choices: docs/climber.md ("Hold").
"""

from __future__ import annotations

import math

from agents.climber.pooltune.config import PooltuneConfig


class ChangeDetector:
    """Fed one level per sample while holding; says when the workload changed."""

    def __init__(
        self, config: PooltuneConfig, *, baseline: float | None, connections: float | None
    ) -> None:
        self.config = config
        #: The held level of log throughput (follows slow drift).
        self.baseline = baseline
        self._connections = connections
        self._connection_strikes = 0
        #: Variance of log throughput around the held level (winsorised EWMA).
        self._variance: float | None = None
        self._high = 0.0
        self._low = 0.0

    def resume(self) -> None:
        """Load is back after a pause: what was summed before says nothing now."""
        self._high = self._low = 0.0

    def observe(self, level: float, connections: int, noise: float) -> str | None:
        """Take one sample (``noise``: the climber's per-sample noise of a level); the
        reason when the workload changed, else None."""
        if self.baseline is None:
            self.baseline = level
            self._connections = float(connections)
            return None
        if self._connections is None:
            self._connections = float(connections)
        self._count_connection_strike(connections)
        self._follow(level, noise)
        if self._connection_strikes >= 2:
            return f"connections moved from {self._connections:.0f} to {connections}"
        if max(self._high, self._low) > self.config.cusum_threshold:
            direction = "rose" if self._high > self._low else "fell"
            return f"throughput {direction} away from the held level"
        return None

    def _count_connection_strike(self, connections: int) -> None:
        """A strike per sample whose connection count moved by ``connections_change``."""
        assert self._connections is not None
        limit = self.config.connections_change
        ratio = max(connections, 1) / max(self._connections, 1.0)
        if ratio > limit or ratio < 1 / limit:
            self._connection_strikes += 1
        else:
            self._connection_strikes = 0

    def _follow(self, level: float, noise: float) -> None:
        """Sum the clipped residual into both CUSUMs and let the baseline follow drift."""
        cfg = self.config
        assert self.baseline is not None
        noise = max(noise, math.log1p(cfg.min_change) / cfg.cusum_clip)
        if self._variance is None:
            self._variance = noise**2
        # The noise seen while holding: probes are short, and a real server also wanders
        # over tens of seconds, which the short probes never see.
        noise = max(noise, math.sqrt(self._variance))
        residual = max(-cfg.cusum_clip, min(cfg.cusum_clip, (level - self.baseline) / noise))
        self._variance += cfg.hold_noise_alpha * ((residual * noise) ** 2 - self._variance)
        self._high = max(0.0, self._high + residual - cfg.cusum_slack)
        self._low = max(0.0, self._low - residual - cfg.cusum_slack)
        # A clipped residual keeps spikes from dragging the baseline.
        self.baseline += cfg.baseline_alpha * residual * noise
