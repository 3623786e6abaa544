"""The settings of the pooltune climber, checked when they are built.

Defaults are tuned on ``benchmarks.climb``; what each one does in the search is in
docs/climber.md. A bad value raises ``ValueError`` naming the field, so an agent's config
fails at start-up instead of running a climber that misbehaves.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PooltuneConfig:
    """Parameters of :class:`PooltuneClimber` (defaults tuned on ``benchmarks.climb``)."""

    #: Samples discarded after each knob change (MariaDB: one 2-s sample is enough).
    lag_samples: int = 1
    #: After the lag, samples the target flags as still taking the change in (PgBouncer: a
    #: pool still opening server connections) are discarded too, at most this many after
    #: one change (docs/climber.md, "Per sample").
    settling_samples: int = 20
    #: Samples per probe before the first test, at most per visit before the reference is
    #: measured again (A/B/A), and the most a probe may take.
    min_samples: int = 2
    visit_samples: int = 3
    max_samples: int = 6
    #: z of the noise test and relevance threshold (relative throughput, log scale).
    z: float = 2.0
    epsilon: float = 0.03
    #: Thread economy: a smaller pool ties with the best size if its loss, plus ``tie_z``
    #: standard errors (one-sided: the tie must be shown), stays inside this; the smallest
    #: one taken is measured again on fresh samples (docs/climber.md, "Thread economy").
    economy_epsilon: float = 0.045
    tie_z: float = 0.75
    #: Showing a tie takes more samples than telling a clear gain: the most a probe of the
    #: economy walk may take, and per visit.
    economy_samples: int = 20
    economy_visit_samples: int = 5
    #: The walk starts no probe after this many steps (samples), nor once the climb has
    #: run ``settle_steps``: economy is worth less than settling.
    economy_budget: int = 80
    settle_steps: int = 165
    #: Prior for the per-sample noise (coefficient of variation) and its weight in samples;
    #: the noise learnt in earlier climbs counts as at most ``noise_memory`` samples.
    prior_cv: float = 0.05
    prior_weight: float = 4.0
    noise_memory: float = 30.0
    #: Inflation of standard errors for autocorrelated samples.
    autocorrelation_inflation: float = 1.3
    #: The noise between visits is taken at most this many times the noise between
    #: neighbouring samples (the slow part of the noise is bounded; a jump is a change).
    slow_noise_cap: float = 2.0
    #: Steps in log2 units: first step on a cold start, cap, stop, growth per success.
    initial_step: float = 0.5
    max_step: float = 2.0
    min_step: float = 0.15
    expand: float = 2.0
    #: A probe below the best size may cost at most this share of the start's level in
    #: the worst case (throughput falling in proportion to the pool): it bounds steps down.
    max_probe_loss: float = 0.4
    #: With a plausible range from the service, the first step is its width (log2)
    #: divided by this.
    range_steps: float = 6.0
    #: An equal probe above the candidate closes the search upwards only if it was at
    #: most this far (log2); farther, the peak may lie between the two.
    equal_bracket_step: float = 0.5
    #: Only samples this recent count for comparisons (drift); the reference is measured
    #: again when its last sample is older than ``fresh_steps``.
    recent_window: int = 40
    fresh_steps: int = 10
    #: The noise is estimated from the samples of the last ``noise_window`` steps.
    noise_window: int = 60
    #: Roll back when a probe's first samples are this far (relative) below the best; a
    #: best that fell as far with it means the server fell.
    rollback_drop: float = 0.15
    #: During the search: the reference moved by more than ``min_change`` and ``change_z``
    #: standard errors from its visits of the last ``change_window`` steps: a change. For
    #: as many steps after the server fell, a gain counts only on A/B/A.
    change_window: int = 40
    change_z: float = 3.0
    #: Hold: CUSUM slack and threshold (in noise units), winsorising clip, baseline EWMA,
    #: and the smallest relative change worth detecting.
    cusum_slack: float = 1.0
    cusum_threshold: float = 10.0
    cusum_clip: float = 3.0
    baseline_alpha: float = 0.05
    #: Hold: EWMA weight of the noise learned around the held level.
    hold_noise_alpha: float = 0.02
    min_change: float = 0.2
    #: Hold: a change of the connection count by this factor for 2 samples is a change.
    connections_change: float = 1.3
    #: Search the other knobs after the size, with this first step (log2: ×4), downwards
    #: first (docs/climber.md, "Secondary knobs").
    tune_secondary: bool = True
    secondary_step: float = 2.0
    #: The other knobs' gains are broad: their search stops at this step (log2).
    secondary_min_step: float = 0.5
    #: A value other than the default is kept only if a re-test on fresh samples (default,
    #: value, default, …; at most this many samples of each) shows its gain at this z: the
    #: re-test is a second, independent test of a gain the search already measured, so
    #: noise must pass both (docs/climber.md, "Secondary knobs").
    confirm_samples: int = 16
    confirm_z: float = 1.5
    #: Throughput below which the climber waits instead of climbing (per second), once
    #: ``suspend_after`` samples in a row fell there with connections open.
    min_throughput: float = 0.0
    suspend_after: int = 3
    #: A stall (connections, no throughput) counts against the tuple in force at this
    #: share of the best tuple's level.
    stall_level: float = 0.1
    #: Size ``n`` below the cores is not probed when the server uses more than this many
    #: times ``n`` cores at the best tuple (it would cap its CPU). 0 disables.
    cpu_cap_margin: float = 1.1
    #: ... unless the lock signal (``Sample.lock_waits``: MariaDB's row-lock waits per
    #: statement, PgBouncer's share of backends waiting on a lock) reached this there:
    #: threads queueing on row locks burn CPU on the contention itself, and fewer can win;
    #: more only queue, so the far end is not looked at (docs/climber.md, "Search"). 0
    #: disables both.
    lock_contention: float = 0.2
    #: The server uses less than this share of its cores at a pool size: the pool is not
    #: what limits it (statements wait off the CPU), so a loss measured a small step up is
    #: looked past once, as a tie is (docs/climber.md, "Search"). 0 disables.
    idle_cpu_share: float = 0.5
    #: One look at a pool of one group per connection, past a shelf, only where the server
    #: uses less than this share of its cores at the best size (docs/climber.md, "Search",
    #: the far end). 0 disables the look.
    far_end_cpu_share: float = 0.9

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise ValueError("; ".join(problems))


_NON_NEGATIVE = (
    "lag_samples settling_samples z epsilon economy_epsilon tie_z prior_weight noise_memory "
    "cusum_slack cusum_clip min_throughput cpu_cap_margin lock_contention idle_cpu_share "
    "change_z slow_noise_cap confirm_z far_end_cpu_share"
).split()
_POSITIVE = (
    "min_samples prior_cv cusum_threshold min_change suspend_after recent_window fresh_steps "
    "noise_window change_window confirm_samples economy_budget settle_steps"
).split()
_FRACTIONS = "rollback_drop stall_level baseline_alpha hold_noise_alpha max_probe_loss".split()


def _problems(config: PooltuneConfig) -> list[str]:
    """Every rule ``config`` breaks, each naming its field(s)."""
    problems = [f"{name} must be ≥ 0" for name in _NON_NEGATIVE if getattr(config, name) < 0]
    problems += [f"{name} must be > 0" for name in _POSITIVE if getattr(config, name) <= 0]
    problems += [
        f"{name} must be between 0 and 1 (exclusive)"
        for name in _FRACTIONS
        if not 0 < getattr(config, name) < 1
    ]
    if not config.min_samples <= config.visit_samples <= config.max_samples:
        problems.append("samples must satisfy min_samples ≤ visit_samples ≤ max_samples")
    if not config.min_samples <= config.economy_visit_samples <= config.economy_samples:
        problems.append(
            "samples must satisfy min_samples ≤ economy_visit_samples ≤ economy_samples"
        )
    if config.confirm_samples < config.min_samples:
        problems.append("confirm_samples must be ≥ min_samples")
    if not 0 < config.min_step <= config.initial_step <= config.max_step:
        problems.append("steps must satisfy 0 < min_step ≤ initial_step ≤ max_step")
    if config.expand <= 1 or config.autocorrelation_inflation < 1:
        problems.append("expand must be > 1 and autocorrelation_inflation ≥ 1")
    if config.secondary_min_step <= 0:
        problems.append("secondary_min_step must be > 0")
    if config.range_steps <= 0 or config.equal_bracket_step <= 0 or config.secondary_step <= 0:
        problems.append("range_steps, equal_bracket_step and secondary_step must be > 0")
    if config.connections_change <= 1:
        problems.append("connections_change must be > 1")
    return problems
