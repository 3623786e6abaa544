"""Replay of the real curves of the measured datasets: MariaDB's (family "real",
``datasets/mariadb-2core-v1`` and ``mariadb-2core-v2``), PgBouncer's (family "pgbouncer",
``pgbouncer-2core-v1``: ``default_pool_size`` in front of PostgreSQL) and the finished cases
of ``mariadb-2core-v4`` (family "real-v4", paired 2-s visits, read from the case folders
while the dataset is being measured); a case is named ``<dataset>:<workload id>``, its pool
size is its engine's (catalog ``POOL_SIZE_KNOB``).

Every size of a case keeps its kept 1-s samples, three (PgBouncer: four) per visit, visited
three times minutes apart. The replay of one 2-s sample at pool size ``n``:

- a 2-s sample is the mean of two 1-s samples drawn with replacement from the size's nine
  (an IO-bound size that stalled in one second of the sweep shows a half-empty sample);
- between two measured sizes, a 1-s sample is drawn at one quantile of both sizes' samples
  and the two values are interpolated with the weight of ``n``'s position in log size: the
  mean is interpolated as the truth is, a stall (a low quantile) stays a stall, and a size
  between a slow and a fast one reads in between, as a server does — not one or the other
  sample by sample, a two-mode noise whose median is the majority size's;
- the drift between visits is real: each visit's common factor (the median over the sizes
  of the visit's mean over the size's mean) is divided out of its samples, and the replay
  moves from visit to visit every ~64 s (one pass of the sweep), interpolating the factor
  in log, so the same size reads higher or lower minutes apart as it did on the server;
- the truth the run is scored on is each size's mean (drift divided out), interpolated the
  same way; sizes above the largest measured take its samples. The secondary knobs were
  swept at one size in a few cases only, so here they have no effect.

A v4 case visited every size twenty times (a pass), each visit 2 s with the first second
dropped, the default between every two; a visit is one pass, so its drift is the pass's
common factor and the replay moves from pass to pass at the pace the sweep did. Every kept
1-s sample is replayed, those of visits the sweep's label set aside (a stall) too: a stall
is what the climber meets on such a server. The truth and the labels are the sweep's own,
read side by side with the default (``case.json``'s points; :func:`agents.sweep.curve_points`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from agents import knobs
from agents.knobs import POOL_SIZE_KNOB, Engine
from agents.sweep import best_value, smallest_within_noise, within_noise
from agents.sweep.stored import sweep_from_json
from benchmarks.climb.scenarios import PAIRED_FAMILY, PGBOUNCER_FAMILY, REAL_FAMILY
from benchmarks.live.cases import SAMPLE_S
from trainer.sources.datasets import bundled, datasets_dir, load_dataset, row_extras

#: The measured datasets replayed; one not assembled yet (no manifest) is skipped.
DATASETS = ("mariadb-2core-v1", "mariadb-2core-v2", "pgbouncer-2core-v1")
#: Datasets still being measured whose finished cases are replayed from their folders.
CASE_FOLDERS = ("mariadb-2core-v4",)
#: Samples per pass of the sweep (9 sizes × (5 s + 2 s dropped) ≈ 64 s of 2-s samples).
VISIT_SAMPLES = 32
#: The size a MariaDB dataset's "differs beyond the noise" compares with the best.
DIFFERS_SIZE = 2


@dataclass(frozen=True, slots=True)
class RealCase:
    workload_id: str
    cores: int
    clients: int
    sizes: tuple[int, ...]
    #: Per size: the kept 1-s samples with their visit's drift divided out, ascending.
    samples: tuple[tuple[float, ...], ...]
    #: Per size: the mean of those samples (the truth).
    means: tuple[float, ...]
    cpu_cores: tuple[float, ...]
    latency_ms: tuple[float, ...]
    #: Common drift factor of each visit.
    drift: tuple[float, ...]
    #: The dataset's verdicts: size 2 below the best beyond the noise; the smallest size
    #: within the noise of the best.
    differs: bool
    tied_size: int
    #: The lock signal in the case's profile (at the default size; :func:`_lock_signal`):
    #: every replayed sample shows it, the sweep did not keep it per size.
    lock_waits: float = 0.0
    engine: Engine = Engine.MARIADB
    #: 2-s samples per visit (a pass of the sweep): how fast the replay's drift moves.
    visit_samples: int = VISIT_SAMPLES
    #: The family, where not the engine's (v4's paired cases).
    replay_family: str = ""
    #: Per size: whether the target saw the pool stall in each of ``samples`` (same
    #: order); empty where the sweep did not record it (:attr:`SweepSample.stalled`).
    stalls: tuple[tuple[bool, ...], ...] = ()

    @property
    def knob(self) -> str:
        """The engine's pool size knob, the one the sweep varied."""
        return POOL_SIZE_KNOB[self.engine]

    @property
    def family(self) -> str:
        """The benchmark family the case is replayed in."""
        if self.replay_family:
            return self.replay_family
        return PGBOUNCER_FAMILY if self.engine is Engine.PGBOUNCER else REAL_FAMILY

    def weights(self, size: float) -> tuple[int, int, float]:
        """Indices of the measured sizes around ``size`` and the upper one's weight."""
        grid = self.sizes
        if size <= grid[0]:
            return 0, 0, 0.0
        if size >= grid[-1]:
            last = len(grid) - 1
            return last, last, 0.0
        upper = next(i for i, s in enumerate(grid) if s >= size)
        lower = upper - 1
        if grid[upper] == size:
            return upper, upper, 0.0
        weight = (math.log(size) - math.log(grid[lower])) / (
            math.log(grid[upper]) - math.log(grid[lower])
        )
        return lower, upper, weight

    def quantile(self, point: int, rank: float) -> float:
        """The sample of measured size ``point`` at ``rank`` (0 ≤ rank < 1): every kept
        sample equally likely for a uniform rank."""
        pool = self.samples[point]
        return pool[min(int(rank * len(pool)), len(pool) - 1)]

    def stalled_at(self, point: int, rank: float) -> bool | None:
        """Whether the sample :meth:`quantile` draws at ``rank`` stalled (None: unknown)."""
        if not self.stalls:
            return None
        flags = self.stalls[point]
        return flags[min(int(rank * len(flags)), len(flags) - 1)]

    def truth(self, size: float) -> float:
        lower, upper, weight = self.weights(size)
        return (1.0 - weight) * self.means[lower] + weight * self.means[upper]

    def peak(self) -> float:
        return max(self.means)


