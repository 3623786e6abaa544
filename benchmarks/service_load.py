"""Load benchmark of the service: closed loop, open loop and sustained ingest.

Starts ``pooltune-service serve`` (uvicorn, migrations applied at start-up) on a free port
on 127.0.0.1 against a fresh PostgreSQL database it creates and drops, enrols one agent per
host, promotes a model for MariaDB (so MariaDB hosts take the model path; Percona hosts get
the heuristic), then, with the load generator of :mod:`benchmarks.http_load` on the same
machine:

- **closed loop**: ``--clients`` clients (64) each send a mix of ``POST /v1/recommendations``
  and ``POST /v1/reports`` (60-sample traces, every report a new key) back to back;
- **open loop**: Poisson arrivals of the same mix at fixed rates (``--rates``), each for
  ``--step-seconds``, stepped up until recommendation p99 passes 50 ms; latency counts from
  the scheduled arrival (no coordinated omission);
- **ingest**: reports only at ``--ingest-rate`` for ``--ingest-seconds`` (a share of them
  re-sent with their key, as a spooling agent would), then the rows are counted in the
  database: every acknowledged key stored once, none lost, none duplicated.

Per route it prints p50/p99/p999, throughput and errors, the server's share of the CPUs
(its processes; PostgreSQL's and the generator's beside it), that the recommendation log
holds a row per answered recommendation, and ends with the done-when checks. Per open-loop
and ingest phase it counts the answers over 50 ms late, in bursts, and how many bursts had
a pause of the machine or a held event loop of a service worker inside
(:mod:`benchmarks.pauses`). Bounded by
``--requests`` and the durations; traffic only to 127.0.0.1.

    .venv/bin/python -m benchmarks.service_load [--mode all|closed|open|ingest]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool

from agents.knobs import Engine
from benchmarks.http_load import (
    LATE_S,
    Call,
    CpuMeter,
    Outcome,
    Results,
    closed_loop,
    measured,
    open_loop,
    percentile,
    print_results,
)
from benchmarks.pauses import LoopStalls, PauseMeter, Watchers
from lab.databases import create_database, drop_database
from lab.processes import free_port
from service.recommendations.model_format import LinearKnobModel, LinearPredictor, dump_predictor
from service.registry.service import promote_version, register_version

ADMIN_TOKEN = "bench-admin-token-" + uuid.uuid4().hex
TRACE_SAMPLES = 60
REC = "POST /v1/recommendations"
REPORT = "POST /v1/reports"
P99_TARGET_S = 0.050
OPEN_TARGET_RPS = 400
CLOSED_TARGET_RPS = 400
INGEST_TARGET_RPS = 300


def _promote_model(database_url: str) -> None:
    engine = create_engine(database_url, poolclass=NullPool)
    predictor = LinearPredictor(
        engine=Engine.MARIADB,
        knobs={
            "thread_pool_size": LinearKnobModel(
                intercept=0.0, coefficients={"log_cpu_count": 1.0, "log_blocking_coefficient": 1.0}
            )
        },
    )
    with sessionmaker(bind=engine).begin() as session:
        version = register_version(
            session,
            engine=Engine.MARIADB,
            name="bench",
            artifact=dump_predictor(predictor),
            metrics={"regret": 0.05},
            training_summary={"reports": 0},
        )
        promote_version(session, version.id, reason="benchmark", forced=True)
    engine.dispose()


def _host(index: int) -> dict[str, Any]:
    return {
        "hostname": f"bench-{index}.example.net",
        "engine": "mariadb" if index % 2 == 0 else "percona",
        "engine_version": "10.11.19-MariaDB",
        "cpu_count": 2 + index % 30,
        "memory_bytes": 16 * 2**30,
    }


def _profile(seq: int) -> dict[str, Any]:
    return {
        "window_s": 60.0,
        "connections": 50 + seq % 200,
        "active_connections": 20.0,
        "qps": 5000.0 + seq,
        "tps": 400.0,
        "read_fraction": 0.7,
        "latency_ms": 2.0,
        "cpu_ms_per_request": 0.5,
        "wait_ms_per_request": 1.5,
    }


def _report_template(host: dict[str, Any], seq: int) -> bytes:
    """A report with ``__KEY__`` where its idempotency key goes (filled per request)."""
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=seq)
    report = {
        "schema_version": 1,
        "idempotency_key": "__KEY__",
        "host": host,
        "profile": _profile(seq),
        "start_tuple": {"engine": host["engine"], "values": {"thread_pool_size": 8}},
        "start_source": "model",
        "start_model_version": "bench:1",
        "optimal_tuple": {"engine": host["engine"], "values": {"thread_pool_size": 12}},
        "throughput_start": 4000.0,
        "throughput_optimal": 5200.0,
        "converged": True,
        "samples_to_converge": TRACE_SAMPLES,
        "trace": [
            {
                "t_s": 2.0 * i,
                "knobs": {"thread_pool_size": 8 + i % 8},
                "throughput": 4000.0 + 20 * i,
                "latency_ms": 2.0,
                "connections": 120,
                "state": "USUAL",
            }
            for i in range(TRACE_SAMPLES)
        ],
        "climber": {"name": "pooltune", "version": "1", "settings": {}},
        "started_at": started.isoformat(),
        "finished_at": (started + timedelta(seconds=2 * TRACE_SAMPLES)).isoformat(),
    }
    return json.dumps(report).encode()


@dataclass
class Agent:
    authorization: str
    recommendation_bodies: list[bytes]
    report_templates: list[bytes]


class Workload:
    """The calls of every mode: agents, their payloads, and what was acknowledged."""

    def __init__(self, agents: list[Agent], *, report_share: float, seed: int) -> None:
        self.agents = agents
        self.report_share = report_share
        self.rng = random.Random(seed)
        self.acknowledged_keys: dict[str, int] = {}
        self.recommendations_answered = 0
        self._keys: list[tuple[str, bytes, str]] = []  # (key, body, authorization) for re-sends

    def report_call(self, agent: Agent) -> Call:
        key = uuid.uuid4().hex
        body = self.rng.choice(agent.report_templates).replace(b"__KEY__", key.encode())
        self._keys.append((key, body, agent.authorization))
        return Call(REPORT, "/v1/reports", agent.authorization, body)

    def resend_call(self) -> Call:
        """An earlier report again, same key and payload (an agent retrying)."""
        _, body, authorization = self.rng.choice(self._keys[-5000:])
        return Call(REPORT, "/v1/reports", authorization, body)

    def recommendation_call(self, agent: Agent) -> Call:
        body = self.rng.choice(agent.recommendation_bodies)
        return Call(REC, "/v1/recommendations", agent.authorization, body)

    def mixed_call(self) -> Call:
        agent = self.rng.choice(self.agents)
        if self.rng.random() < self.report_share:
            return self.report_call(agent)
        return self.recommendation_call(agent)

    def on_answer(self, call: Call, outcome: Outcome) -> None:
        if outcome.status >= 300:
            return
        if call.route == REC:
            self.recommendations_answered += 1
        else:
            key = json.loads(outcome.body)["idempotency_key"]
            self.acknowledged_keys[key] = self.acknowledged_keys.get(key, 0) + 1


def rec_p99(results: Results) -> float:
    return percentile(sorted(results.latencies[REC]), 0.99)


async def _enrol(base_url: str, count: int) -> list[Agent]:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        created = await client.post(
            "/v1/enrollment-tokens", json={"max_uses": count}, headers=admin
        )
        created.raise_for_status()
        agents = []
        for index in range(count):
            host = _host(index)
            enrolled = await client.post(
                "/v1/agents/enroll",
                json={"enrollment_token": created.json()["token"], "host": host},
            )
            enrolled.raise_for_status()
            agents.append(
                Agent(
                    authorization=f"Bearer {enrolled.json()['agent_token']}",
                    recommendation_bodies=[
                        json.dumps(
                            {"schema_version": 1, "host": host, "profile": _profile(seq)}
                        ).encode()
                        for seq in range(index, index + 8)
                    ],
                    report_templates=[_report_template(host, seq) for seq in range(4)],
                )
            )
    return agents


async def _closed(args: argparse.Namespace, port: int, work: Workload, meter: CpuMeter) -> Results:
    per_client = -(-args.requests // args.clients)
    plans = [[work.mixed_call() for _ in range(per_client)] for _ in range(args.clients)]
    results, cpu = await measured(
        meter,
        lambda: closed_loop(port, plans, seconds=args.seconds, on_answer=work.on_answer),
    )
    print_results(f"closed loop, {args.clients} clients", results, cpu)
    return results


async def _open(
    args: argparse.Namespace, port: int, work: Workload, meter: CpuMeter, pauses: Watchers
) -> list[Results]:
    steps: list[Results] = []
    # Warm-up (not counted): connections opened, caches filled, the JIT-less paths hot.
    await open_loop(port, work.mixed_call, rate=args.rates[0], seconds=3, seed=args.seed)
    for index, rate in enumerate(args.rates):
        step = functools.partial(
            open_loop,
            port,
            work.mixed_call,
            rate=rate,
            seconds=args.step_seconds,
            seed=args.seed + index,
            on_answer=work.on_answer,
        )
        results, cpu = await measured(meter, step)
        print_results(f"open loop, Poisson arrivals at {rate:.0f}/s", results, cpu)
        _print_pauses(results, pauses)
        steps.append(results)
        if not rec_p99(results) <= P99_TARGET_S:
            break
    return steps


def _print_pauses(results: Results, pauses: Watchers) -> None:
    """Requests answered over ``LATE_S`` late, in bursts, beside the machine's own pauses
    and the service loops' stalls (benchmarks/pauses.py), to tell whose a burst may be."""
    end = results.started_at + results.elapsed_s
    print(pauses.describe(results.late, results.started_at, end, LATE_S))


