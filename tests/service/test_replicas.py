"""Two replicas of the service — two uvicorn processes — on one PostgreSQL.

They race on one idempotency key (one report stored, one 201), and each holds its own
caches: a revocation made on one is refused by the other within ``agent_token_cache_s``,
a promotion made on one is served by the other within ``promotion_check_s``
(docs/service.md, "Scale").
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import sessionmaker

from lab.processes import free_port, stop_process, wait_until_ready
from service.reports.models import Report
from tests.fixtures.postgres import TEST_ADMIN_TOKEN, _empty_all_tables
from tests.service.factories import (
    auth,
    climb_report,
    create_model_version,
    host_facts,
    recommendation_request,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]

BOUND_S = 1.0
#: Past the bound: a request in flight when the bound passed, and a busy shared machine.
SLACK_S = 1.0


def _serve(database_url: str, log: IO[bytes]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "POOLTUNE_DATABASE_URL": database_url,
        "POOLTUNE_ADMIN_TOKEN": TEST_ADMIN_TOKEN,
        "POOLTUNE_ENVIRONMENT": "test",
        "POOLTUNE_LOG_LEVEL": "WARNING",
        "POOLTUNE_AGENT_TOKEN_CACHE_S": str(BOUND_S),
        "POOLTUNE_PROMOTION_CHECK_S": str(BOUND_S),
        "POOLTUNE_DB_POOL_SIZE": "4",
    }
    command = [sys.executable, "-m", "service.cli", "serve", "--no-migrate"]
    process = subprocess.Popen([*command, "--port", str(port)], env=env, stderr=log)
    return process, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def replica_urls(pg_database_url: str) -> Iterator[list[str]]:
    with tempfile.TemporaryDirectory() as directory:
        logs = [open(Path(directory) / f"replica-{i}.log", "wb") for i in range(2)]  # noqa: SIM115
        started = [_serve(pg_database_url, log) for log in logs]
        try:
            for index, (process, url) in enumerate(started):
                wait_until_ready(
                    lambda url=url: httpx.get(f"{url}/readyz", timeout=2).raise_for_status(),
                    process=process,
                    name=f"replica {index}",
                    not_ready=(httpx.HTTPError,),
                    details=lambda index=index: (
                        Path(directory) / f"replica-{index}.log"
                    ).read_text(errors="replace")[-2000:],
                )
            yield [url for _, url in started]
        finally:
            for process, _ in started:
                stop_process(process, timeout_s=20)
            for log in logs:
                log.close()


@pytest.fixture
async def clients(
    replica_urls: list[str], pg_engine: Engine
) -> AsyncIterator[list[httpx.AsyncClient]]:
    async with httpx.AsyncClient(base_url=replica_urls[0], timeout=30) as first:
        async with httpx.AsyncClient(base_url=replica_urls[1], timeout=30) as second:
            try:
                yield [first, second]
            finally:
                _empty_all_tables(pg_engine)


ADMIN = auth(TEST_ADMIN_TOKEN)


async def _enrol(client: httpx.AsyncClient) -> tuple[int, dict[str, str], dict[str, object]]:
    created = await client.post("/v1/enrollment-tokens", json={}, headers=ADMIN)
    host = host_facts()
    enrolled = await client.post(
        "/v1/agents/enroll", json={"enrollment_token": created.json()["token"], "host": host}
    )
    assert enrolled.status_code == 201, enrolled.text
    body = enrolled.json()
    return body["agent_id"], auth(body["agent_token"]), host


async def _seconds_until(check: Callable[[], Awaitable[bool]], *, within_s: float) -> float:
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < within_s, f"not within {within_s} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_two_replicas_racing_on_one_key_store_one_report(
    clients: list[httpx.AsyncClient], pg_engine: Engine
) -> None:
    _, headers, host = await _enrol(clients[0])
    for trial in range(5):
        report = climb_report(host)
        responses = await asyncio.gather(
            *(clients[i % 2].post("/v1/reports", json=report, headers=headers) for i in range(16))
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200] * 15 + [201], (trial, statuses)
        assert len({r.json()["id"] for r in responses}) == 1
        with pg_engine.connect() as connection:
            stored = connection.scalar(
                select(func.count())
                .select_from(Report)
                .where(Report.idempotency_key == report["idempotency_key"])
            )
        assert stored == 1


async def test_a_token_revoked_on_one_replica_is_refused_by_the_other_within_the_bound(
    clients: list[httpx.AsyncClient],
) -> None:
    first, second = clients
    agent_id, headers, host = await _enrol(first)
    payload = recommendation_request(host)
    for client in clients:  # each replica caches the token
        assert (await client.post("/v1/recommendations", json=payload, headers=headers)).is_success
    assert (await first.post(f"/v1/agents/{agent_id}/revoke", headers=ADMIN)).is_success
    assert (
        await first.post("/v1/recommendations", json=payload, headers=headers)
    ).status_code == 401

    async def refused() -> bool:
        response = await second.post("/v1/recommendations", json=payload, headers=headers)
        assert response.status_code in (200, 401), response.text
        return response.status_code == 401

    await _seconds_until(refused, within_s=BOUND_S + SLACK_S)


async def test_a_promotion_on_one_replica_is_served_by_the_other_within_the_bound(
    clients: list[httpx.AsyncClient], pg_engine: Engine
) -> None:
    first, second = clients
    payload = recommendation_request(host_facts())
    for client in clients:
        answer = await client.post("/v1/recommendations", json=payload, headers=ADMIN)
        assert answer.json()["source"] == "heuristic"
    with sessionmaker(pg_engine).begin() as session:
        version_id = create_model_version(session, values={"thread_pool_size": 6}).id
    promoted = await first.post(
        f"/v1/models/{version_id}/promote", json={"forced": True}, headers=ADMIN
    )
    assert promoted.status_code == 200, promoted.text

    async def served() -> bool:
        response = await second.post("/v1/recommendations", json=payload, headers=ADMIN)
        return bool(response.json()["source"] == "model")

    await _seconds_until(served, within_s=BOUND_S + SLACK_S)
