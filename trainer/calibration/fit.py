"""System identification: the simulator's workload parameters fitted to a measured curve.

For each real case, least squares on log throughput over the measured pool sizes (each size
weighted by the standard error of its log mean), plus the measured profile as priors: the
server CPU time per statement, the active connections and the synchronisation time at the
tuple where the profile was taken, and the timed latency of every size (CPU + wait per
statement, as ``query_response_time`` times it: the untimed CPU share is a fitted parameter).
What was measured directly is fixed, not fitted: cores, client connections, rounds per
statement, row-lock waits per statement, the load generator's CPU per statement. The
simulator's request is one statement (one request to the pool); a case that counts
transactions is compared through its statements per transaction. See docs/simulator.md.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from agents.sim.model import SimWorkload
from trainer.calibration.noise import CurveNoise, curve_noise
from trainer.calibration.realcases import RealCase

FloatArray = NDArray[np.float64]

#: Free parameters and their bounds (fitted in log space).
FREE_PARAMETERS: dict[str, tuple[float, float]] = {
    "cpu_ms": (1e-3, 50.0),
    "io_ms": (1e-4, 1000.0),
    "think_ms": (1e-3, 1e4),
    "signalled_fraction": (0.01, 0.99),
    "serial_fraction": (1e-5, 0.8),
    "coherency": (1e-7, 1.0),
    "lock_ms": (1e-4, 100.0),
    "switch_penalty": (1e-4, 1.0),
    "untimed_cpu_fraction": (0.01, 0.95),
}
STALL_PARAMETERS: dict[str, tuple[float, float]] = {
    "stall_rate": (1e-5, 0.5),
    "stall_ms": (10.0, 5000.0),
}


@dataclass(frozen=True)
class FitConfig:
    """Which model the fit uses and how strongly the profile binds it."""

    #: MariaDB's group scheduling (agents/sim/model.py); False: sim-v1's shared queue.
    group_scheduling: bool = True
    #: The load generator's measured CPU competes for the server's cores.
    client_cpu: bool = True
    #: Also fit stall events (rate and length): long unannounced waits that block a group.
    stalls: bool = False
    #: The pool size at which the dataset's profile was measured (the server's default).
    profile_size: float = 2.0
    starts: int = 4
    max_evaluations: int = 100
    #: Log-space standard deviations of the priors.
    latency_sigma: float = 0.7
    cpu_sigma: float = 0.25
    active_sigma: float = 0.3
    sync_sigma: float = 1.0

    def free_parameters(self, case: RealCase) -> dict[str, tuple[float, float]]:
        free = dict(FREE_PARAMETERS)
        if case.lock_conflict <= 0:
            del free["lock_ms"]
        if self.stalls:
            free |= STALL_PARAMETERS
        return free


def fixed_parameters(case: RealCase, config: FitConfig) -> dict[str, Any]:
    """What the case measured directly, as :class:`SimWorkload` keyword arguments."""
    return {
        "cores": case.cores,
        "connections": case.clients,
        "rounds": case.rounds,
        "lock_conflict": case.lock_conflict,
        "client_cpu_ms": case.client_cpu_ms if config.client_cpu else 0.0,
        "group_scheduling": config.group_scheduling,
        "max_size": 128,
        "name": case.workload_id,
    }


def simulated_throughput(
    workload: SimWorkload, case: RealCase, sizes: FloatArray | None = None
) -> FloatArray:
    """The workload's throughput at ``sizes`` (default: the case's) in the case's metric."""
    grid = case.sizes if sizes is None else sizes
    throughput, _ = workload.steady_state(grid)
    result: FloatArray = throughput / case.statements_per_unit
    return result


def _log(values: FloatArray | float, floor: float = 1e-12) -> FloatArray:
    return np.log(np.maximum(np.asarray(values, dtype=np.float64), floor))


def _residuals(
    x: FloatArray,
    case: RealCase,
    noise: CurveNoise,
    config: FitConfig,
    names: Sequence[str],
) -> FloatArray:
    params = dict(zip(names, np.exp(x), strict=True))
    workload = SimWorkload(**fixed_parameters(case, config), **params)
    grid = np.append(case.sizes, config.profile_size)
    point = workload.operating_point(grid)
    throughput = point.throughput[:-1] / case.statements_per_unit
    parts = [(_log(throughput) - _log(case.throughput)) / noise.log_se]
    measured_latency = case.latency_ms
    known = np.isfinite(measured_latency) & (measured_latency > 0)
    parts.append(
        (_log(point.timed_ms[:-1][known]) - _log(measured_latency[known])) / config.latency_sigma
    )
    profile = case.profile
    priors: list[float] = []
    if profile.cpu_ms_per_request:
        cpu = float(point.server_cpu_ms[-1])
        priors.append(math.log(max(cpu, 1e-12) / profile.cpu_ms_per_request) / config.cpu_sigma)
    active = float(point.active[-1])
    priors.append(
        math.log(max(active, 1e-3) / max(profile.active_connections, 0.5)) / config.active_sigma
    )
    if profile.sync_ms_per_request is not None and profile.cpu_ms_per_request:
        floor = 0.02 * profile.cpu_ms_per_request
        ratio = (float(point.sync_ms[-1]) + floor) / (profile.sync_ms_per_request + floor)
        priors.append(math.log(ratio) / config.sync_sigma)
    parts.append(np.array(priors, dtype=np.float64))
    return np.concatenate(parts)


