"""The suite's scenarios: which family, noise, start and seed each run uses.

A scenario is a value: its seed sequence fixes the curve and the noise, so every climber
runs the same scenarios against exactly the same noise (DESIGN.md, "Benchmark vocabulary").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

CLIMBER_NAMES = ("pooltune", "reference", "dotnet", "hellerstein", "static")
#: The first suite: formula curves A and B, and the simulator's workloads.
BASE_FAMILIES = ("A", "B", "cpu", "io", "lock", "light")
#: Real-world behaviour (issue 15): stalls and heavy tails, wide plateaus, an optimum that
#: moves during the search, secondary knobs with no effect and with a large one, a cliff.
NOISY_FAMILIES = ("stall", "plateau", "moving", "noeffect", "secondary", "cliff")
#: Replays of the real curves of the measured MariaDB datasets (benchmarks.climb.replay).
REAL_FAMILY = "real"
#: Replays of the measured PgBouncer dataset: ``default_pool_size`` under the same climber
#: (issue 18), scored on lines of its own, not in issue 15's checks.
PGBOUNCER_FAMILY = "pgbouncer"
#: Replays of the MariaDB cases measured by paired 2-s visits (``mariadb-2core-v4``'s
#: finished cases, read from their folders while the dataset is being measured).
PAIRED_FAMILY = "real-v4"
REPLAY_FAMILIES = (REAL_FAMILY, PGBOUNCER_FAMILY, PAIRED_FAMILY)
#: The most real cases of one family a quick (smoke) run replays.
QUICK_REAL_CASES = 8
#: The MariaDB families: what issue 15's checks read.
MARIADB_FAMILIES = BASE_FAMILIES + NOISY_FAMILIES + (REAL_FAMILY,)
FAMILIES = MARIADB_FAMILIES + (PGBOUNCER_FAMILY, PAIRED_FAMILY)
SYNTHETIC_FAMILIES = BASE_FAMILIES + NOISY_FAMILIES
#: Plateau curves: thread economy is scored on them.
PLATEAU_FAMILIES = frozenset({"B", "light", "plateau"})
#: Families whose secondary knobs change throughput (the others must leave them alone).
SECONDARY_MATTERS = frozenset({"cpu", "io", "lock", "light", "secondary"})
CVS = (0.02, 0.05, 0.10, 0.15)
#: Cold starts of the first suite: size 1, the core count (the engine default), 128.
STARTS = ("left", "cores", "right")
#: Cold starts of the new families: also four times the cores.
WIDE_STARTS = ("left", "cores", "4cores", "right")
COLD_STARTS = frozenset(WIDE_STARTS)
#: Warm starts: within ±30% of the optimum, and wrong ones (4–5× and 0.25× the optimum),
#: each with a plausible range around the start.
WARM_STARTS = ("warm", "warm-high", "warm-low")
SAMPLES_PER_MINUTE = 30


@dataclass(frozen=True, slots=True)
class Scenario:
    family: str
    cv: float
    start: str
    seed: int
    samples: int
    switch: bool = False
    #: The real case replayed (family "real" only).
    case: str = ""

    @property
    def seed_sequence(self) -> list[int]:
        sequence = [
            self.seed,
            FAMILIES.index(self.family),
            int(round(self.cv * 1000)),
            int(self.switch),
        ]
        if self.case:
            sequence.append(sum(ord(c) * (i + 1) for i, c in enumerate(self.case)))
        return sequence

    @property
    def cold(self) -> bool:
        return self.start in COLD_STARTS


def build_suite(seeds: int, *, quick: bool, real_cases: Mapping[str, str]) -> list[Scenario]:
    """Every scenario: the first suite as before, the new families with four starts and a
    noise sweep, wrong warm starts, and every real case (id → its replay family) from every
    cold and warm start (a quick run: every few, :data:`QUICK_REAL_CASES` per family)."""
    length = 160 if quick else 300
    replays = sorted(real_cases.items())
    if quick:
        kept: list[tuple[str, str]] = []
        for family in REPLAY_FAMILIES:
            mine = [item for item in replays if item[1] == family]
            kept += mine[:: max(1, math.ceil(len(mine) / QUICK_REAL_CASES))]
        replays = kept
    suite: list[Scenario] = []
    for seed in range(seeds):
        for family in BASE_FAMILIES:
            # Main condition: CV 5%, every start for every seed.
            for start in STARTS:
                suite.append(Scenario(family, 0.05, start, seed, length))
            # Noise sweep: starts rotate over seeds.
            for cv in CVS:
                if cv != 0.05:
                    suite.append(Scenario(family, cv, STARTS[seed % 3], seed, length))
            for warm in WARM_STARTS:
                suite.append(Scenario(family, 0.05, warm, seed, length))
            suite.append(Scenario(family, 0.05, STARTS[seed % 3], seed, 2 * length, switch=True))
            if not quick:
                suite.append(
                    Scenario(family, 0.15, STARTS[seed % 3], seed, 2 * length, switch=True)
                )
        for family in NOISY_FAMILIES:
            for start in WIDE_STARTS:
                suite.append(Scenario(family, 0.05, start, seed, length))
            for cv in CVS:
                if cv != 0.05:
                    suite.append(Scenario(family, cv, WIDE_STARTS[seed % 4], seed, length))
        for case, family in replays:
            for start in WIDE_STARTS + WARM_STARTS:
                suite.append(Scenario(family, 0.0, start, seed, length, case=case))
    return suite
