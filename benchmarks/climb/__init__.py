"""Climber benchmark: every climber on the same suite of curves, noise and starts.

Run ``python -m benchmarks.climb`` (``--quick`` for a smoke run, ``--seeds N``,
``--workers N``, ``--climbers``, ``--families``). Vocabulary from DESIGN.md ("Benchmark
vocabulary"):

- First suite: curve A (universal scalability law, rise then fall), curve B (rise then
  plateau with a knee), and simulator workloads (``agents.sim``): CPU-bound, IO-bound,
  lock-bound, light load; hosts of 2–32 cores; knob space = MariaDB's tuned knobs. Noise:
  multiplicative, CV 2/5/10/15%, AR(1) 0.5, rare 0.5× stalls, one-sample lag after each
  change, slow drift of ±20% over 30 minutes. Starts: size 1, the core count (the engine
  default), 128; warm starts within ±30% of the optimum, and wrong ones at 4–5× and 0.25×
  of it, each with a plausible range ±50% around the start.
- Issue 15's families (:mod:`benchmarks.climb.curves`, :mod:`benchmarks.climb.stalls`),
  started also at 4× the cores: ``stall`` (stalls to 0–40% on 2–33% of the samples, heavy
  tails), ``plateau`` (flat over 3–8× of sizes), ``moving`` (the optimum moves 6–45 samples
  in), ``noeffect`` (secondary knobs that do nothing, under stalls), ``secondary`` (a stall
  limit that multiplies throughput by 1.4–2.6 at a few tens of ms), ``cliff`` (throughput
  halves past twice the best size); and ``real``, every pool-size sweep of
  datasets/mariadb-2core-v1 and -v2 replayed (:mod:`benchmarks.climb.replay`).
- ``pgbouncer``: every ``default_pool_size`` sweep of datasets/pgbouncer-2core-v1 replayed
  the same way, PgBouncer's knob space bounded by the largest size the sweep measured (the
  pool rule's ceiling); "cores" is then the engine default 20. Scored on lines of its own
  with issue 18's bars (≥ 0.95 of the best where the sweep differs, ≤ 2× the smallest tied
  size where it is flat, safety from the default ≥ 0.8), not in issue 15's checks.
- ``real-v4``: the finished cases of datasets/mariadb-2core-v4 (paired 2-s visits, twenty
  per size, read from their case folders while the dataset is measured) replayed the same
  way, the drift moving at the sweep's own pass length; checked with the real family's bars
  on lines of their own, outside issue 15's per-family checks.
- The noise is a function of the scenario's seed and the sample index only: every climber
  sees the same sequence.
- ``python -m benchmarks.climb.resolvable`` (:mod:`benchmarks.climb.resolvable`): no
  climber, a bound: successive halving over each real case's measured sizes within a
  climb's sample budget, scored on the real-curve bars, its own cost beside it.
- Scores use the noise-free throughput of the tuple in force relative to the best of the
  tuple space at that moment (:mod:`benchmarks.climb.run`, :mod:`benchmarks.climb.metrics`):
  T95 = the first sample after which throughput stays ≥ 95% of peak for 90% of the next
  30 samples (median over runs, unreached counted as never, and the share reaching it);
  reached-and-stayed = T95 reached and the final quality ≥ 0.95; final quality = mean
  over the last 60 samples; regret = mean of 1 − throughput/peak; safety = worst sample /
  throughput at the start tuple; thread economy (plateau curves) = final size / smallest
  size reaching 95% of the best; changes/min after T95; re-convergence = T95 counted from a
  workload switch; false restarts per hour of stationary runs.
"""

from benchmarks.climb.cli import main
from benchmarks.climb.metrics import T95_HOLD, T95_SHARE, T95_WINDOW, t95
from benchmarks.climb.scenarios import CLIMBER_NAMES, FAMILIES

__all__ = ["CLIMBER_NAMES", "FAMILIES", "T95_HOLD", "T95_SHARE", "T95_WINDOW", "main", "t95"]
