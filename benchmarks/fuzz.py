"""Schemathesis over every route of the service, once with an agent token, once with the admin
token: requests generated from the app's own OpenAPI (valid and invalid), sent in-process to
the app on a real PostgreSQL database seeded with an agent, its host, reports and a promoted
model. Counts every status; a server error (5xx) or a status the operation does not document
is a failure.

    python -m benchmarks.fuzz --requests 5000      # per token kind; prints the [ok]/[NO] checks

The database is created on ``POOLTUNE_TEST_PG_URL``'s server and dropped afterwards.
tests/service/test_fuzz.py runs the same with fewer requests on every ``make test``.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import GenerationMode
from schemathesis.core.result import Err
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool

from agents.knobs import Engine as DbEngine
from agents.wire import ClimbReport, HostFacts
from service.auth import service as auth_service
from service.recommendations.model_format import LinearPredictor, dump_predictor
from service.registry import service as registry_service
from service.reports import service as report_service

Kind = Literal["agent", "admin"]
KINDS: tuple[Kind, ...] = ("agent", "admin")


@dataclass(frozen=True)
class FuzzSeed:
    """What the database holds before fuzzing: known ids make generated requests hit rows."""

    agent_token: str
    host: dict[str, Any]
    ids: dict[str, list[int]]


@dataclass
class FuzzResult:
    kind: Kind
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    undocumented: list[str] = field(default_factory=list)
    #: 2xx answers per operation ("POST /v1/reports").
    accepted: Counter[str] = field(default_factory=Counter)
    elapsed_s: float = 0.0

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())


def _report(host: dict[str, Any], index: int) -> ClimbReport:
    return ClimbReport.model_validate(
        {
            "idempotency_key": f"fuzz-seed-{uuid.uuid4()}",
            "host": host,
            "profile": {
                "window_s": 30,
                "connections": 64,
                "active_connections": 8,
                "qps": 900,
                "tps": 300,
            },
            "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 4}},
            "start_source": "heuristic",
            "optimal_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 4 + index}},
            "throughput_start": 280,
            "throughput_optimal": 300,
            "converged": True,
            "samples_to_converge": 10,
            "trace": [
                {
                    "t_s": 2 * i,
                    "knobs": {"thread_pool_size": 4},
                    "throughput": 290,
                    "connections": 64,
                }
                for i in range(3)
            ],
            "climber": {"name": "fuzz"},
            "started_at": "2026-01-05T10:00:00Z",
            "finished_at": f"2026-01-05T10:0{1 + index}:00Z",
        }
    )


def seed_database(database_url: str) -> FuzzSeed:
    """An enrolled agent with three reports, a promoted and a spare model version."""
    engine = create_engine(database_url, poolclass=NullPool)
    host = {
        "hostname": f"fuzz-{uuid.uuid4().hex[:8]}.example.net",
        "engine": "mariadb",
        "engine_version": "10.11.19-MariaDB",
        "cpu_count": 8,
        "memory_bytes": 32 * 2**30,
    }
    try:
        with sessionmaker(engine).begin() as session:
            enrollment, secret = auth_service.create_enrollment_token(
                session, description="fuzz", max_uses=1, ttl_hours=24
            )
            agent, agent_token = auth_service.enroll_agent(
                session, enrollment_token=secret, host=HostFacts.model_validate(host)
            )
            reports = [
                report_service.ingest_report(
                    session, _report(host, i), agent_id=agent.id, agent_host_id=agent.host_id
                ).report.id
                for i in range(3)
            ]
            versions = []
            for name in ("fuzz", "spare"):
                artifact = dump_predictor(
                    LinearPredictor.constant(DbEngine.MARIADB, {"thread_pool_size": 6})
                )
                version = registry_service.register_version(
                    session,
                    engine=DbEngine.MARIADB,
                    name=name,
                    artifact=artifact,
                    metrics={"regret": 0.1},
                    training_summary={},
                )
                versions.append(version.id)
            registry_service.promote_version(session, versions[0], reason="fuzz", forced=True)
            ids = {
                "agent_id": [agent.id],
                "host_id": [agent.host_id],
                "report_id": reports,
                "version_id": versions,
                "token_id": [enrollment.id],
            }
    finally:
        engine.dispose()
    return FuzzSeed(agent_token=agent_token, host=host, ids=ids)


def fuzz(
    app: FastAPI,
    fuzz_seed: FuzzSeed,
    *,
    kind: Kind,
    admin_token: str,
    requests: int,
    random_seed: int = 0,
) -> FuzzResult:
    """Send ``requests`` generated requests (valid and invalid, every operation) as ``kind``."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = []
    for item in schema.get_all_operations():
        if isinstance(item, Err):
            raise item.err()
        operations.append(item.ok())
    strategy = st.one_of(
        [
            operation.as_strategy(generation_mode=mode)
            for operation in operations
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        ]
    )
    token = fuzz_seed.agent_token if kind == "agent" else admin_token
    result = FuzzResult(kind=kind)

    @seed(random_seed)
    @settings(
        max_examples=requests,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy, aim=st.integers(min_value=0, max_value=3))
    def send(case: Any, aim: int) -> None:
        # Three cases in four aim at stored rows and at the agent's own host, so the
        # routes are exercised past their 404 and 403.
        if aim:
            for name, value in list((case.path_parameters or {}).items()):
                known = fuzz_seed.ids.get(name)
                if known and isinstance(value, int):
                    case.path_parameters[name] = known[aim % len(known)]
            if kind == "agent" and isinstance(case.body, dict) and "host" in case.body:
                case.body["host"] = dict(fuzz_seed.host)
            # A report the generator draws almost never passes the wire's cross-field rules
            # (active ≤ connections, the engine's knobs), so two in three aimed ones are a
            # valid report, and the write path is reached whatever the generator draws.
            if aim >= 2 and kind == "agent" and case.operation.path == "/v1/reports":
                case.body = _report(fuzz_seed.host, aim).model_dump(mode="json")
        response = case.call(headers={**(case.headers or {}), "Authorization": f"Bearer {token}"})
        status = response.status_code
        result.statuses[status] += 1
        where = f"{case.method} {case.formatted_path}"
        if 200 <= status < 300:
            result.accepted[f"{case.method} {case.operation.path}"] += 1
        if status >= 500:
            result.server_errors.append(f"{where}: {status} {response.text[:300]}")
        documented = case.operation.definition.raw.get("responses", {})
        if str(status) not in documented and "default" not in documented:
            result.undocumented.append(f"{where}: {status} {response.text[:200]}")

    started = time.monotonic()
    send()
    result.elapsed_s = time.monotonic() - started
    return result


