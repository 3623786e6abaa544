"""The database cut (or frozen) for 20 s under load: what the service answers meanwhile.

Starts ``pooltune-service serve`` (uvicorn) on a fresh PostgreSQL database reached through a
TCP proxy (lab/tcp_proxy.py), then runs, all at once: load clients (agents asking
for recommendations and uploading reports, an admin listing hosts), a /healthz probe every
20 ms, a /readyz probe every 250 ms, and agents that upload through the real spool and
uploader (agents/uploader.py). After ``--before-s`` the proxy cuts (or freezes) the database
for ``--cut-s``, then restores it; afterwards the spools are drained and the database is
checked for every spooled report, once.

    python -m benchmarks.db_outage [--mode cut|freeze] [--cut-s 20] [--clients 6]

The last lines are the done-when checks: no 500 (503 with Retry-After instead), /healthz p99
<= 100 ms throughout, /readyz within its timeout, every spooled report delivered once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.pool import NullPool

from agents.service_client import ServiceClient, Uploader, make_http_client
from agents.spool import Spool
from agents.wire import ClimbReport
from lab.databases import scratch_database
from lab.processes import free_port, stop_process
from lab.service import start_service, wait_until_serving
from lab.tcp_proxy import TcpProxy
from service.migrate import upgrade

READYZ_TIMEOUT_S = 2.0
HEALTHZ_P99_LIMIT_S = 0.100


@dataclass
class Observations:
    """Every answer, with the phase it arrived in."""

    answers: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    no_answer: Counter[tuple[str, str]] = field(default_factory=Counter)
    missing_retry_after: int = 0
    healthz: list[tuple[str, float]] = field(default_factory=list)
    readyz: list[tuple[str, int, float]] = field(default_factory=list)
    recovered_after_s: float | None = None


class Timeline:
    def __init__(self) -> None:
        self.phase = "before"
        self.restored_at = 0.0


def _host(name: str) -> dict[str, Any]:
    return {
        "hostname": f"{name}.outage.example.net",
        "engine": "mariadb",
        "engine_version": "10.11.19-MariaDB",
        "cpu_count": 4,
        "memory_bytes": 8 * 2**30,
    }


def _profile(seq: int) -> dict[str, Any]:
    return {
        "window_s": 30,
        "connections": 64 + seq % 64,
        "active_connections": 8,
        "qps": 1200,
        "tps": 400,
        "cpu_ms_per_request": 0.5,
        "wait_ms_per_request": 1.5,
    }


def _report(host: dict[str, Any], seq: int) -> ClimbReport:
    finished = datetime(2026, 1, 5, 10, tzinfo=UTC) + timedelta(seconds=seq)
    return ClimbReport.model_validate(
        {
            "idempotency_key": f"outage-{uuid.uuid4()}",
            "host": host,
            "profile": _profile(seq),
            "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 4}},
            "start_source": "heuristic",
            "optimal_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 4 + seq % 8}},
            "throughput_start": 380,
            "throughput_optimal": 400,
            "converged": True,
            "samples_to_converge": 12,
            "trace": [
                {
                    "t_s": 2 * i,
                    "knobs": {"thread_pool_size": 4},
                    "throughput": 390,
                    "connections": 64,
                }
                for i in range(20)
            ],
            "climber": {"name": "outage"},
            "started_at": (finished - timedelta(seconds=60)).isoformat(),
            "finished_at": finished.isoformat(),
        }
    )


async def _enrol(client: httpx.AsyncClient, admin: dict[str, str], name: str) -> tuple[str, Any]:
    created = await client.post("/v1/enrollment-tokens", json={}, headers=admin)
    created.raise_for_status()
    host = _host(name)
    enrolled = await client.post(
        "/v1/agents/enroll", json={"enrollment_token": created.json()["token"], "host": host}
    )
    enrolled.raise_for_status()
    return str(enrolled.json()["agent_token"]), host


async def _load_client(
    client: httpx.AsyncClient,
    token: str,
    host: dict[str, Any],
    admin: dict[str, str],
    timeline: Timeline,
    seen: Observations,
    stop: asyncio.Event,
) -> None:
    seq = 0
    agent = {"Authorization": f"Bearer {token}"}
    while not stop.is_set():
        seq += 1
        if seq % 5 == 0:
            route, call = (
                "POST /v1/reports",
                client.post(
                    "/v1/reports", json=_report(host, seq).model_dump(mode="json"), headers=agent
                ),
            )
        elif seq % 5 == 1:
            route, call = "GET /v1/hosts", client.get("/v1/hosts", headers=admin)
        else:
            route, call = (
                "POST /v1/recommendations",
                client.post(
                    "/v1/recommendations",
                    json={"host": host, "profile": _profile(seq)},
                    headers=agent,
                ),
            )
        phase = timeline.phase
        try:
            response = await call
        except httpx.HTTPError as exc:
            seen.no_answer[(phase, f"{route}: {type(exc).__name__}")] += 1
            await asyncio.sleep(0.05)
            continue
        seen.answers[(phase, route, response.status_code)] += 1
        if response.status_code == 503 and "retry-after" not in response.headers:
            seen.missing_retry_after += 1
        await asyncio.sleep(0.05 if response.status_code < 500 else 0.2)


async def _probe_healthz(
    client: httpx.AsyncClient, timeline: Timeline, seen: Observations, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        phase = timeline.phase
        try:
            response = await client.get("/healthz", timeout=5.0)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                elapsed = float("inf")
        except httpx.HTTPError:
            elapsed = float("inf")
        seen.healthz.append((phase, elapsed))
        await asyncio.sleep(0.02)


async def _probe_readyz(
    client: httpx.AsyncClient, timeline: Timeline, seen: Observations, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        phase = timeline.phase
        try:
            status = (await client.get("/readyz", timeout=30.0)).status_code
        except httpx.HTTPError:
            status = 0
        elapsed = time.perf_counter() - started
        # A probe that straddles the start or the end of the fault belongs to no phase.
        seen.readyz.append((phase if phase == timeline.phase else "edge", status, elapsed))
        if phase == "after" and status == 200 and seen.recovered_after_s is None:
            seen.recovered_after_s = time.monotonic() - timeline.restored_at
        await asyncio.sleep(0.25)


def _spool_agent(
    url: str, token: str, host: dict[str, Any], directory: Path, stop: threading.Event
) -> list[str]:
    """Submit a report every 0.5 s through the real spool and uploader; the keys submitted."""
    keys = []
    http = make_http_client(url, timeout_s=10.0)
    try:
        uploader = Uploader(
            ServiceClient(http, token=token, max_attempts=1, stop=stop), Spool(directory)
        )
        seq = 0
        while not stop.wait(0.5):
            seq += 1
            report = _report(host, 10_000 + seq)
            keys.append(report.idempotency_key)
            uploader.submit(report)
    finally:
        http.close()
    return keys


def _drain(url: str, token: str, directory: Path, deadline_s: float = 60.0) -> int:
    """Drain a spool until it is empty (or the deadline); the reports left."""
    http = make_http_client(url, timeout_s=10.0)
    try:
        spool = Spool(directory)
        uploader = Uploader(ServiceClient(http, token=token, max_attempts=3), spool)
        deadline = time.monotonic() + deadline_s
        while len(spool) and time.monotonic() < deadline:
            if uploader.drain().remaining:
                time.sleep(1.0)
        return len(spool)
    finally:
        http.close()


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


async def _run(args: argparse.Namespace, url: str, proxy: TcpProxy, workdir: Path) -> bool:
    admin_token = secrets.token_urlsafe(24)
    admin = {"Authorization": f"Bearer {admin_token}"}
    proxied = make_url(url).set(host="127.0.0.1", port=proxy.port)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "POOLTUNE_DATABASE_URL": proxied.render_as_string(hide_password=False),
        "POOLTUNE_ADMIN_TOKEN": admin_token,
        "POOLTUNE_ENVIRONMENT": "production",
        "POOLTUNE_LOG_LEVEL": "WARNING",
        "POOLTUNE_READYZ_TIMEOUT_S": str(READYZ_TIMEOUT_S),
    }
    log_path = workdir / "service.log"
    with log_path.open("wb") as log:
        process = start_service(port, env=env, log=log, migrate=False)
    seen = Observations()
    timeline = Timeline()
    stop = asyncio.Event()
    thread_stop = threading.Event()
    try:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
        async with httpx.AsyncClient(base_url=base, timeout=30.0, limits=limits) as client:
            await asyncio.to_thread(
                wait_until_serving, process, base, details=lambda: f"see {log_path}"
            )
            loaders = [await _enrol(client, admin, f"load-{i}") for i in range(args.clients)]
            spoolers = [await _enrol(client, admin, f"spool-{i}") for i in range(args.spool_agents)]
            spool_dirs = [workdir / f"spool-{i}" for i in range(args.spool_agents)]
            async with httpx.AsyncClient(base_url=base, timeout=5.0) as probe_client:
                tasks = [
                    asyncio.create_task(
                        _load_client(client, token, host, admin, timeline, seen, stop)
                    )
                    for token, host in loaders
                ]
                tasks.append(
                    asyncio.create_task(_probe_healthz(probe_client, timeline, seen, stop))
                )
                tasks.append(asyncio.create_task(_probe_readyz(client, timeline, seen, stop)))
                spooling = [
                    asyncio.create_task(
                        asyncio.to_thread(_spool_agent, base, token, host, directory, thread_stop)
                    )
                    for (token, host), directory in zip(spoolers, spool_dirs, strict=True)
                ]
                await asyncio.sleep(args.before_s)
                timeline.phase = args.mode
                proxy.cut() if args.mode == "cut" else proxy.freeze()
                await asyncio.sleep(args.cut_s)
                proxy.restore()
                timeline.restored_at = time.monotonic()
                timeline.phase = "after"
                await asyncio.sleep(args.after_s)
                stop.set()
                thread_stop.set()
                await asyncio.gather(*tasks)
                submitted = [key for keys in await asyncio.gather(*spooling) for key in keys]
        left = [
            await asyncio.to_thread(_drain, base, token, directory)
            for (token, _), directory in zip(spoolers, spool_dirs, strict=True)
        ]
    finally:
        stop_process(process, timeout_s=20)
    return _report_figures(args, url, seen, submitted, sum(left))


def _report_figures(
    args: argparse.Namespace, url: str, seen: Observations, submitted: list[str], left: int
) -> bool:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT idempotency_key, count(*) FROM reports "
                "WHERE idempotency_key = ANY(:keys) GROUP BY idempotency_key"
            ),
            {"keys": submitted},
        ).all()
    engine.dispose()
    stored: dict[str, int] = dict(rows)
    lost = sum(1 for key in submitted if key not in stored)
    duplicated = sum(count - 1 for count in stored.values())

    print(f"database {args.mode} for {args.cut_s:g} s under load; machine: {_uptime()}")
    print(f"{'phase':<8}{'route':<28}{'status':>7}{'count':>8}")
    for (phase, route, status), count in sorted(seen.answers.items()):
        print(f"{phase:<8}{route:<28}{status:>7}{count:>8}")
    for (phase, what), count in sorted(seen.no_answer.items()):
        print(f"{phase:<8}{what:<35}{count:>8}  (no answer)")
    health_all = [elapsed for _, elapsed in seen.healthz]
    health_down = [elapsed for phase, elapsed in seen.healthz if phase == args.mode]
    ready_down = [(status, elapsed) for phase, status, elapsed in seen.readyz if phase == args.mode]
    ready_max = max((elapsed for _, _, elapsed in seen.readyz), default=float("nan"))
    print(
        f"/healthz: {len(health_all)} probes, p50 {_percentile(health_all, 0.5) * 1000:.1f} ms, "
        f"p99 {_percentile(health_all, 0.99) * 1000:.1f} ms, max {max(health_all) * 1000:.1f} ms;"
        f" during the {args.mode}: p99 {_percentile(health_down, 0.99) * 1000:.1f} ms"
    )
    print(
        f"/readyz: {len(seen.readyz)} probes, max {ready_max * 1000:.0f} ms; during the "
        f"{args.mode}: statuses {dict(Counter(status for status, _ in ready_down))}; ready "
        f"again {seen.recovered_after_s or float('nan'):.1f} s after the restore"
    )
    print(
        f"spooled reports: {len(submitted)} submitted, {len(stored)} stored, {lost} lost, "
        f"{duplicated} duplicated, {left} still spooled"
    )
    errors_500 = sum(count for (_, _, status), count in seen.answers.items() if status == 500)
    unavailable = sum(count for (_, _, status), count in seen.answers.items() if status == 503)
    no_answer = sum(seen.no_answer.values())
    checks = [
        ("answers of 500", errors_500 == 0, errors_500),
        ("503 without Retry-After", seen.missing_retry_after == 0, seen.missing_retry_after),
        (f"503 answers during the {args.mode}", unavailable > 0, unavailable),
        ("requests without an answer", no_answer == 0, no_answer),
        (
            "/healthz p99 <= 100 ms",
            _percentile(health_all, 0.99) <= HEALTHZ_P99_LIMIT_S,
            f"{_percentile(health_all, 0.99) * 1000:.1f} ms",
        ),
        (
            f"/readyz within its timeout ({READYZ_TIMEOUT_S:g} s)",
            ready_max <= READYZ_TIMEOUT_S + 0.25,
            f"{ready_max * 1000:.0f} ms",
        ),
        (
            f"/readyz 503 during the {args.mode}",
            bool(ready_down) and all(status == 503 for status, _ in ready_down),
            len(ready_down),
        ),
        ("spooled reports lost", lost == 0 and left == 0, lost + left),
        ("spooled reports duplicated", duplicated == 0, duplicated),
    ]
    for label, holds, figure in checks:
        print(f"[{'ok' if holds else 'NO'}] {label}: {figure}")
    return all(holds for _, holds, _ in checks)


def _uptime() -> str:
    """The load averages (1, 5, 15 min) on this shared machine when measured."""
    try:
        return "load average " + ", ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "load unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["cut", "freeze"], default="cut")
    parser.add_argument("--cut-s", type=float, default=20.0)
    parser.add_argument("--before-s", type=float, default=5.0)
    parser.add_argument("--after-s", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--spool-agents", type=int, default=3)
    args = parser.parse_args(argv)
    # The spooling agents' own warnings ("service unreachable, n report(s) stay spooled").
    logging.getLogger("agents").setLevel(logging.ERROR)
    with scratch_database("pooltune_outage") as url, tempfile.TemporaryDirectory() as tmp:
        upgrade(url)
        target = make_url(url)
        proxy = TcpProxy(target.host or "127.0.0.1", target.port or 5432).start()
        try:
            ok = asyncio.run(_run(args, url, proxy, Path(tmp)))
        finally:
            proxy.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
