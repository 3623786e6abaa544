"""Schema-driven fuzzing: requests generated from the app's own OpenAPI, with an agent token
and with the admin token, never get a 5xx nor a status the operation does not document.

Valid and invalid requests for every operation, against the real PostgreSQL test database
(committed writes, a promoted model, stored reports whose ids the requests aim at). The long
run is ``python -m benchmarks.fuzz --requests 5000``; this one keeps ``make test`` short.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from benchmarks.fuzz import KINDS, FuzzSeed, fuzz, print_results, seed_database
from service.app import create_app
from service.config import Settings
from tests.fixtures.postgres import TEST_ADMIN_TOKEN, _empty_all_tables

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REQUESTS_PER_KIND = 500


@pytest.fixture
def fuzz_target(
    service_settings: Settings, pg_database_url: str, pg_engine: Engine
) -> Iterator[tuple[FastAPI, FuzzSeed]]:
    settings = service_settings.model_copy(update={"token_rotation_overlap_s": 86_400.0})
    try:
        yield create_app(settings), seed_database(pg_database_url)
    finally:
        _empty_all_tables(pg_engine)


def test_generated_requests_get_no_5xx_and_only_documented_statuses(
    fuzz_target: tuple[FastAPI, FuzzSeed],
) -> None:
    app, fuzz_seed = fuzz_target
    results = [
        fuzz(app, fuzz_seed, kind=kind, admin_token=TEST_ADMIN_TOKEN, requests=REQUESTS_PER_KIND)
        for kind in KINDS
    ]
    assert print_results(results, minimum=REQUESTS_PER_KIND)
    agent, admin = results
    # Past validation and authorisation: each kind had requests accepted where it may write.
    assert agent.accepted["POST /v1/recommendations"] > 0, agent.accepted
    assert agent.accepted["POST /v1/reports"] > 0, agent.accepted
    assert admin.accepted["POST /v1/enrollment-tokens"] > 0, admin.accepted
    assert sum(admin.accepted.values()) > REQUESTS_PER_KIND // 10, admin.statuses
    for result in results:
        assert result.statuses[422] > REQUESTS_PER_KIND // 10, (result.kind, result.statuses)
