"""A real console to drive: uvicorn on a free port over its own PostgreSQL database, seeded
through the API (hosts, reports, a recommendation, a pending approval) and through the
registry's functions (models, as the trainer registers them), and Debian's Chromium."""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool

from agents.knobs import Engine
from lab.processes import stop_process
from lab.service import start_service, wait_until_serving
from service.recommendations.model_format import LinearPredictor, dump_predictor
from service.registry import service as registry_service
from tests.console.payloads import approval_request
from tests.fixtures.mariadb import free_port
from tests.service.factories import host_facts, recommendation_request, workload_profile

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ADMIN_TOKEN = "console-e2e-admin-token-7c1f0e9d2b"
TRACE_SAMPLES = 90


def artifacts_dir() -> Path:
    """Where screenshots and the server's log go (POOLTUNE_TEST_ARTIFACTS, else var/)."""
    default = REPO / "var" / "test-artifacts" / "console"
    path = Path(os.environ.get("POOLTUNE_TEST_ARTIFACTS", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class LiveServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_server(database_url: str, log_path: Path) -> LiveServer:
    port = free_port()
    env = {
        "POOLTUNE_DATABASE_URL": database_url,
        "POOLTUNE_ADMIN_TOKEN": ADMIN_TOKEN,
        "POOLTUNE_ENVIRONMENT": "test",
        "POOLTUNE_DB_POOL_SIZE": "4",
        "PYTHONPATH": str(REPO),
    }
    log = log_path.open("wb")
    process = start_service(port, env=env, log=log, migrate=False, cwd=REPO)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(
            process,
            base_url,
            path="/healthz",
            details=lambda: log_path.read_text(errors="replace"),
        )
    except RuntimeError:
        process.terminate()
        raise
    return LiveServer(base_url=base_url, process=process, log_path=log_path)


def stop_server(server: LiveServer) -> None:
    stop_process(server.process, timeout_s=20)


@dataclass
class Seeded:
    host_ids: dict[str, int] = field(default_factory=dict)
    agent_tokens: dict[str, str] = field(default_factory=dict)
    approval_id: int = 0
    model_ids: list[int] = field(default_factory=list)


def _trace(gain: float) -> list[dict[str, Any]]:
    """A climb: pool size stepped up every 10 samples, one sample marked as a rollback."""
    samples = []
    for index in range(TRACE_SAMPLES):
        size = 4 + 2 * (index // 10)
        samples.append(
            {
                "t_s": 2.0 * index,
                "knobs": {"thread_pool_size": size},
                "throughput": 10_000.0 * (1 + (gain - 1) * min(1.0, size / 16)),
                "connections": 200,
                "state": "rollback" if index == 55 else "search-size",
            }
        )
    return samples


def _report(facts: dict[str, Any], gain: float, finished: datetime) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "idempotency_key": str(uuid.uuid4()),
        "host": facts,
        "profile": workload_profile(),
        "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 4}},
        "start_source": "model",
        "start_model_version": "console-e2e:1",
        "optimal_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 16}},
        "default_tuple": {"engine": "mariadb", "values": {"thread_pool_size": facts["cpu_count"]}},
        "throughput_start": 10_000.0,
        "throughput_optimal": 10_000.0 * gain,
        "throughput_default": 10_000.0,
        "converged": True,
        "samples_to_converge": TRACE_SAMPLES,
        "trace": _trace(gain),
        "climber": {"name": "pooltune", "version": "1", "settings": {}},
        "started_at": (finished - timedelta(seconds=2 * TRACE_SAMPLES)).isoformat(),
        "finished_at": finished.isoformat(),
    }


def seed(base_url: str, database_url: str) -> Seeded:
    seeded = Seeded()
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=base_url, timeout=30) as client:
        enrolment = client.post("/v1/enrollment-tokens", json={"max_uses": 10}, headers=admin)
        enrolment.raise_for_status()
        now = datetime.now(UTC)
        for index, gain in enumerate((1.32, 1.08, 1.21)):
            facts = host_facts(hostname=f"db-{index + 1}.console.test", cpu_count=8 + 8 * index)
            enrolled = client.post(
                "/v1/agents/enroll",
                json={"enrollment_token": enrolment.json()["token"], "host": facts},
            )
            enrolled.raise_for_status()
            name = facts["hostname"]
            seeded.host_ids[name] = enrolled.json()["host_id"]
            token = enrolled.json()["agent_token"]
            seeded.agent_tokens[name] = token
            agent = {"Authorization": f"Bearer {token}"}
            client.post(
                "/v1/recommendations", json=recommendation_request(facts), headers=agent
            ).raise_for_status()
            finished = now - timedelta(minutes=10 * (index + 1))
            client.post(
                "/v1/reports", json=_report(facts, gain, finished), headers=agent
            ).raise_for_status()
        waiting = "db-2.console.test"
        asked = client.post(
            "/v1/approvals",
            json=approval_request(predicted_gain={"estimate": 1.15, "low": 1.04, "high": 1.27}),
            headers={"Authorization": f"Bearer {seeded.agent_tokens[waiting]}"},
        )
        asked.raise_for_status()
        seeded.approval_id = asked.json()["id"]
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with sessionmaker(bind=engine).begin() as session:
            for name, regret, promote in (
                ("console-e2e", 0.08, True),
                ("console-e2e", 0.05, False),
            ):
                version = registry_service.register_version(
                    session,
                    engine="mariadb",
                    name=name,
                    artifact=dump_predictor(
                        LinearPredictor.constant(Engine.MARIADB, {"thread_pool_size": 6})
                    ),
                    metrics={
                        "regret": regret,
                        "regret_median": regret / 2,
                        "regret_p90": regret * 3,
                        "coverage": 0.8,
                        "nominal_coverage": 0.8,
                        "best_baseline": "heuristic",
                        "best_baseline_regret": 0.12,
                        "scores": {
                            "lightgbm": {
                                "regret": {
                                    "median": regret / 2,
                                    "mean": regret,
                                    "p90": regret * 3,
                                    "count": 40,
                                }
                            },
                            "heuristic": {
                                "regret": {"median": 0.07, "mean": 0.12, "p90": 0.3, "count": 40}
                            },
                        },
                    },
                    training_summary={"examples": 200, "groups": 50},
                )
                seeded.model_ids.append(version.id)
                if promote:
                    registry_service.promote_version(
                        session, version.id, reason="seed", forced=True
                    )
    finally:
        engine.dispose()
    return seeded
