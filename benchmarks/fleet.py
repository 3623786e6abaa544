"""A fleet of simulated database hosts running the real agent against the real service.

Each host is the agent ``pooltune-agent run`` assembles (:func:`agents.wiring.assemble_agent`)
over a :class:`~agents.targets.simulated.SimulatedTarget` with a virtual clock, so a fleet
climbs hours of simulated time in seconds. The service is the real one (uvicorn on 127.0.0.1)
on a fresh PostgreSQL database that :func:`live_service` creates, migrates and drops; hosts
enrol over HTTP, ask for recommendations and upload reports. Used by
``benchmarks/warm_start.py`` and ``tests/test_loop_e2e.py``.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from agents.config import AgentConfig, parse_config
from agents.knobs import Engine
from agents.loop import AgentLoop, Phase
from agents.service_client import ServiceClient, enroll_agent
from agents.sim import NoiseConfig, SimServer, SimWorkload
from agents.targets.simulated import SimulatedTarget
from agents.wire import KnobTuple, RecommendationRequest, RecommendationResponse, Source
from agents.wiring import assemble_agent
from benchmarks.climb import T95_WINDOW, t95
from lab.databases import create_database, drop_database
from lab.processes import free_port, stop_process
from lab.service import start_service, wait_until_serving

logger = logging.getLogger(__name__)

SIZE = "thread_pool_size"
#: The agent's profiling window: 15 two-second samples at the tuple in force.
PROFILE_WINDOW_S = 30.0
FINAL_WINDOW = 60


@dataclass(frozen=True)
class LiveService:
    """A running service: its base URL, database URL and admin token."""

    url: str
    database_url: str
    admin_token: str

    def enrollment_token(self, *, uses: int, description: str = "fleet") -> str:
        response = httpx.post(
            f"{self.url}/v1/enrollment-tokens",
            json={"description": description, "max_uses": uses},
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=10.0,
        )
        response.raise_for_status()
        return str(response.json()["token"])


@contextmanager
def live_service(*, log_path: Path, startup_timeout_s: float = 60.0) -> Iterator[LiveService]:
    """Create a database, serve the app on 127.0.0.1 (it migrates at start), then stop the
    server and drop the database, whatever happened in between."""
    database_url = create_database("pooltune_fleet")
    admin_token = secrets.token_urlsafe(24)
    port = free_port()
    env = {
        "POOLTUNE_DATABASE_URL": database_url,
        "POOLTUNE_ADMIN_TOKEN": admin_token,
        "POOLTUNE_ENVIRONMENT": "production",
        "POOLTUNE_LOG_LEVEL": "WARNING",
        "POOLTUNE_DB_POOL_SIZE": "5",
    }
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = start_service(port, env=env, log=log)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_serving(
                process, url, timeout_s=startup_timeout_s, details=lambda: f"see {log_path}"
            )
            yield LiveService(url=url, database_url=database_url, admin_token=admin_token)
        finally:
            stop_process(process, timeout_s=15)
            drop_database(database_url)


class ColdStartClient(ServiceClient):
    """The service for uploads, but no recommendation: the climb starts from the tuple in
    force (the engine default), and the report says so (start source ``current``)."""

    def recommend(
        self, request: RecommendationRequest, *, max_attempts: int | None = None
    ) -> RecommendationResponse:
        # The wire schema only lets the service answer model/heuristic; this answer never
        # crosses the wire, it tells the loop "start where you are" (Source.CURRENT).
        current = request.current_tuple.values if request.current_tuple is not None else {}
        return RecommendationResponse.model_construct(
            start_tuple=KnobTuple(engine=request.host.engine, values=dict(current)),
            ranges={},
            source=Source.CURRENT,  # type: ignore[arg-type]
            model_version=None,
        )


def _virtual_clock(target: SimulatedTarget) -> Callable[[], float]:
    """The loop's clock: the simulated server's virtual time."""
    return lambda: target.now


@dataclass
class HostRun:
    """One simulated host's agent and what it saw."""

    name: str
    workload: SimWorkload
    target: SimulatedTarget
    loop: AgentLoop
    #: Noise-free throughput of the tuple in force / the size curve's peak, per sample.
    normalised: list[float] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    #: Pool size in force, per sample.
    sizes: list[int] = field(default_factory=list)

    @functools.cached_property
    def peak(self) -> float:
        """The workload is fixed for the run: its curve is computed once."""
        return size_peak(self.workload)


@dataclass(frozen=True)
class HostResult:
    name: str
    kind: str
    cores: int
    connections: int
    start_source: str
    start_size: int
    optimum_size: int
    first_tuple_share: float
    t95_samples: float
    final_quality: float
    converged: bool
    reported: bool
    #: Pool sizes in force from the climb's start, run-length encoded ("8x4 9x7 …").
    size_trace: str = ""


def size_peak(workload: SimWorkload) -> float:
    """The best throughput over pool sizes at the default other knobs: the reference when
    only ``thread_pool_size`` is climbed."""
    return float(np.max(workload.curve()))


def _agent_config(state_dir: Path, service_url: str, *, climb_max_s: float) -> AgentConfig:
    return parse_config(
        {
            "agent": {
                "state_dir": str(state_dir),
                "sample_period_s": 2.0,
                "profile_window_s": PROFILE_WINDOW_S,
                "climb_max_s": climb_max_s,
                "log_level": "WARNING",
            },
            "climber": {"knobs": [SIZE]},
            "service": {"url": service_url, "max_attempts": 3, "timeout_s": 30.0},
        },
        env={},
    )