async def _ingest(
    args: argparse.Namespace, port: int, work: Workload, meter: CpuMeter, pauses: Watchers
) -> Results:
    def next_call() -> Call:
        if work._keys and work.rng.random() < args.resend_share:
            return work.resend_call()
        return work.report_call(work.rng.choice(work.agents))

    results, cpu = await measured(
        meter,
        lambda: open_loop(
            port,
            next_call,
            rate=args.ingest_rate,
            seconds=args.ingest_seconds,
            seed=args.seed,
            on_answer=work.on_answer,
        ),
    )
    print_results(
        f"ingest, reports only ({args.resend_share:.0%} re-sent with their key)", results, cpu
    )
    _print_pauses(results, pauses)
    return results


def _count_rows(database_url: str, work: Workload) -> tuple[int, int, int, int]:
    """(acknowledged keys not stored, keys stored more than once, log rows, answered)."""
    engine = create_engine(database_url, poolclass=NullPool)
    keys = list(work.acknowledged_keys)
    with engine.connect() as connection:
        stored: dict[str, int] = dict(
            connection.execute(
                text(
                    "SELECT idempotency_key, count(*) FROM reports "
                    "WHERE idempotency_key = ANY(:keys) GROUP BY idempotency_key"
                ),
                {"keys": keys},
            ).all()
        )
        log_rows = connection.execute(text("SELECT count(*) FROM recommendation_log")).scalar()
    engine.dispose()
    lost = sum(1 for key in keys if key not in stored)
    duplicated = len([count for count in stored.values() if count > 1])
    return lost, duplicated, int(log_rows or 0), work.recommendations_answered


