"""Schema-driven fuzzing: requests generated from the app's own OpenAPI never get a 5xx.

Valid and invalid requests for every operation, sent with the admin token (agent token for
report uploads, whose host is set to the agent's so ingest is exercised), against the real
PostgreSQL test database with committed writes and a promoted model.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from sqlalchemy import Engine

from agents.knobs import Engine as DbEngine
from agents.wire import HostFacts
from service.app import create_app
from service.auth import service as auth_service
from service.config import Settings
from service.db import build_sessionmaker
from service.recommendations.model_format import LinearPredictor, dump_predictor
from service.registry import service as registry_service
from tests.fixtures.postgres import TEST_ADMIN_TOKEN, _empty_all_tables
from tests.service.factories import host_facts

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

MIN_REQUESTS = 1000


@pytest.fixture
def fuzz_app(
    service_settings: Settings, pg_engine: Engine
) -> Iterator[tuple[FastAPI, str, dict[str, Any]]]:
    app = create_app(service_settings)
    app.state.engine = pg_engine
    app.state.sessionmaker = build_sessionmaker(pg_engine)
    facts = host_facts(hostname="fuzz.example.net")
    with app.state.sessionmaker.begin() as session:
        _, enrollment = auth_service.create_enrollment_token(
            session, description="fuzz", max_uses=1, ttl_hours=1
        )
        _, agent_token = auth_service.enroll_agent(
            session, enrollment_token=enrollment, host=HostFacts.model_validate(facts)
        )
        version = registry_service.register_version(
            session,
            engine=DbEngine.MARIADB,
            name="fuzz",
            artifact=dump_predictor(
                LinearPredictor.constant(DbEngine.MARIADB, {"thread_pool_size": 6})
            ),
            metrics={"regret": 0.1},
            training_summary={},
        )
        registry_service.promote_version(session, version.id, reason="fuzz", forced=True)
    try:
        yield app, agent_token, facts
    finally:
        _empty_all_tables(pg_engine)


def test_a_thousand_generated_requests_never_get_a_5xx(
    fuzz_app: tuple[FastAPI, str, dict[str, Any]],
) -> None:
    app, agent_token, facts = fuzz_app
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    strategy = st.one_of(
        [
            operation.as_strategy(generation_mode=mode)
            for operation in operations
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        ]
    )
    statuses: Counter[int] = Counter()
    failures: list[str] = []

    @settings(
        max_examples=1100,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def send(case: Any) -> None:
        token = TEST_ADMIN_TOKEN
        if case.operation.path == "/v1/reports" and case.method.upper() == "POST":
            token = agent_token
            if isinstance(case.body, dict):
                case.body["host"] = facts
        headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
        response = case.call(headers=headers)
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            failures.append(
                f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
            )

    started = time.monotonic()
    send()
    elapsed = time.monotonic() - started
    total = sum(statuses.values())
    assert not failures, failures[:5]
    assert total >= MIN_REQUESTS, (total, statuses)
    # Both accepted and rejected requests were exercised, not just 401s.
    assert statuses[200] + statuses[201] > 100, statuses
    assert statuses[422] > 100, statuses
    print(f"fuzz: {total} requests in {elapsed:.1f} s, statuses {dict(sorted(statuses.items()))}")