def _starts(case: RealCase, config: FitConfig, names: Sequence[str]) -> list[FloatArray]:
    """Starting points from the measurements: announced waits low or high, waits short or
    long around the measured W."""
    profile = case.profile
    cpu = (profile.cpu_ms_per_request or 0.1) / case.rounds
    wait = max(profile.wait_ms_per_request or 0.0, 0.05 * cpu * case.rounds) / case.rounds
    think = max(profile.think_ms or 0.0, 0.01)
    starts = []
    for signalled, wait_factor in ((0.2, 0.3), (0.8, 3.0), (0.8, 0.3), (0.2, 3.0)):
        guess = {
            "cpu_ms": cpu,
            "io_ms": wait * wait_factor,
            "think_ms": think,
            "signalled_fraction": signalled,
            "serial_fraction": 0.01,
            "coherency": 1e-3,
            "lock_ms": cpu,
            "switch_penalty": 0.03,
            "untimed_cpu_fraction": 0.3,
            "stall_rate": 1e-3,
            "stall_ms": 300.0,
        }
        starts.append(np.log(np.array([guess[n] for n in names], dtype=np.float64)))
    return starts[: max(1, config.starts)]


@dataclass(frozen=True)
class CaseFit:
    """A fitted case: the parameters, the curves side by side, the noise, the errors."""

    workload_id: str
    parameters: dict[str, Any]
    sizes: FloatArray
    measured: FloatArray
    simulated: FloatArray
    noise: CurveNoise
    cost: float
    evaluations: int
    free: tuple[str, ...] = field(default=())

    @property
    def log_errors(self) -> FloatArray:
        """log(simulated / measured) per size."""
        return _log(self.simulated) - _log(self.measured)

    @property
    def median_error(self) -> float:
        """Median absolute log error over the sizes: the fit error of the done-when check."""
        return float(np.median(np.abs(self.log_errors)))

    @property
    def within_noise(self) -> bool:
        """Reproduced within noise: median absolute log error ≤ the curve's CV."""
        return self.median_error <= self.noise.cv

    @property
    def sizes_within_se(self) -> float:
        """Share of sizes whose error is within two standard errors of their log mean (a
        stricter test: a systematic misfit at a few sizes shows here, not in the median)."""
        return float(np.mean(np.abs(self.log_errors) <= 2.0 * self.noise.log_se))

    def misses(self) -> list[tuple[float, float, float, float, float]]:
        """The sizes off by more than two standard errors of their mean: (size, measured,
        simulated, log error, the bound in log)."""
        bounds = 2.0 * self.noise.log_se
        return [
            (float(size), float(m), float(s), float(e), float(b))
            for size, m, s, e, b in zip(
                self.sizes, self.measured, self.simulated, self.log_errors, bounds, strict=True
            )
            if abs(e) > b
        ]

    def workload(self) -> SimWorkload:
        return SimWorkload(**self.parameters)


def case_noise(case: RealCase) -> CurveNoise:
    return curve_noise(case.samples, case.visits)


def fit_case(case: RealCase, config: FitConfig | None = None) -> CaseFit:
    """The best of a few least-squares starts (deterministic: fixed starts, no randomness)."""
    config = config or FitConfig()
    noise = case_noise(case)
    free = config.free_parameters(case)
    names = tuple(free)
    low = np.log([free[n][0] for n in names])
    high = np.log([free[n][1] for n in names])
    best = None
    evaluations = 0
    for start in _starts(case, config, names):
        x0 = np.clip(start, low + 1e-9, high - 1e-9)
        result = least_squares(
            _residuals,
            x0,
            bounds=(low, high),
            args=(case, noise, config, names),
            max_nfev=config.max_evaluations,
        )
        evaluations += int(result.nfev)
        if best is None or result.cost < best.cost:
            best = result
    assert best is not None
    fitted = {n: float(v) for n, v in zip(names, np.exp(best.x), strict=True)}
    parameters = fixed_parameters(case, config) | fitted
    workload = SimWorkload(**parameters)
    return CaseFit(
        workload_id=case.workload_id,
        parameters=parameters,
        sizes=case.sizes,
        measured=case.throughput,
        simulated=simulated_throughput(workload, case),
        noise=noise,
        cost=float(best.cost),
        evaluations=evaluations,
        free=names,
    )


def _fit_one(args: tuple[RealCase, FitConfig]) -> CaseFit:
    return fit_case(*args)


def fit_cases(
    cases: Sequence[RealCase], config: FitConfig | None = None, *, processes: int = 1
) -> list[CaseFit]:
    """:func:`fit_case` for every case, in ``processes`` worker processes (same results)."""
    jobs = [(case, config or FitConfig()) for case in cases]
    if processes <= 1 or len(jobs) <= 1:
        return [_fit_one(job) for job in jobs]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.map(_fit_one, jobs, chunksize=1)


def parameters_table(fits: Sequence[CaseFit]) -> dict[str, Mapping[str, Any]]:
    """Fitted parameters by workload id (JSON-ready), for a corpus's provenance."""
    return {f.workload_id: dict(f.parameters) for f in fits}
