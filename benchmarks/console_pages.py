"""Server time of the console's pages with 1,000 hosts and 10,000 reports in PostgreSQL.

Creates a PostgreSQL database (``POOLTUNE_BENCH_PG_URL``, else ``POOLTUNE_TEST_PG_URL``),
migrates it, seeds 1,000 enrolled hosts with 10 reports each (120-sample traces), one logged
recommendation per host (half with a predicted gain), 50 pending approval requests and a few
model versions, then signs in to the console in-process (the app over ASGI, no network) and
times each page ``--repeats`` times after a warm-up. Prints p50 / p95 per page and checks
p95 ≤ 200 ms; drops the database at the end. The machine's load is printed before and after.

    .venv/bin/python -m benchmarks.console_pages [--hosts 1000] [--reports-per-host 10]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from httpx import ASGITransport, AsyncClient
from pydantic import SecretStr
from sqlalchemy import create_engine, insert, text, update
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from agents.knobs import Engine
from agents.wire import TraceSample
from lab.databases import create_database, drop_database
from service.app import create_app
from service.approvals.models import Approval
from service.auth.models import Agent
from service.config import Environment, Settings
from service.hosts.models import Host
from service.migrate import upgrade
from service.recommendations.model_format import LinearPredictor, dump_predictor
from service.recommendations.models import RecommendationLog
from service.registry.service import promote_version, register_version
from service.reports.models import Report
from service.reports.trace_codec import encode_trace

ADMIN_TOKEN = "bench-console-token-" + uuid.uuid4().hex
TARGET_MS = 200.0
TRACE_SAMPLES = 120
START = datetime(2026, 11, 1, tzinfo=UTC)


def _traces(count: int, rng: random.Random) -> list[bytes]:
    """A few distinct climb traces (encoded once, shared by many reports)."""
    blobs = []
    for _ in range(count):
        samples = []
        size = rng.choice((4, 8, 16))
        for index in range(TRACE_SAMPLES):
            if index % 12 == 11:
                size = max(1, min(128, size + rng.choice((-2, 2, 4))))
            samples.append(
                TraceSample(
                    t_s=2.0 * index,
                    knobs={"thread_pool_size": size},
                    throughput=8000 + 300 * size * rng.uniform(0.9, 1.1),
                    connections=200,
                    state="search-size" if index < 100 else "hold",
                )
            )
        blobs.append(encode_trace(samples))
    return blobs


def _profile(rng: random.Random) -> dict[str, Any]:
    return {
        "window_s": 60.0,
        "connections": 200,
        "active_connections": 40.0,
        "qps": 12000.0 * rng.uniform(0.5, 2),
        "tps": 800.0,
        "read_fraction": 0.8,
        "latency_ms": 1.6,
        "cpu_ms_per_request": 0.4,
        "wait_ms_per_request": rng.uniform(0.1, 5),
    }


def seed(session: Session, *, hosts: int, reports_per_host: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    blobs = _traces(40, rng)
    host_rows = [
        {
            "hostname": f"db-{index:05d}.bench.example",
            "engine": "mariadb",
            "engine_version": "10.11.19-MariaDB",
            "cpu_count": rng.choice((4, 8, 16, 32)),
            "memory_bytes": 64 * 2**30,
            "created_at": START,
            "updated_at": START,
        }
        for index in range(hosts)
    ]
    host_ids = list(session.scalars(insert(Host).returning(Host.id), host_rows))
    agent_ids = list(
        session.scalars(
            insert(Agent).returning(Agent.id),
            [
                {
                    "host_id": host_id,
                    "token_hash": hashlib.sha256(f"bench-{host_id}".encode()).hexdigest(),
                    "token_prefix": "pta_bench",
                    "created_at": START,
                }
                for host_id in host_ids
            ],
        )
    )
    last: dict[int, tuple[int, datetime, dict[str, int]]] = {}
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        rows = session.execute(
            insert(Report).returning(Report.id, Report.host_id, Report.finished_at), batch
        ).all()
        for report_id, host_id, finished in rows:
            values = {"thread_pool_size": 4 + report_id % 24}
            if host_id not in last or last[host_id][1] < finished:
                last[host_id] = (report_id, finished, values)
        batch.clear()

    for number in range(reports_per_host):
        for host_id, agent_id, facts in zip(host_ids, agent_ids, host_rows, strict=True):
            finished = START + timedelta(hours=number, minutes=rng.uniform(0, 59))
            start_tp = rng.uniform(5000, 20000)
            batch.append(
                {
                    "idempotency_key": f"bench-{host_id}-{number}",
                    "payload_sha256": "0" * 64,
                    "host_id": host_id,
                    "agent_id": agent_id,
                    "engine": "mariadb",
                    "schema_version": 1,
                    "received_at": finished,
                    "started_at": finished - timedelta(minutes=4),
                    "finished_at": finished,
                    "converged": rng.random() < 0.9,
                    "samples_to_converge": 100,
                    "start_source": rng.choice(("model", "heuristic", "current")),
                    "start_model_version": "bench:1",
                    "host_facts": {
                        k: facts[k]
                        for k in (
                            "hostname",
                            "engine",
                            "engine_version",
                            "cpu_count",
                            "memory_bytes",
                        )
                    },
                    "profile": _profile(rng),
                    "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 8}},
                    "optimal_tuple": {
                        "engine": "mariadb",
                        "values": {"thread_pool_size": 4 + number},
                    },
                    "default_tuple": None,
                    "throughput_start": start_tp,
                    "throughput_optimal": start_tp * rng.uniform(1.0, 1.5),
                    "throughput_default": None,
                    "climber": {"name": "pooltune", "version": "1", "settings": {}},
                    "trace_samples": TRACE_SAMPLES,
                    "trace": rng.choice(blobs),
                }
            )
            if len(batch) >= 1000:
                flush()
    if batch:
        flush()
    for host_id, (report_id, finished, values) in last.items():
        session.execute(
            update(Host)
            .where(Host.id == host_id)
            .values(last_report_id=report_id, last_report_at=finished, current_tuple=values)
        )
    session.execute(
        insert(RecommendationLog),
        [
            {
                "created_at": START,
                "engine": "mariadb",
                "host_id": host_id,
                "agent_id": agent_id,
                "source": "model",
                "model_version": "bench:1",
                "host_facts": {},
                "profile": _profile(rng),
                "start_tuple": {"thread_pool_size": 12},
                "ranges": {"thread_pool_size": [6, 24]},
                "predicted_gain": 1.2 if host_id % 2 else None,
                "predicted_gain_low": 1.05 if host_id % 2 else None,
                "predicted_gain_high": 1.35 if host_id % 2 else None,
            }
            for host_id, agent_id in zip(host_ids, agent_ids, strict=True)
        ],
    )
    now = datetime.now(UTC)
    session.execute(
        insert(Approval),
        [
            {
                "idempotency_key": f"bench-approval-{host_id}",
                "request_sha256": "0" * 64,
                "host_id": host_id,
                "agent_id": None,
                "engine": "mariadb",
                "state": "pending",
                "created_at": now,
                "expires_at": now + timedelta(days=1),
                "reason": "",
                "profile": _profile(rng),
                "current_tuple": {"thread_pool_size": 8},
                "recommended_tuple": {"thread_pool_size": 12, "thread_pool_oversubscribe": 3},
                "ranges": {"thread_pool_size": [6, 24], "thread_pool_oversubscribe": [2, 6]},
                "source": "model",
                "predicted_gain": 1.2,
                "predicted_gain_low": 1.05,
                "predicted_gain_high": 1.35,
                "edited": False,
                "ttl_s": 86400,
            }
            for host_id in host_ids[:50]
        ],
    )
    scores = {
        name: {"regret": {"median": r / 2, "mean": r, "p90": r * 3, "count": 400}}
        for name, r in (
            ("lightgbm", 0.04),
            ("sklearn-hgb", 0.05),
            ("heuristic", 0.09),
            ("default", 0.2),
        )
    }
    for number in range(5):
        version = register_version(
            session,
            engine=Engine.MARIADB,
            name="bench",
            artifact=dump_predictor(
                LinearPredictor.constant(Engine.MARIADB, {"thread_pool_size": 6 + number})
            ),
            metrics={"regret": 0.05 - number * 0.005, "scores": scores},
            training_summary={"examples": 3000, "groups": 600},
        )
        promote_version(session, version.id, reason="bench", forced=True)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


async def measure(url: str, *, repeats: int, hosts: int) -> dict[str, list[float]]:
    settings = Settings(
        environment=Environment.TEST,
        database_url=url,
        admin_token=SecretStr(ADMIN_TOKEN),
        db_pool_size=4,
    )
    app = create_app(settings)
    rng = random.Random(1)
    pages: dict[str, Callable[[], str]] = {
        "login form": lambda: "/console/login",
        "fleet (by host)": lambda: "/console/fleet",
        "fleet by gain, desc": lambda: "/console/fleet?sort=gain&desc=true",
        "fleet by age, page 10": lambda: "/console/fleet?sort=age&page=10",
        "fleet search": lambda: f"/console/fleet?q=db-{rng.randrange(100):03d}",
        "fleet awaiting approval": lambda: "/console/fleet?pending=true",
        "host (trace chart)": lambda: f"/console/hosts/{rng.randrange(1, hosts + 1)}",
        "approvals": lambda: "/console/approvals",
        "models": lambda: "/console/models",
        "model card": lambda: "/console/models/5",
    }
    timings: dict[str, list[float]] = {name: [] for name in pages}
    async with app.router.lifespan_context(app):
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://bench") as client:
            form = await client.get("/console/login")
            nonce = form.text.split('name="nonce" value="', 1)[1].split('"', 1)[0]
            signed = await client.post(
                "/console/login", data={"nonce": nonce, "token": ADMIN_TOKEN, "next": ""}
            )
            assert signed.status_code == 303, signed.text
            for name, path in pages.items():
                for attempt in range(repeats + 3):
                    started = time.perf_counter()
                    response = await client.get(path())
                    elapsed = (time.perf_counter() - started) * 1000
                    assert response.status_code == 200, (name, response.status_code)
                    if attempt >= 3:
                        timings[name].append(elapsed)
    return timings


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--reports-per-host", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30, help="timed requests per page")
    args = parser.parse_args(argv)
    print(f"machine: {_load()}")
    url = create_database("pooltune_bench_console")
    try:
        upgrade(url)
        engine = create_engine(url, poolclass=NullPool)
        started = time.perf_counter()
        with sessionmaker(bind=engine).begin() as session:
            seed(session, hosts=args.hosts, reports_per_host=args.reports_per_host)
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            counts = connection.execute(
                text("SELECT (SELECT count(*) FROM hosts), (SELECT count(*) FROM reports)")
            ).one()
        engine.dispose()
        print(
            f"seeded {counts[0]} hosts and {counts[1]} reports in "
            f"{time.perf_counter() - started:.1f} s"
        )
        timings = asyncio.run(measure(url, repeats=args.repeats, hosts=args.hosts))
    finally:
        drop_database(url)
    print(f"\n{'page':<26} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    checks = []
    for page, values in timings.items():
        p50, p95 = statistics.median(values), _percentile(values, 0.95)
        print(f"{page:<26} {len(values):>4} {p50:>8.1f} {p95:>8.1f} {max(values):>8.1f}")
        checks.append((page, p95))
    print(f"\nmachine: {_load()}")
    for page, p95 in checks:
        verdict = "ok" if p95 <= TARGET_MS else "NO"
        print(f"  [{verdict}] {page}: p95 {p95:.1f} ms ≤ {TARGET_MS:.0f} ms")
    return 0 if all(p95 <= TARGET_MS for _, p95 in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
