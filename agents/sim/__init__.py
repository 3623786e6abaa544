"""Queueing simulator of a thread-pool database server (tests, benchmarks, datasets).

Entry points: :class:`SimWorkload` (parameters and the noise-free model),
:class:`SimServer` (2-second samples with noise), :func:`random_workload` (sim-v1's prior)
and :func:`random_workload_v2`, :func:`agent_profile` (what an agent measures), and the
formula curves :class:`UslCurve` (family A) and :class:`KneeCurve` (family B).
"""

from agents.sim.curves import KneeCurve, ThroughputCurve, UslCurve, WorkloadCurve
from agents.sim.measure import agent_profile
from agents.sim.model import OperatingPoint, SimWorkload
from agents.sim.noise import NoiseConfig
from agents.sim.server import SAMPLE_SECONDS, SimSample, SimServer
from agents.sim.workloads import WorkloadKind, random_workload, random_workload_v2

__all__ = [
    "SAMPLE_SECONDS",
    "KneeCurve",
    "NoiseConfig",
    "OperatingPoint",
    "SimSample",
    "SimServer",
    "SimWorkload",
    "ThroughputCurve",
    "UslCurve",
    "WorkloadCurve",
    "WorkloadKind",
    "agent_profile",
    "random_workload",
    "random_workload_v2",
]
