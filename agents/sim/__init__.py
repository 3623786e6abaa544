"""Queueing simulator of a thread-pool database server (tests, benchmarks, datasets).

Entry points: :class:`SimWorkload` (parameters and the noise-free model),
:class:`SimServer` (2-second samples with noise), :func:`random_workload`, and the
formula curves :class:`UslCurve` (family A) and :class:`KneeCurve` (family B).
"""

from agents.sim.curves import KneeCurve, ThroughputCurve, UslCurve, WorkloadCurve
from agents.sim.model import SimWorkload
from agents.sim.noise import NoiseConfig
from agents.sim.server import SAMPLE_SECONDS, SimSample, SimServer
from agents.sim.workloads import WorkloadKind, random_workload

__all__ = [
    "SAMPLE_SECONDS",
    "KneeCurve",
    "NoiseConfig",
    "SimSample",
    "SimServer",
    "SimWorkload",
    "ThroughputCurve",
    "UslCurve",
    "WorkloadCurve",
    "WorkloadKind",
    "random_workload",
]
