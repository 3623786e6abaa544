"""Steady-state model of a thread-pool database server (noise-free).

A closed queueing network solved by a vectorised mean-value style fixed point, so that one
curve over all pool sizes costs well under a millisecond: clients alternate think time and
requests of CPU bursts and waits; MariaDB's pool admits ``size · k`` requests (``k`` from the
announced waits, oversubscribe and stall limit); the CPU burst is inflated by contention (the
universal scalability law), context switches and the pool's timer; the executing count closes
the loop with Little's law. The model, its extensions (co-located clients, MariaDB's group
scheduling, stalls), what the counters see and what it reproduces are explained in
[docs/simulator.md](../../docs/simulator.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

SIZE_KNOB: Final = "thread_pool_size"
OVERSUBSCRIBE_KNOB: Final = "thread_pool_oversubscribe"
STALL_LIMIT_KNOB: Final = "thread_pool_stall_limit"

#: MariaDB's defaults for the knobs the simulator models (size defaults to the cores).
DEFAULT_OVERSUBSCRIBE: Final = 3
DEFAULT_STALL_LIMIT_MS: Final = 500

#: Grids used to find the optimum of the whole tuple (coarse on the secondary knobs:
#: their effect is smooth and the optimum of a tuple is only needed for scoring).
OVERSUBSCRIBE_GRID: Final = (1, 2, 3, 4, 6, 8, 12, 16, 32)
STALL_LIMIT_GRID: Final = (10, 30, 60, 100, 200, 500, 1000, 2000, 5000)

#: A CPU burst shorter than a scheduler slice mostly waits for its CPU before it starts.
SCHEDULER_SLICE_MS: Final = 3.0

_BISECTION_STEPS: Final = 30
_SMOOTH_P: Final = 4.0


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """A workload at some tuples as a server's counters see it (arrays, one per tuple).
    Per request: ``execution_ms`` (executing, the pool's queue excluded), ``server_cpu_ms``
    (the server's CPU time, contention included) and ``sync_ms`` (latch waits)."""

    throughput: FloatArray
    executing: FloatArray
    queued: FloatArray
    execution_ms: FloatArray
    server_cpu_ms: FloatArray
    sync_ms: FloatArray
    #: What ``query_response_time`` times per request: the execution without the untimed
    #: CPU share and without most of the wait for a CPU, which a short burst spends runnable
    #: before it starts (visible in proportion burst / (burst + a scheduler slice)).
    timed_ms: FloatArray
    #: Requests executing but in an announced wait: MariaDB's pool does not count them as
    #: active threads (``THREAD_POOL_GROUPS.ACTIVE_THREADS``).
    waiting: FloatArray

    @property
    def active(self) -> FloatArray:
        """Active threads plus queued requests, as the agent reads ``active_connections``."""
        active: FloatArray = self.executing - self.waiting + self.queued
        return active


@dataclass(frozen=True, slots=True)
class SimWorkload:
    """Parameters of one simulated workload on one host. Times in milliseconds."""

    cores: int
    connections: int
    cpu_ms: float
    io_ms: float = 0.0
    rounds: float = 1.0
    think_ms: float = 0.0
    #: Share of the off-CPU wait the server announces to the pool (row locks, disk IO).
    signalled_fraction: float = 0.5
    #: Universal scalability law σ (serialisation) and κ (crosstalk) on running threads.
    serial_fraction: float = 0.01
    coherency: float = 0.0005
    #: Lock hold time per round and the chance that a concurrent request conflicts with it.
    lock_ms: float = 0.0
    lock_conflict: float = 0.0
    write_fraction: float = 0.2
    #: CPU-time inflation per unit of oversubscription (runnable threads / cores − 1).
    switch_penalty: float = 0.03
    thread_create_ms: float = 0.2
    max_size: int = 128
    #: CPU a co-located load generator spends per request on the same cores (0: clients
    #: elsewhere). sysbench on the 2-core test host took 0.4–0.7 of its cores.
    client_cpu_ms: float = 0.0
    #: MariaDB's group scheduling: connections are bound to groups (thread id modulo the
    #: size), so a group with no busy connection idles while another queues; a thread in an
    #: announced wait leaves its group's active count, so the group starts another whatever
    #: the oversubscribe. False: sim-v1's pool, one queue where oversubscribe caps the share
    #: of announced waits that admit another request.
    group_scheduling: bool = False
    #: Long unannounced waits (a flush or fsync stall) per request and their length: the
    #: group serves nothing until the stall limit lets another thread in.
    stall_rate: float = 0.0
    stall_ms: float = 0.0
    #: Share of the server's CPU per request outside a statement's timed execution (protocol,
    #: network, the pool's own work): measurement only, the agent's latency lacks it.
    untimed_cpu_fraction: float = 0.0
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.cores < 1 or self.connections < 0:
            raise ValueError("cores must be ≥ 1 and connections ≥ 0")
        if self.cpu_ms <= 0 or self.rounds <= 0:
            raise ValueError("cpu_ms and rounds must be positive")
        if not 0.0 <= self.untimed_cpu_fraction < 1.0:
            raise ValueError("untimed_cpu_fraction must be in [0, 1)")
        extensions = (self.client_cpu_ms, self.stall_rate, self.stall_ms)
        if min(self.io_ms, self.think_ms, self.lock_ms, self.lock_conflict, *extensions) < 0:
            raise ValueError("times and rates must not be negative")

    @property
    def extended(self) -> bool:
        """Whether a mechanism beyond sim-v1's model is switched on (groups or stalls)."""
        return self.group_scheduling or self.stall_rate * self.stall_ms > 0

    # ------------------------------------------------------------------ helpers
    @property
    def wait_ms(self) -> float:
        """Off-CPU wait per round with no lock contention."""
        return self.io_ms

    def _admitted_per_group(
        self, oversubscribe: FloatArray | float, stall_limit: FloatArray | float
    ) -> tuple[FloatArray, FloatArray]:
        """Requests admitted per group ``k`` and the stall probability per round."""
        cpu, wait = self.cpu_ms, self.io_ms + self.lock_ms * self.lock_conflict
        over = np.maximum(np.asarray(oversubscribe, dtype=np.float64), 0.0)
        stall = np.maximum(np.asarray(stall_limit, dtype=np.float64), 1.0)
        signalled_share = self.signalled_fraction * wait / (cpu + wait)
        if self.group_scheduling:
            # Oversubscribe only limits new work while returning waiters run (neglected).
            phi = np.full_like(over, min(signalled_share, 0.98))
        else:
            phi = np.minimum(signalled_share * over / (over + 1.0), 0.95)
        holding_ms = cpu + (1.0 - self.signalled_fraction) * wait
        p_stall = np.exp(-stall / max(holding_ms, 1e-6))
        # Above 500 ms MariaDB throttles thread creation, so stall extras come late.
        throttle = np.where(stall >= 500.0, 0.5, 1.0)
        k = 1.0 / (1.0 - phi) + p_stall * throttle
        return k, p_stall

    def _usl(self, n: FloatArray) -> FloatArray:
        """The universal scalability law's inflation of a CPU burst with ``n`` requests
        executing: ``1 + σ(r−1) + κ·r(r−1)`` over the ``r`` of them that want a CPU."""
        cpu = self.cpu_ms
        base_wait = self.io_ms + self.lock_ms * self.lock_conflict
        running = n * cpu / (cpu + base_wait)
        extra = np.maximum(running - 1.0, 0.0)
        inflation: FloatArray = (
            1.0 + self.serial_fraction * extra + self.coherency * running * extra
        )
        return inflation

    def _service(self, n: FloatArray, stall_limit: FloatArray, p_stall: FloatArray) -> FloatArray:
        """CPU time of one round when ``n`` requests execute together (ms): the burst inflated
        by contention, context switches and the pool's timer, plus thread creation."""
        cpu = self.cpu_ms
        running = n * cpu / (cpu + self.io_ms + self.lock_ms * self.lock_conflict)
        usl = self._usl(n)
        switches = 1.0 + self.switch_penalty * np.maximum(running / self.cores - 1.0, 0.0)
        timer = 1.0 + 0.01 * (100.0 / stall_limit)
        service: FloatArray = cpu * usl * switches * timer + p_stall * self.thread_create_ms * 0.1
        return service

    def _announced_wait(self, n: FloatArray) -> FloatArray:
        """Off-CPU wait of one round the server announces to the pool (ms)."""
        lock: FloatArray = self.lock_ms * self.lock_conflict * np.maximum(n - 1.0, 0.0)
        return self.signalled_fraction * (self.io_ms + lock)

    def _wait(self, n: FloatArray) -> FloatArray:
        """Off-CPU wait of one round with ``n`` requests executing (ms): IO, row locks that
        grow with the requests executing, stalls."""
        wait: FloatArray = self.io_ms + self.lock_ms * self.lock_conflict * np.maximum(n - 1.0, 0.0)
        if self.stall_rate * self.stall_ms > 0:
            wait = wait + self.stall_rate * self.stall_ms / self.rounds
        return wait

    def _request_time(
        self, n: FloatArray, stall_limit: FloatArray, p_stall: FloatArray
    ) -> FloatArray:
        """Time one request spends executing when ``n`` requests execute together (ms)."""
        service = self._service(n, stall_limit, p_stall)
        wait = self._wait(n)
        own = service + wait
        if self.client_cpu_ms > 0:
            shared = n * (service + self.client_cpu_ms / self.rounds) / self.cores
        else:
            shared = n * service / self.cores
        smooth: FloatArray = (own**_SMOOTH_P + shared**_SMOOTH_P) ** (1.0 / _SMOOTH_P)
        return self.rounds * smooth

    # ------------------------------------------------------------------ public API
    def steady_state(
        self,
        sizes: FloatArray | float,
        oversubscribe: FloatArray | float = DEFAULT_OVERSUBSCRIBE,
        stall_limit: FloatArray | float = DEFAULT_STALL_LIMIT_MS,
    ) -> tuple[FloatArray, FloatArray]:
        """Throughput (requests/s) and mean latency (ms) for each element (broadcast)."""
        throughput, latency, _ = self.steady_state_detail(sizes, oversubscribe, stall_limit)
        return throughput, latency

    def steady_state_detail(
        self,
        sizes: FloatArray | float,
        oversubscribe: FloatArray | float = DEFAULT_OVERSUBSCRIBE,
        stall_limit: FloatArray | float = DEFAULT_STALL_LIMIT_MS,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Throughput (requests/s), mean latency (ms, queueing included) and the mean number
        of requests executing (the rest of the busy clients queue in the pool)."""
        size_arr, over_arr, stall_arr = np.broadcast_arrays(
            np.asarray(sizes, dtype=np.float64),
            np.asarray(oversubscribe, dtype=np.float64),
            np.asarray(stall_limit, dtype=np.float64),
        )
        stall_arr = np.maximum(stall_arr, 1.0)
        k, p_stall = self._admitted_per_group(over_arr, stall_arr)
        admitted = np.maximum(size_arr, 1.0) * k
        clients = float(self.connections)
        if clients <= 0:
            zeros = np.zeros_like(size_arr)
            return zeros, zeros, zeros
        if self.extended:
            return self._extended_state(size_arr, admitted, clients, stall_arr, p_stall)
        ceiling = np.minimum(admitted, clients)

        def busy_clients(n: FloatArray) -> FloatArray:
            result: FloatArray = n + self.think_ms * n / self._request_time(n, stall_arr, p_stall)
            return result

        executing = _executing(busy_clients, ceiling, clients)
        request_ms = self._request_time(executing, stall_arr, p_stall)
        throughput = 1000.0 * executing / request_ms
        latency = np.maximum(clients / np.maximum(throughput, 1e-12) * 1000.0 - self.think_ms, 0.0)
        return throughput, latency, executing

    def _rate(
        self, n: FloatArray, groups: FloatArray, stall_limit: FloatArray, p_stall: FloatArray
    ) -> FloatArray:
        """Requests/s with ``n`` executing. A stall blocks its group for min(stall, stall
        limit): with ``X`` requests/s the ``groups`` are blocked ``X·rate·block/groups`` of
        the time, so ``X = X_free / (1 + X_free·rate·block/groups)``."""
        free: FloatArray = 1000.0 * n / self._request_time(n, stall_limit, p_stall)
        if self.stall_rate * self.stall_ms <= 0:
            return free
        blocked_s = self.stall_rate * np.minimum(self.stall_ms, stall_limit) / 1000.0
        rate: FloatArray = free / (1.0 + free * blocked_s / groups)
        return rate

    def _in_pool(self, n: FloatArray, admitted: FloatArray) -> FloatArray:
        """Busy clients (executing or queued in the pool) that leave ``n`` executing.

        A shared queue executes every busy client up to the admitted concurrency ``M``. With
        connections bound to groups, ``B`` busy clients fall on groups at random, each
        executing at most ``k`` of its own: ``n ≈ M·(1 − exp(−B/M))`` (exact for ``k = 1``
        under a Poisson spread), so ``B = −M·ln(1 − n/M)``."""
        if not self.group_scheduling:
            return n
        share = np.minimum(n / admitted, 1.0 - 1e-12)
        busy: FloatArray = -admitted * np.log1p(-share)
        return busy

    def _extended_state(
        self,
        groups: FloatArray,
        admitted: FloatArray,
        clients: float,
        stall_limit: FloatArray,
        p_stall: FloatArray,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """:meth:`steady_state_detail` with connections bound to groups or stalls."""
        groups = np.maximum(groups, 1.0)
        ceiling = np.minimum(admitted * (1.0 - 1e-9), clients)

        def busy_clients(n: FloatArray) -> FloatArray:
            rate = self._rate(n, groups, stall_limit, p_stall)
            result: FloatArray = self._in_pool(n, admitted) + self.think_ms * rate / 1000.0
            return result

        executing = _executing(busy_clients, ceiling, clients)
        throughput = self._rate(executing, groups, stall_limit, p_stall)
        latency = np.maximum(clients / np.maximum(throughput, 1e-12) * 1000.0 - self.think_ms, 0.0)
        return throughput, latency, executing

    def operating_point(
        self,
        sizes: FloatArray | float,
        oversubscribe: FloatArray | float = DEFAULT_OVERSUBSCRIBE,
        stall_limit: FloatArray | float = DEFAULT_STALL_LIMIT_MS,
    ) -> OperatingPoint:
        """What a server's counters would show at each tuple (broadcast), noise-free."""
        throughput, _, executing = self.steady_state_detail(sizes, oversubscribe, stall_limit)
        stall = np.maximum(np.asarray(stall_limit, dtype=np.float64), 1.0)
        stall = np.broadcast_to(stall, executing.shape)
        _, p_stall = self._admitted_per_group(
            np.broadcast_to(np.asarray(oversubscribe, dtype=np.float64), executing.shape), stall
        )
        busy = np.maximum(self.connections - throughput * self.think_ms / 1000.0, executing)
        rate = np.maximum(throughput, 1e-12)
        service = self._service(executing, stall, p_stall)
        wait = self._wait(executing)
        request_ms = self._request_time(executing, stall, p_stall)
        cpu_queueing = np.maximum(request_ms - self.rounds * (service + wait), 0.0)
        visible = service / (service + SCHEDULER_SLICE_MS)
        timed = self.rounds * ((1.0 - self.untimed_cpu_fraction) * service + wait)
        announced = self.rounds * self._announced_wait(executing) / np.maximum(request_ms, 1e-12)
        return OperatingPoint(
            throughput=throughput,
            executing=executing,
            queued=busy - executing,
            execution_ms=1000.0 * executing / rate,
            server_cpu_ms=self.rounds * service,
            sync_ms=self.rounds * self.cpu_ms * (self._usl(executing) - 1.0),
            timed_ms=timed + visible * cpu_queueing,
            waiting=executing * np.minimum(announced, 1.0),
        )

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        """Noise-free throughput (/s) and latency (ms) of one knob tuple."""
        size = knobs.get(SIZE_KNOB, self.cores)
        over = knobs.get(OVERSUBSCRIBE_KNOB, DEFAULT_OVERSUBSCRIBE)
        stall = knobs.get(STALL_LIMIT_KNOB, DEFAULT_STALL_LIMIT_MS)
        throughput, latency = self.steady_state(float(size), float(over), float(stall))
        return float(throughput), float(latency)

    def occupancy(self, knobs: Mapping[str, int]) -> tuple[float, float, float]:
        """Throughput (/s), requests executing and requests queued in the pool, noise-free."""
        size = knobs.get(SIZE_KNOB, self.cores)
        over = knobs.get(OVERSUBSCRIBE_KNOB, DEFAULT_OVERSUBSCRIBE)
        stall = knobs.get(STALL_LIMIT_KNOB, DEFAULT_STALL_LIMIT_MS)
        throughput, _, executing = self.steady_state_detail(float(size), float(over), float(stall))
        busy = max(0.0, self.connections - float(throughput) * self.think_ms / 1000.0)
        return float(throughput), float(executing), max(0.0, busy - float(executing))

    def sync_ms_per_round(self, knobs: Mapping[str, int]) -> float:
        """Time a round spends in latch waits as a server's synchronisation instruments
        (performance_schema's mutex and rw-lock timers) see them (ms): the CPU burst's
        contention inflation ``cpu_ms·(σ(r−1) + κ·r(r−1))`` at the tuple's operating point,
        spinning on and queueing for shared latches.

        An IO wait adds no latch time of its own. On the 2-core test server under an
        IO-bound sysbench load (64 clients, fsync at every commit, an 8 MiB buffer pool) the
        mutex and rw-lock time per statement was 0.04 ms at pool size 1, 0.11–0.16 at 2 and
        0.3–0.5 at 4 and 8, while statements waited milliseconds for IO and throughput fell
        from size 2 to 8: the index-tree and buffer-pool latch waits grow with the threads
        running, as contention does, and a constant share of the IO wait would have shown
        at size 1 too (and hidden κ, the one thing this measurement tells the model).
        """
        _, executing, _ = self.occupancy(knobs)
        inflation = self._usl(np.asarray(executing, dtype=np.float64))
        return float(self.cpu_ms * (inflation - 1.0))

    def curve(
        self,
        sizes: FloatArray | None = None,
        *,
        oversubscribe: int = DEFAULT_OVERSUBSCRIBE,
        stall_limit: int = DEFAULT_STALL_LIMIT_MS,
    ) -> FloatArray:
        """Throughput over a grid of pool sizes (default 1…max_size) at fixed other knobs."""
        grid = size_grid(self.max_size) if sizes is None else sizes
        throughput, _ = self.steady_state(grid, oversubscribe, stall_limit)
        return throughput

    def tuple_surface(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Throughput over sizes × oversubscribe grid × stall grid (and the three axes)."""
        # Geometric size grid: the secondary knobs' optimum moves smoothly with size.
        sizes = np.unique(np.round(np.geomspace(1, self.max_size, 40)))
        over = np.asarray(OVERSUBSCRIBE_GRID, dtype=np.float64)
        stall = np.asarray(STALL_LIMIT_GRID, dtype=np.float64)
        throughput, _ = self.steady_state(
            sizes[:, None, None], over[None, :, None], stall[None, None, :]
        )
        return throughput, sizes, over, stall


def _executing(
    busy_clients: Callable[[FloatArray], FloatArray], ceiling: FloatArray, clients: float
) -> FloatArray:
    """The executing count that leaves ``clients`` busy or thinking: ``ceiling`` if the
    clients do not fill it (the rest queue in the pool), else the root by bisection."""
    at_ceiling = busy_clients(ceiling)
    low = np.zeros_like(ceiling)
    high = ceiling.copy()
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (low + high)
        above = busy_clients(mid) > clients
        high = np.where(above, mid, high)
        low = np.where(above, low, mid)
    executing: FloatArray = np.where(at_ceiling <= clients, ceiling, 0.5 * (low + high))
    return np.maximum(executing, 1e-9)


def size_grid(max_size: int) -> FloatArray:
    return np.arange(1, max_size + 1, dtype=np.float64)


def smallest_within(curve: FloatArray, fraction: float) -> int:
    """Index+1 (the size) of the first grid point reaching ``fraction`` of the maximum."""
    target = fraction * float(np.max(curve))
    return int(np.argmax(curve >= target)) + 1


def heuristic_size(workload: SimWorkload) -> int:
    """The fallback heuristic cores·(1 + W/S), for comparison in tests and reports."""
    ratio = (workload.io_ms + workload.lock_ms * workload.lock_conflict) / workload.cpu_ms
    return max(1, min(workload.max_size, math.ceil(workload.cores * (1.0 + ratio))))