def _check(ok: bool, text_: str) -> str:
    return f"[{'ok' if ok else 'NO'}] {text_}"


def _summary(
    closed: Results | None,
    steps: list[Results],
    ingest: Results | None,
    counts: tuple[int, int, int, int],
    args: argparse.Namespace,
) -> None:
    print()
    lost, duplicated, log_rows, answered = counts
    print(
        f"database afterwards: acknowledged report keys {lost} lost, {duplicated} stored "
        f"twice; recommendation log {log_rows} rows for {answered} answered "
        f"({max(0, answered - log_rows)} missing)"
    )
    if steps:
        good = [
            r.offered_rate or 0.0
            for r in steps
            if rec_p99(r) <= P99_TARGET_S and r.error_count == 0
        ]
        best = max(good, default=0.0)
        print(
            _check(
                best >= OPEN_TARGET_RPS,
                f"open loop: highest rate with recommendation p99 <= 50 ms and 0 errors: "
                f"{best:.0f}/s (target >= {OPEN_TARGET_RPS}/s)",
            )
        )
    if closed is not None:
        rate = closed.completed / closed.elapsed_s
        print(
            _check(
                rate >= CLOSED_TARGET_RPS and closed.error_count == 0,
                f"closed loop, {args.clients} clients: {rate:.0f} req/s, "
                f"{closed.error_count} errors (target >= {CLOSED_TARGET_RPS} req/s, 0 errors)",
            )
        )
    if ingest is not None:
        created = sum(count for status, count in ingest.statuses[REPORT].items() if status == 201)
        # Arrivals were offered over ``offered_s``; the run ends with the last answer, up
        # to a few ms earlier or later than that (the last arrival falls before its end).
        window = max(ingest.elapsed_s, ingest.offered_s or 0.0)
        rate = created / window
        print(
            _check(
                rate >= INGEST_TARGET_RPS
                and window >= 60
                and ingest.error_count == 0
                and lost == 0
                and duplicated == 0,
                f"ingest: {rate:.0f} new reports/s for {window:.0f} s, "
                f"{ingest.error_count} errors, {lost} lost, {duplicated} duplicated "
                f"(target >= {INGEST_TARGET_RPS}/s for 60 s, 0 lost, 0 duplicated)",
            )
        )
    print(_check(log_rows >= answered, "every answered recommendation has its log row"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mode", choices=["all", "closed", "open", "ingest"], default="all", help="what to run"
    )
    parser.add_argument("--clients", type=int, default=64, help="closed loop: clients")
    parser.add_argument("--requests", type=int, default=30000, help="closed loop: at most")
    parser.add_argument("--seconds", type=float, default=30.0, help="closed loop: at most")
    parser.add_argument(
        "--rates",
        type=lambda text_: [float(r) for r in text_.split(",")],
        default=[200.0, 300.0, 400.0, 500.0, 600.0, 800.0],
        help="open loop: arrival rates (req/s) in order; stops after p99 passes 50 ms",
    )
    parser.add_argument("--step-seconds", type=float, default=10.0, help="open loop: per rate")
    parser.add_argument("--ingest-rate", type=float, default=330.0, help="ingest: reports/s")
    parser.add_argument("--ingest-seconds", type=float, default=60.0)
    parser.add_argument(
        "--resend-share", type=float, default=0.05, help="ingest: share re-sent with their key"
    )
    parser.add_argument("--agents", type=int, default=200, help="enrolled hosts")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument(
        "--report-share", type=float, default=0.5, help="mixed modes: share that are reports"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    database_url = create_database("pooltune_bench")
    port = free_port()
    env = {
        **os.environ,
        "POOLTUNE_DATABASE_URL": database_url,
        "POOLTUNE_ADMIN_TOKEN": ADMIN_TOKEN,
        "POOLTUNE_ENVIRONMENT": "production",
        "POOLTUNE_LOG_LEVEL": "WARNING",
        "POOLTUNE_DB_POOL_SIZE": "10",
        "POOLTUNE_LOOP_LAG_WARN_MS": "20",
    }
    command = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", str(args.workers)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    pauses = Watchers(PauseMeter().start(), LoopStalls(process.stderr, sys.stderr).start())
    try:

        async def run() -> None:
            base_url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            async with httpx.AsyncClient(base_url=base_url) as probe:
                while True:
                    if process.poll() is not None:
                        raise RuntimeError(f"the service exited with {process.returncode}")
                    try:
                        if (await probe.get("/readyz")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError("the service did not become ready within 60 s")
                    await asyncio.sleep(0.2)
            _promote_model(database_url)
            agents = await _enrol(base_url, args.agents)
            work = Workload(agents, report_share=args.report_share, seed=args.seed)
            meter = CpuMeter(process.pid)
            load = os.getloadavg()
            print(
                f"service: uvicorn x{args.workers} workers on 127.0.0.1:{port}, PostgreSQL; "
                f"{os.cpu_count()} CPUs shared with this load generator; {args.agents} hosts; "
                f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
            )
            closed = (
                await _closed(args, port, work, meter) if args.mode in ("all", "closed") else None
            )
            modes = ("all", "open")
            steps = await _open(args, port, work, meter, pauses) if args.mode in modes else []
            ingest = (
                await _ingest(args, port, work, meter, pauses)
                if args.mode in ("all", "ingest")
                else None
            )
            await asyncio.sleep(0.5)  # let the last answered batch's commit settle
            _summary(closed, steps or [], ingest, _count_rows(database_url, work), args)

        asyncio.run(run())
    finally:
        pauses.machine.stop()
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        drop_database(database_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