def build_fleet(
    workloads: Sequence[SimWorkload],
    *,
    service: LiveService,
    state_root: Path,
    prefix: str,
    cold: bool,
    seed: int,
    climb_max_s: float = 600.0,
    noise: NoiseConfig | None = None,
) -> list[HostRun]:
    """One agent per workload, each enrolled with the same multi-use enrolment token."""
    enrollment = service.enrollment_token(uses=len(workloads), description=prefix)
    hosts: list[HostRun] = []
    for index, workload in enumerate(workloads):
        name = f"{prefix}-{index:03d}"
        target = SimulatedTarget(
            SimServer(workload, seed=seed * 100_003 + index, noise=noise), hostname=name
        )
        config = _agent_config(state_root / name, service.url, climb_max_s=climb_max_s)
        credentials = enroll_agent(
            service.url,
            enrollment,
            target.host_facts(),
            timeout_s=config.service.timeout_s,
            max_attempts=config.service.max_attempts,
        )
        loop = assemble_agent(
            config,
            target=target,
            agent_token=credentials.agent_token,
            client_class=ColdStartClient if cold else ServiceClient,
            clock=_virtual_clock(target),
        )
        hosts.append(HostRun(name=name, workload=workload, target=target, loop=loop))
    return hosts


def run_fleet(hosts: Sequence[HostRun], *, samples: int) -> None:
    """Every host's agent for ``samples`` iterations (2 simulated seconds each), in turn."""
    for host in hosts:
        host.loop.start()
    for _ in range(samples):
        for host in hosts:
            host.loop.iterate()
            host.normalised.append(host.target.expected_throughput() / host.peak)
            host.phases.append(host.loop.phase)
            host.sizes.append(host.target.knobs[SIZE])
    for host in hosts:
        host.loop.shutdown()
        client = host.loop.uploader.service
        if client is not None:
            client.client.close()


def score(host: HostRun) -> HostResult:
    """T95 counted from the first sample at the start tuple (after the profiling window,
    which is the same for every start); first tuple = the one the climb started from."""
    climb = host.loop.climb
    climbing = [i for i, phase in enumerate(host.phases) if phase is not Phase.PROFILING]
    if climb is None or not climbing:
        raise RuntimeError(f"{host.name} never finished profiling")
    series = np.asarray(host.normalised[climbing[0] :], dtype=np.float64)
    start_size = climb.start_tuple[SIZE]
    server = host.target.server
    first_share = server.expected_throughput({SIZE: start_size}) / host.peak
    reached = t95(series) if series.size >= T95_WINDOW else math.inf
    report = host.loop.last_report
    return HostResult(
        name=host.name,
        kind=host.workload.name,
        cores=host.workload.cores,
        connections=host.workload.connections,
        start_source=climb.source.value,
        start_size=start_size,
        optimum_size=server.optimum()[SIZE],
        first_tuple_share=first_share,
        t95_samples=reached,
        final_quality=float(np.mean(series[-FINAL_WINDOW:])),
        converged=bool(report.get("converged")),
        reported=bool(report.get("delivered")),
        size_trace=run_lengths(host.sizes[climbing[0] :]),
    )


def run_lengths(values: Sequence[int]) -> str:
    """``[8, 8, 9, 9, 9]`` → ``"8x2 9x3"``."""
    runs: list[list[int]] = []
    for value in values:
        if runs and runs[-1][0] == value:
            runs[-1][1] += 1
        else:
            runs.append([value, 1])
    return " ".join(f"{value}x{count}" for value, count in runs)


def run_and_score(hosts: Sequence[HostRun], *, samples: int) -> list[HostResult]:
    run_fleet(hosts, samples=samples)
    return [score(host) for host in hosts]


@dataclass(frozen=True)
class TrainingRun:
    promoted: bool
    returncode: int
    output: str
    seconds: float


def console_script(name: str) -> str:
    """A console script of this environment (next to the interpreter), else from PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else name


def train_and_promote(
    service: LiveService,
    *,
    trials: int,
    seed: int,
    card_dir: Path,
    name: str = "fleet",
    engine: Engine = Engine.MARIADB,
    timeout_s: float = 900.0,
) -> TrainingRun:
    """``pooltune-trainer train --promote`` on the service's database: the real CLI, with
    its Optuna study in the same PostgreSQL and the promotion gate."""
    command = [
        console_script("pooltune-trainer"),
        "train",
        "--engine",
        engine.value,
        "--database-url",
        service.database_url,
        "--name",
        name,
        "--trials",
        str(trials),
        "--seed",
        str(seed),
        "--card-dir",
        str(card_dir),
        "--promote",
    ]
    began = time.monotonic()
    env = os.environ | {"OMP_NUM_THREADS": "1", "COLUMNS": "120"}
    finished = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    output = finished.stdout + finished.stderr
    return TrainingRun(
        promoted=finished.returncode == 0 and "promoted" in output.split("registered")[-1],
        returncode=finished.returncode,
        output=output,
        seconds=time.monotonic() - began,
    )


def make_sim_corpus(out: Path, *, workloads: int, seed: int) -> None:
    """``pooltune-trainer make-sim-dataset``: a seeded simulated corpus in ``out``."""
    command = [console_script("pooltune-trainer"), "make-sim-dataset", "--out", str(out)]
    command += ["--workloads", str(workloads), "--seed", str(seed), "--processes", "1"]
    subprocess.run(command, capture_output=True, text=True, check=True, timeout=900)


def import_dataset(service: LiveService, dataset: str, *, limit: int | None = None) -> str:
    """``pooltune-trainer import-dataset`` into the service's database; its last line."""
    command = [console_script("pooltune-trainer"), "import-dataset", dataset]
    command += ["--database-url", service.database_url]
    if limit is not None:
        command += ["--limit", str(limit)]
    finished = subprocess.run(command, capture_output=True, text=True, check=True, timeout=900)
    lines = [line for line in finished.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else ""