def print_results(results: list[FuzzResult], *, minimum: int) -> bool:
    """The table and the done-when checks; True when every check holds."""
    print(f"{'token':<7}{'requests':>9}{'seconds':>9}  statuses")
    for r in results:
        statuses = ", ".join(f"{code}: {count}" for code, count in sorted(r.statuses.items()))
        print(f"{r.kind:<7}{r.requests:>9}{r.elapsed_s:>9.1f}  {statuses}")
    ok = True
    for r in results:
        for label, holds, figure in [
            (f"{r.kind}: >= {minimum} requests", r.requests >= minimum, r.requests),
            (f"{r.kind}: 0 server errors", not r.server_errors, len(r.server_errors)),
            (f"{r.kind}: 0 undocumented statuses", not r.undocumented, len(r.undocumented)),
        ]:
            ok = ok and holds
            print(f"[{'ok' if holds else 'NO'}] {label}: {figure}")
        for line in (r.server_errors + r.undocumented)[:5]:
            print(f"      {line}")
    return ok


def main(argv: list[str] | None = None) -> int:
    from lab.databases import scratch_database
    from service.app import create_app
    from service.config import Environment, Settings
    from service.logging_setup import configure_logging
    from service.migrate import upgrade

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000, help="per token kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args(argv)
    # The service's warnings (a 503's cause, a damaged row) as JSON lines with their details.
    configure_logging("WARNING")
    admin_token = "fuzz-admin-token-" + uuid.uuid4().hex
    with scratch_database("pooltune_fuzz") as url:
        upgrade(url)
        app = create_app(
            Settings(
                environment=Environment.TEST,
                database_url=url,
                admin_token=SecretStr(admin_token),
                log_level="ERROR",
                token_rotation_overlap_s=7 * 24 * 3600.0,
            )
        )
        fuzz_seed = seed_database(url)
        results = [
            fuzz(
                app,
                fuzz_seed,
                kind=kind,
                admin_token=admin_token,
                requests=args.requests,
                random_seed=args.seed,
            )
            for kind in args.kinds
        ]
    return 0 if print_results(results, minimum=args.requests) else 1


if __name__ == "__main__":
    raise SystemExit(main())