@cache
def real_cases() -> dict[str, RealCase]:
    """Every case of the assembled datasets with a pool-size sweep, by
    ``<dataset>:<workload id>``."""
    cases: dict[str, RealCase] = {}
    for name in filter(bundled, DATASETS):
        cases.update(_dataset_cases(name))
    for name in CASE_FOLDERS:
        cases.update(_folder_cases(name))
    return cases


def replay_families() -> dict[str, str]:
    """Every replayed case's id and the family it is replayed in."""
    return {case_id: case.family for case_id, case in real_cases().items()}


def _dataset_cases(name: str) -> dict[str, RealCase]:
    dataset = load_dataset(name)
    workloads = dataset.workloads.set_index("workload_id")
    engine = Engine(str(workloads["engine"].iloc[0]))
    knob = POOL_SIZE_KNOB[engine]
    curves = dataset.curves[dataset.curves["knob"] == knob]
    cases: dict[str, RealCase] = {}
    for workload_id, points in curves.groupby("workload_id"):
        points = points.sort_values("value")
        row = workloads.loc[workload_id]
        per_size = [_visits(p.throughput_samples, p.visit_means) for p in points.itertuples()]
        drift = _common_drift(per_size)
        samples = tuple(
            tuple(sorted(x / drift[v] for v, visit in enumerate(visits) for x in visit))
            for visits in per_size
        )
        cases[f"{name}:{workload_id}"] = RealCase(
            workload_id=f"{name}:{workload_id}",
            cores=int(row["cpu_count"]),
            clients=int(row["clients"]),
            sizes=tuple(int(v) for v in points["value"]),
            samples=samples,
            means=tuple(float(np.mean(s)) for s in samples),
            cpu_cores=tuple(float(c) for c in points["server_cpu_cores"]),
            latency_ms=tuple(float(x) for x in points["latency_ms"].fillna(0.0)),
            drift=tuple(drift),
            differs=bool(row["differs_beyond_noise"]),
            tied_size=int(row[f"best_{knob}"]),
            lock_waits=_lock_signal(row, engine),
            engine=engine,
        )
    return cases


