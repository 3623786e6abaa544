"""Load benchmark of the service: recommendations and report uploads at 64 concurrent clients.

Starts ``pooltune-service serve`` (uvicorn, migrations applied at start-up) on a free port
on 127.0.0.1 against a fresh PostgreSQL database it creates and drops, enrols one agent per
client, promotes a model for MariaDB (so recommendations take the model path; Percona hosts
get the heuristic), then drives a mix of ``POST /v1/recommendations`` and
``POST /v1/reports`` (60-sample traces, every report a new key) and prints throughput and
p50/p99 latency per route plus the error count. Bounded by ``--requests`` and ``--seconds``.

    .venv/bin/python -m benchmarks.service_load [--clients 64] [--requests 12000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool

from agents.knobs import Engine
from lab.databases import create_database, drop_database
from lab.processes import free_port
from service.recommendations.model_format import LinearKnobModel, LinearPredictor, dump_predictor
from service.registry.service import promote_version, register_version

ADMIN_TOKEN = "bench-admin-token-" + uuid.uuid4().hex
TRACE_SAMPLES = 60


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


def _report(host: dict[str, Any], seq: int) -> dict[str, Any]:
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=seq)
    return {
        "schema_version": 1,
        "idempotency_key": str(uuid.uuid4()),
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


async def _wait_ready(client: httpx.AsyncClient, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode}")
        try:
            if (await client.get("/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError("the service did not become ready within 60 s")


async def _drive(
    base_url: str, *, clients: int, total_requests: int, seconds: float, report_share: float
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:
        enrollment = await client.post(
            "/v1/enrollment-tokens", json={"max_uses": clients}, headers=admin
        )
        enrollment.raise_for_status()
        agents: list[tuple[dict[str, Any], dict[str, str]]] = []
        for index in range(clients):
            host = _host(index)
            enrolled = await client.post(
                "/v1/agents/enroll",
                json={"enrollment_token": enrollment.json()["token"], "host": host},
            )
            enrolled.raise_for_status()
            agents.append((host, {"Authorization": f"Bearer {enrolled.json()['agent_token']}"}))

        # Serialise every payload before timing so the generator's own work stays out of the
        # figures (it shares the two CPUs with the service and PostgreSQL).
        latencies: dict[str, list[float]] = defaultdict(list)
        errors: dict[str, int] = defaultdict(int)
        sources: dict[str, int] = defaultdict(int)
        reasons: dict[str, int] = defaultdict(int)
        period = round(1 / report_share) if report_share > 0 else 0
        per_client = -(-total_requests // clients)
        plans: list[list[tuple[str, str, bytes]]] = []
        for index, (host, _) in enumerate(agents):
            plan = []
            for seq in range(1, per_client + 1):
                if period > 0 and (seq + index) % period == 0:
                    body = _report(host, seq * clients + index)
                    plan.append(("POST /v1/reports", "/v1/reports", json.dumps(body).encode()))
                else:
                    body = {"schema_version": 1, "host": host, "profile": _profile(seq)}
                    plan.append(
                        (
                            "POST /v1/recommendations",
                            "/v1/recommendations",
                            json.dumps(body).encode(),
                        )
                    )
            plans.append(plan)
        deadline = time.monotonic() + seconds

        async def worker(index: int) -> None:
            headers = {**agents[index][1], "Content-Type": "application/json"}
            for route, path, content in plans[index]:
                if time.monotonic() >= deadline:
                    return
                started = time.perf_counter()
                try:
                    response = await client.post(path, content=content, headers=headers)
                except httpx.HTTPError as exc:
                    errors[route] += 1
                    reasons[type(exc).__name__] += 1
                    continue
                latencies[route].append(time.perf_counter() - started)
                if response.status_code >= 300:
                    errors[route] += 1
                    reasons[f"HTTP {response.status_code}: {response.text[:120]}"] += 1
                elif path == "/v1/recommendations":
                    sources[response.json()["source"]] += 1

        started = time.monotonic()
        await asyncio.gather(*(worker(i) for i in range(clients)))
        elapsed = time.monotonic() - started

    done = sum(len(v) for v in latencies.values())
    print(
        f"clients: {clients}   duration: {elapsed:.1f} s   requests: {done}   "
        f"throughput: {done / elapsed:.0f} req/s"
    )
    print(
        f"{'route':<28}{'count':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}"
    )
    for route in sorted(latencies):
        values = sorted(latencies[route])
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(
            f"{route:<28}{len(values):>8}{len(values) / elapsed:>9.0f}"
            f"{statistics.median(values) * 1000:>9.1f}{p99 * 1000:>9.1f}"
            f"{values[-1] * 1000:>9.1f}{errors[route]:>8}"
        )
    print(f"recommendation sources: {dict(sources)}")
    print(f"total errors: {sum(errors.values())}" + (f" {dict(reasons)}" if reasons else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--requests", type=int, default=12000, help="stop after this many")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument(
        "--report-share", type=float, default=0.5, help="share of requests that are reports"
    )
    args = parser.parse_args(argv)

    database_url = create_database("pooltune_bench")
    port = free_port()
    env = {
        **os.environ,
        "POOLTUNE_DATABASE_URL": database_url,
        "POOLTUNE_ADMIN_TOKEN": ADMIN_TOKEN,
        "POOLTUNE_ENVIRONMENT": "production",
        "POOLTUNE_LOG_LEVEL": "WARNING",
        "POOLTUNE_DB_POOL_SIZE": str(max(5, args.clients // (2 * args.workers))),
    }
    command = [
        sys.executable,
        "-m",
        "service.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(args.workers),
    ]
    process = subprocess.Popen(command, env=env)
    try:

        async def run() -> None:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as probe:
                await _wait_ready(probe, process)
            _promote_model(database_url)
            print(
                f"service: uvicorn x{args.workers} workers on 127.0.0.1:{port}, PostgreSQL "
                f"{make_url(database_url).database}; {os.cpu_count()} CPUs shared with this "
                "load generator"
            )
            await _drive(
                f"http://127.0.0.1:{port}",
                clients=args.clients,
                total_requests=args.requests,
                seconds=args.seconds,
                report_share=args.report_share,
            )

        asyncio.run(run())
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        drop_database(database_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
