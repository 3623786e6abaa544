"""Workload-change detection: during the search, a tuple measured again moved; while the
pooltune climber holds its tuple, a CUSUM.

While holding: a robust two-sided CUSUM on log throughput against a slowly adapting
baseline, so drift of ±20% over tens of minutes is followed rather than mistaken for a
change, and a check on the connection count. Why these choices: docs/climber.md ("Hold").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Evidence, as_readings
from agents.climber.pooltune.stats import without_extreme


class Move(NamedTuple):
    """A tuple's latest visit moved from its earlier ones: by ``shift`` (log), and why."""

    shift: float
    reason: str


def moved(evidence: Evidence, knobs: Mapping[str, int]) -> Move | None:
    """The latest visit at ``knobs`` moved from its earlier visits (inside ``change_window``)
    by more than ``min_change`` and the noise, even without any one extreme sample: the
    workload changed during the search."""
    cfg = evidence.config
    visits = evidence.visits(knobs, cfg.change_window)
    if len(visits) < 2 or len(visits[-1]) < cfg.min_samples:
        return None
    latest = visits[-1]
    earlier = [level for visit in visits[:-1] for level in visit]
    if len(earlier) < cfg.min_samples:
        return None
    trims = [
        (earlier, latest),
        (without_extreme(earlier, highest=True), latest),
        (without_extreme(earlier, highest=False), latest),
    ]
    if len(latest) >= 3:
        trims += [
            (earlier, without_extreme(latest, highest=True)),
            (earlier, without_extreme(latest, highest=False)),
        ]
    else:
        # Two samples: each of them must have moved, the same way.
        base = evidence.location(earlier)
        shifts = [level - base for level in latest]
        if min(abs(x) for x in shifts) <= math.log1p(cfg.min_change) or (
            max(shifts) > 0 > min(shifts)
        ):
            return None
    for trimmed_earlier, trimmed_latest in trims:
        difference, stderr = evidence.paired_difference(
            as_readings(trimmed_earlier), as_readings(trimmed_latest)
        )
        threshold = max(math.log1p(cfg.min_change), cfg.change_z * stderr)
        if abs(difference) <= threshold:
            return None
    shift = evidence.location(latest) - evidence.location(earlier)
    direction = "rose" if shift > 0 else "fell"
    return Move(shift, f"throughput at {dict(knobs)} {direction} between visits during the search")


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