def _folder_cases(name: str) -> dict[str, RealCase]:
    """The finished cases (status ``done``) under ``datasets/<name>/cases/``, each from its
    ``case.json``: the pool size's sweep, every sample, the host and the profile."""
    cases: dict[str, RealCase] = {}
    for path in sorted((datasets_dir() / name / "cases").glob("*/case.json")):
        record = json.loads(path.read_text())
        if record.get("status") != "done":
            continue
        case = _paired_case(f"{name}:{record['workload_id']}", record)
        if case is not None:
            cases[case.workload_id] = case
    return cases


def _paired_case(case_id: str, record: Mapping[str, Any]) -> RealCase | None:
    """One stored case as a replay (None without a pool-size sweep)."""
    knob = POOL_SIZE_KNOB[Engine.MARIADB]
    if knob not in record["sweeps"]:
        return None
    sweep = sweep_from_json(record["sweeps"][knob])
    definition = record["definition"]
    cores = 1 if definition["workload"].get("pinned") else int(record["host"]["cpu_count"])
    points = sorted(sweep.points, key=lambda p: p.value)
    sizes = [p.value for p in points]
    passes = sorted({s.repeat for s in sweep.samples})
    kept: dict[tuple[int, int], list[float]] = {}
    flags: dict[tuple[int, int], list[bool | None]] = {}
    times: dict[int, list[float]] = {}
    for s in sweep.samples:
        times.setdefault(s.repeat, []).append(s.t_s)
        if not s.discarded:
            kept.setdefault((s.value, s.repeat), []).append(s.throughput)
            flags.setdefault((s.value, s.repeat), []).append(s.stalled)
    per_size = [[kept.get((size, r), []) for r in passes] for size in sizes]
    drift = _common_drift(per_size)
    samples = []
    stalls: list[tuple[bool | None, ...]] = []
    for point, visits in zip(points, per_size, strict=True):
        size_flags = [f for r in passes for f in flags.get((point.value, r), [])]
        level = [x / drift[v] for v, visit in enumerate(visits) for x in visit]
        # The truth is the paired reading; the replayed noise keeps its own shape.
        scale = point.mean / float(np.mean(level)) if level and point.mean > 0 else 1.0
        ordered = sorted(zip(level, size_flags, strict=True), key=lambda pair: pair[0])
        samples.append(tuple(x * scale for x, _ in ordered))
        stalls.append(tuple(f for _, f in ordered))
    recorded = all(f is not None for size_flags in stalls for f in size_flags)
    spans = [max(times[r]) - min(times[r]) for r in passes]
    default = knobs.knob(Engine.MARIADB, knob).default_for(cores)
    best = best_value(points)
    by_value = {p.value: p for p in points}
    profile = sweep.baseline_profile or sweep.profile
    return RealCase(
        workload_id=case_id,
        cores=cores,
        clients=int(definition["clients"]),
        sizes=tuple(sizes),
        samples=tuple(samples),
        means=tuple(float(np.mean(s)) if s else 0.0 for s in samples),
        cpu_cores=tuple(p.server_cpu or 0.0 for p in points),
        latency_ms=tuple(float(np.mean(p.latencies_ms)) if p.latencies_ms else 0.0 for p in points),
        drift=tuple(drift),
        # As the dataset's ``differs_beyond_noise``: size 2 (the 2-core default) against
        # the best, for the pinned cases too.
        differs=(
            best is not None
            and DIFFERS_SIZE in by_value
            and not within_noise(by_value[DIFFERS_SIZE], by_value[best])
        ),
        tied_size=smallest_within_noise(points) or default,
        lock_waits=(
            _per_statement(profile.lock_waits_per_s, profile.qps) if profile is not None else 0.0
        ),
        visit_samples=max(1, round(float(np.median(spans)) / SAMPLE_S)),
        replay_family=PAIRED_FAMILY,
        stalls=tuple(tuple(bool(f) for f in size_flags) for size_flags in stalls)
        if recorded
        else (),
    )


def _lock_signal(row: pd.Series, engine: Engine) -> float:
    """The climber's lock signal in a dataset's profile row (:attr:`Sample.lock_waits`):
    MariaDB's row-lock waits per statement, PgBouncer's share of backends in a transaction
    waiting on a lock (its profile's ``pg_share_lock``; 0 where unknown)."""
    if engine is Engine.PGBOUNCER:
        share = row_extras(row).get("pg_share_lock")
        return float(share) if isinstance(share, int | float) and math.isfinite(share) else 0.0
    return _per_statement(row["lock_waits_per_s"], row["qps"])


