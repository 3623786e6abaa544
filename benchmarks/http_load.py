"""A small HTTP/1.1 load generator for the service benchmarks: closed and open loop.

The generator shares the machine's cores with the service and PostgreSQL, so it is kept
cheap: keep-alive connections on asyncio streams, requests pre-serialised, responses read
by ``Content-Length`` (the service always sends it) without parsing the body unless asked.
httpx costs several times more CPU per request, which the service would lose.

Open loop (:func:`open_loop`): arrivals follow a Poisson process at a fixed rate whatever
the responses, and a request's latency counts from its *scheduled* arrival, so a stalled
server shows up as queueing delay instead of as fewer requests (no coordinated omission).
Traffic goes to 127.0.0.1 only.

The generator's own stalls must not count as the service's: during a measured phase its
garbage collector is paused (:func:`measured`; it holds every plan and latency, and a full
collection of that heap stopped its event loop for 110–150 ms, which the open loop then
charged to the requests due meanwhile). A pooled connection the server closed while idle
(uvicorn's keep-alive timeout) is dropped before reuse, as HTTP clients do.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: An open-loop answer later than this after its arrival is listed in ``Results.late``.
LATE_S = 0.050


@dataclass(frozen=True, slots=True)
class Call:
    """One request: its route label (for the figures), path, headers and body."""

    route: str
    path: str
    authorization: str
    body: bytes


@dataclass(slots=True)
class Outcome:
    status: int
    body: bytes


@dataclass
class Results:
    """Latencies (s) and errors per route, and what each successful answer said."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    statuses: dict[str, dict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    elapsed_s: float = 0.0
    offered_rate: float | None = None
    #: How long arrivals were offered (open loop).
    offered_s: float | None = None
    #: Requests sent again on a fresh connection (:meth:`ConnectionPool.call`).
    resent: int = 0
    #: Open loop: (arrival, answer) on the loop's clock (``time.monotonic``) of every request
    #: answered more than :data:`LATE_S` after its arrival, and when the phase began.
    late: list[tuple[float, float]] = field(default_factory=list)
    started_at: float = 0.0

    @property
    def completed(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def record(self, call: Call, latency_s: float, outcome: Outcome | BaseException) -> None:
        if isinstance(outcome, BaseException):
            self.errors[call.route] += 1
            self.reasons[type(outcome).__name__] += 1
            return
        self.latencies[call.route].append(latency_s)
        self.statuses[call.route][outcome.status] += 1
        if outcome.status >= 300:
            self.errors[call.route] += 1
            self.reasons[f"HTTP {outcome.status}: {outcome.body[:100]!r}"] += 1


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of sorted ``values`` (nan when empty)."""
    if not values:
        return float("nan")
    return values[min(len(values) - 1, max(0, int(len(values) * share + 0.5) - 1))]


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def send(self, call: Call) -> Outcome:
        head = (
            f"POST {call.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: {call.authorization}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(call.body)}\r\n\r\n"
        ).encode()
        self.writer.write(head + call.body)
        status_line = await self.reader.readuntil(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        length = 0
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = await self.reader.readexactly(length) if length else b""
        return Outcome(status, body)

    def closed_by_server(self) -> bool:
        """The server ended this idle connection (its keep-alive timeout passed)."""
        return self.reader.at_eof() or self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


def _closed_before_answer(exc: BaseException) -> bool:
    """The connection ended before the first byte of an answer (a keep-alive race)."""
    if isinstance(exc, asyncio.IncompleteReadError):
        return not exc.partial
    return isinstance(exc, (ConnectionResetError, BrokenPipeError))


class ConnectionPool:
    """Idle connections reused; a new one opened when none is idle, up to ``limit``."""

    def __init__(self, port: int, limit: int) -> None:
        self.port = port
        self.limit = limit
        self._idle: list[Connection] = []
        self._open = 0
        self._freed = asyncio.Condition()
        #: Requests sent again after a reused connection closed before any answer.
        self.resent = 0

    async def call(self, call: Call) -> Outcome:
        for attempt in (1, 2):
            connection, reused = await self._acquire()
            try:
                outcome = await connection.send(call)
            except BaseException as exc:
                connection.close()
                self._open -= 1
                async with self._freed:
                    self._freed.notify()
                if attempt == 1 and reused and _closed_before_answer(exc):
                    # The server closed the idle connection as the request went out: sent
                    # again once on a fresh one, as the agent's client retries network
                    # errors; counted, never hidden.
                    self.resent += 1
                    continue
                raise
            self._idle.append(connection)
            async with self._freed:
                self._freed.notify()
            return outcome
        raise AssertionError("unreachable")

    async def _acquire(self) -> tuple[Connection, bool]:
        """A connection, and whether it served a request before."""
        while True:
            if self._idle:
                connection = self._idle.pop()
                if connection.closed_by_server():
                    connection.close()
                    self._open -= 1
                    continue
                return connection, True
            if self._open < self.limit:
                self._open += 1
                try:
                    return await Connection.open(self.port), False
                except BaseException:
                    self._open -= 1
                    raise
            async with self._freed:
                await self._freed.wait()

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()


OnAnswer = Callable[[Call, Outcome], None]


async def closed_loop(
    port: int,
    plans: Sequence[Sequence[Call]],
    *,
    seconds: float,
    on_answer: OnAnswer | None = None,
    timeout_s: float = 30.0,
) -> Results:
    """One client per plan, each sending its calls back to back on its own connection."""
    results = Results()
    deadline = time.monotonic() + seconds

    async def client(plan: Sequence[Call]) -> None:
        connection = await Connection.open(port)
        try:
            for call in plan:
                if time.monotonic() >= deadline:
                    return
                started = time.perf_counter()
                try:
                    outcome: Outcome | BaseException = await asyncio.wait_for(
                        connection.send(call), timeout_s
                    )
                except (OSError, asyncio.IncompleteReadError, ValueError, TimeoutError) as exc:
                    outcome = exc
                    connection.close()
                    connection = await Connection.open(port)
                results.record(call, time.perf_counter() - started, outcome)
                if on_answer is not None and isinstance(outcome, Outcome):
                    on_answer(call, outcome)
        finally:
            connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client(plan) for plan in plans))
    results.elapsed_s = time.monotonic() - started
    return results


async def open_loop(
    port: int,
    next_call: Callable[[], Call],
    *,
    rate: float,
    seconds: float,
    seed: int,
    max_connections: int = 512,
    on_answer: OnAnswer | None = None,
    timeout_s: float = 30.0,
) -> Results:
    """Poisson arrivals at ``rate`` per second for ``seconds``; each request's latency is
    measured from its scheduled arrival. At most ``max_connections`` are in flight (beyond,
    arrivals wait for a connection, and the wait counts)."""
    results = Results(offered_rate=rate, offered_s=seconds)
    rng = random.Random(seed)
    pool = ConnectionPool(port, max_connections)
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def one(call: Call, scheduled: float) -> None:
        try:
            outcome: Outcome | BaseException = await asyncio.wait_for(pool.call(call), timeout_s)
        except (OSError, asyncio.IncompleteReadError, ValueError, TimeoutError) as exc:
            outcome = exc
        answered = loop.time()
        results.record(call, answered - scheduled, outcome)
        if answered - scheduled > LATE_S:
            results.late.append((scheduled, answered))
        if on_answer is not None and isinstance(outcome, Outcome):
            on_answer(call, outcome)

    start = loop.time() + 0.05
    results.started_at = start
    arrival = start
    end = start + seconds
    while True:
        arrival += rng.expovariate(rate)
        if arrival >= end:
            break
        delay = arrival - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        task = loop.create_task(one(next_call(), arrival))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    results.elapsed_s = loop.time() - start
    results.resent = pool.resent
    pool.close()
    return results


#: CPU seconds: the service's processes, PostgreSQL's, this generator, the whole machine.
CpuSample = tuple[float, float, float, float]


class CpuMeter:
    """CPU seconds of the service's processes, of PostgreSQL's (every database on the
    server), of this generator, and of the whole machine (to tell a busy shared host)."""

    def __init__(self, service_pid: int) -> None:
        self.service_pid = service_pid
        self.ticks = os.sysconf("SC_CLK_TCK")

    def _processes(self) -> list[tuple[int, int, str, float]]:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) / self.ticks
            found.append((int(entry.name), int(fields[1]), name, cpu))
        return found

    def sample(self) -> CpuSample:
        processes = self._processes()
        family = {self.service_pid}
        changed = True
        while changed:
            changed = False
            for pid, ppid, _, _ in processes:
                if ppid in family and pid not in family:
                    family.add(pid)
                    changed = True
        service = sum(cpu for pid, _, _, cpu in processes if pid in family)
        postgres = sum(cpu for _, _, name, cpu in processes if name.startswith("postgres"))
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / self.ticks
        return service, postgres, time.process_time(), busy


def print_results(title: str, results: Results, cpu: CpuSample) -> None:
    done = results.completed
    cores = os.cpu_count() or 1
    wall = results.elapsed_s * cores
    offered = f"   offered: {results.offered_rate:.0f}/s" if results.offered_rate else ""
    print(
        f"{title}{offered}   duration: {results.elapsed_s:.1f} s   requests: {done}   "
        f"throughput: {done / results.elapsed_s:.0f} req/s   errors: {results.error_count}"
    )
    print(
        f"  CPU share of {cores} cores: service {cpu[0] / wall:.0%}, PostgreSQL (all) "
        f"{cpu[1] / wall:.0%}, load generator {cpu[2] / wall:.0%}, everything else on the "
        f"machine {max(0.0, cpu[3] - cpu[0] - cpu[1] - cpu[2]) / wall:.0%}"
    )
    print(
        f"  {'route':<26}{'count':>7}{'req/s':>7}{'p50 ms':>8}{'p99 ms':>8}{'p999 ms':>9}"
        f"{'max ms':>8}{'errors':>7}"
    )
    for route in sorted(set(results.latencies) | set(results.errors)):
        values = sorted(results.latencies[route])
        ms = [percentile(values, q) * 1000 for q in (0.5, 0.99, 0.999)]
        top = values[-1] * 1000 if values else float("nan")
        print(
            f"  {route:<26}{len(values):>7}{len(values) / results.elapsed_s:>7.0f}"
            f"{ms[0]:>8.1f}{ms[1]:>8.1f}{ms[2]:>9.1f}{top:>8.1f}{results.errors[route]:>7}"
        )
    if results.reasons:
        print(f"  error reasons: {dict(results.reasons)}")
    if results.resent:
        print(f"  sent again after the server closed an idle connection: {results.resent}")


async def measured(
    meter: CpuMeter, run: Callable[[], Awaitable[Results]]
) -> tuple[Results, CpuSample]:
    """``run``'s results and the CPU seconds (service, PostgreSQL, generator) it took; the
    generator's garbage collector is paused meanwhile (see the module docstring)."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        before = meter.sample()
        results = await run()
        after = meter.sample()
    finally:
        gc.enable()
        gc.unfreeze()
    return results, (
        after[0] - before[0],
        after[1] - before[1],
        after[2] - before[2],
        after[3] - before[3],
    )