def _per_statement(per_s: object, qps: object) -> float:
    """A rate per second as a count per statement (0 where either is unknown)."""
    rate, statements = (
        float(pd.to_numeric(per_s, errors="coerce")),
        float(pd.to_numeric(qps, errors="coerce")),
    )
    if not (math.isfinite(rate) and math.isfinite(statements)) or statements <= 0:
        return 0.0
    return rate / statements


def _visits(samples_json: str, visit_means_json: str) -> list[list[float]]:
    """The samples split into visits (in measuring order, equal shares)."""
    samples = [float(x) for x in json.loads(samples_json)]
    visits = len(json.loads(visit_means_json)) or 1
    if len(samples) % visits:
        return [samples]
    share = len(samples) // visits
    return [samples[i * share : (i + 1) * share] for i in range(visits)]


def _common_drift(per_size: list[list[list[float]]]) -> list[float]:
    """Per visit: the median over sizes of the visit's mean / the size's mean."""
    visits = max(len(v) for v in per_size)
    ratios: list[list[float]] = [[] for _ in range(visits)]
    for size_visits in per_size:
        every = [x for visit in size_visits for x in visit]
        overall = float(np.mean(every)) if every else 0.0
        if len(size_visits) != visits or overall <= 0:
            continue
        for index, visit in enumerate(size_visits):
            if not visit:
                continue
            mean = float(np.mean(visit))
            if mean > 0:
                ratios[index].append(math.log(mean / overall))
    return [math.exp(float(np.median(r))) if r else 1.0 for r in ratios]


class Replay:
    """2-s samples of one case for one run (the seed fixes every draw, whatever the
    climber does: draws are per sample index, not per size asked)."""

    def __init__(self, case: RealCase, seed: int) -> None:
        self.case = case
        rng = np.random.default_rng(seed)
        self._rng = rng
        self._visit_path = [int(rng.integers(len(case.drift)))]
        self._phase = int(rng.integers(case.visit_samples))
        self._draws: list[tuple[float, float, float]] = []

    def _draw(self, index: int) -> tuple[float, float, float]:
        while index >= len(self._draws):
            rng = self._rng
            self._draws.append(
                (float(rng.random()), float(rng.random()), float(rng.standard_normal()))
            )
        return self._draws[index]

    def drift(self, index: int) -> float:
        """The common drift factor at sample ``index`` (log-interpolated between visits)."""
        position = (index + self._phase) / self.case.visit_samples
        epoch = int(position)
        while len(self._visit_path) <= epoch + 1:
            step = 1 if self._rng.random() < 0.5 else -1
            visits = len(self.case.drift)
            self._visit_path.append((self._visit_path[-1] + step) % visits)
        here = math.log(self.case.drift[self._visit_path[epoch]])
        there = math.log(self.case.drift[self._visit_path[epoch + 1]])
        fraction = position - epoch
        return math.exp(here + fraction * (there - here))

    def stalled(self, index: int, knobs: Mapping[str, int]) -> bool | None:
        """Whether the pool stalled in sample ``index`` at ``knobs``: in either second that
        :meth:`sample` draws, at the measured size nearer ``knobs`` (None: not recorded)."""
        case = self.case
        lower, upper, weight = case.weights(float(knobs.get(case.knob, case.cores)))
        point = upper if weight >= 0.5 else lower
        pick_a, pick_b, _ = self._draw(index)
        seen = [case.stalled_at(point, pick) for pick in (pick_a, pick_b)]
        return None if None in seen else any(seen)

    def sample(self, index: int, knobs: Mapping[str, int]) -> tuple[float, float, float]:
        """Throughput, server CPU cores and latency (ms) of sample ``index`` at ``knobs``."""
        case = self.case
        size = float(knobs.get(case.knob, case.cores))
        lower, upper, weight = case.weights(size)
        pick_a, pick_b, cpu_noise = self._draw(index)
        drift = self.drift(index)
        values = [
            (1.0 - weight) * case.quantile(lower, pick) + weight * case.quantile(upper, pick)
            for pick in (pick_a, pick_b)
        ]
        throughput = drift * 0.5 * (values[0] + values[1])
        cpu = (1.0 - weight) * case.cpu_cores[lower] + weight * case.cpu_cores[upper]
        latency = (1.0 - weight) * case.latency_ms[lower] + weight * case.latency_ms[upper]
        return throughput, max(0.0, cpu * (1.0 + 0.05 * cpu_noise)), latency
