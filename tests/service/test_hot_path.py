"""The hot path at fleet scale, in-process: batched recommendation log, token cache bound,
promotion bound, two replicas (two apps, each with its own engines and caches) on one
PostgreSQL, the first requests after a promotion, report retention."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.auth.token_cache import AgentTokenRecord, TokenCache
from service.batched_insert import BatchedInsert
from service.db import utcnow
from service.errors import DatabaseUnavailableError
from service.recommendations.models import RecommendationLog
from service.reports.models import Report
from service.reports.repository import ReportRepository
from tests.fixtures.postgres import _empty_all_tables
from tests.service.factories import (
    auth,
    climb_report,
    create_agent,
    create_model_version,
    create_report,
    host_facts,
    recommendation_request,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

CACHE_S = 0.5


@pytest.fixture
async def replicas(
    make_app: Callable[..., FastAPI], pg_engine: Engine
) -> AsyncIterator[list[AsyncClient]]:
    """Two replicas of the service on the test database, with short cache bounds."""
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(2):
            app = make_app(agent_token_cache_s=CACHE_S, promotion_check_s=CACHE_S)
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = ASGITransport(app=app)
            clients.append(
                await stack.enter_async_context(
                    AsyncClient(transport=transport, base_url="http://testserver")
                )
            )
        try:
            yield clients
        finally:
            _empty_all_tables(pg_engine)


async def _enrol(client: AsyncClient, admin: dict[str, str]) -> tuple[dict[str, Any], Any]:
    created = await client.post("/v1/enrollment-tokens", json={}, headers=admin)
    host = host_facts()
    enrolled = await client.post(
        "/v1/agents/enroll", json={"enrollment_token": created.json()["token"], "host": host}
    )
    assert enrolled.status_code == 201, enrolled.text
    return enrolled.json(), host


async def _until(check: Callable[[], Any], *, within_s: float) -> float:
    """Seconds until ``await check()`` is true; fails past ``within_s``."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < within_s, f"not within {within_s} s"
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_every_answered_recommendation_is_logged_in_batches(
    replicas: list[AsyncClient], admin_headers: dict[str, str], pg_engine: Engine
) -> None:
    client = replicas[0]
    agent, host = await _enrol(client, admin_headers)
    headers = auth(agent["agent_token"])
    responses = await asyncio.gather(
        *(
            client.post("/v1/recommendations", json=recommendation_request(host), headers=headers)
            for _ in range(60)
        )
    )
    assert [r.status_code for r in responses] == [200] * 60
    # Answered means committed: the rows are there the moment the answers are.
    with pg_engine.connect() as connection:
        rows = connection.scalar(select(func.count()).select_from(RecommendationLog))
    assert rows == 60
    app: Any = client._transport.app  # type: ignore[attr-defined]
    batcher = app.state.hot_db.batcher(RecommendationLog.__table__)
    assert batcher.rows == 60 and batcher.batches < 60, (batcher.rows, batcher.batches)


async def test_a_revoked_token_is_refused_by_every_replica_within_the_bound(
    replicas: list[AsyncClient], admin_headers: dict[str, str]
) -> None:
    first, second = replicas
    agent, host = await _enrol(first, admin_headers)
    headers = auth(agent["agent_token"])
    payload = recommendation_request(host)
    for client in replicas:  # both replicas now hold the token in their caches
        assert (await client.post("/v1/recommendations", json=payload, headers=headers)).is_success
    revoked = await first.post(f"/v1/agents/{agent['agent_id']}/revoke", headers=admin_headers)
    assert revoked.is_success
    started = time.monotonic()
    # The replica that revoked refuses at once.
    assert (
        await first.post("/v1/recommendations", json=payload, headers=headers)
    ).status_code == 401

    async def refused() -> bool:
        response = await second.post("/v1/recommendations", json=payload, headers=headers)
        assert response.status_code in (200, 401)
        return response.status_code == 401

    await _until(refused, within_s=CACHE_S + 0.5)
    assert time.monotonic() - started <= CACHE_S + 0.5


async def test_a_promotion_is_served_by_every_replica_within_the_bound(
    replicas: list[AsyncClient], admin_headers: dict[str, str], pg_engine: Engine
) -> None:
    first, second = replicas
    token = admin_headers["Authorization"].split()[1]
    payload = recommendation_request(host_facts())
    for client in replicas:
        body = (await client.post("/v1/recommendations", json=payload, headers=auth(token))).json()
        assert body["source"] == "heuristic"
    with sessionmaker(pg_engine).begin() as session:
        version_id = create_model_version(session, values={"thread_pool_size": 5}).id
    promoted = await first.post(
        f"/v1/models/{version_id}/promote", json={"forced": True}, headers=admin_headers
    )
    assert promoted.status_code == 200, promoted.text
    started = time.monotonic()
    answer = await first.post("/v1/recommendations", json=payload, headers=auth(token))
    assert answer.json()["source"] == "model"

    async def served() -> bool:
        response = await second.post("/v1/recommendations", json=payload, headers=auth(token))
        return bool(response.json()["source"] == "model")

    await _until(served, within_s=CACHE_S + 0.5)
    assert time.monotonic() - started <= CACHE_S + 0.5


async def test_the_first_requests_after_a_promotion_load_the_model_once(
    replicas: list[AsyncClient], admin_headers: dict[str, str], pg_engine: Engine
) -> None:
    """Many requests find a new version at once: one loads it, the others wait for it (a
    thread lock held across the artifact's query once froze the event loop here)."""
    client = replicas[0]
    token = admin_headers["Authorization"].split()[1]
    with sessionmaker(pg_engine).begin() as session:
        create_model_version(session, values={"thread_pool_size": 7}, promote=True)
    await asyncio.sleep(CACHE_S)  # the replica's reading (no model, at start-up) expires
    payload = recommendation_request(host_facts())
    responses = await asyncio.wait_for(
        asyncio.gather(
            *(
                client.post("/v1/recommendations", json=payload, headers=auth(token))
                for _ in range(20)
            )
        ),
        timeout=20,
    )
    answers = {
        (r.json()["source"], r.json()["start_tuple"]["values"]["thread_pool_size"])
        for r in responses
    }
    assert answers == {("model", 7)}


async def test_replicas_racing_on_one_key_store_one_report(
    replicas: list[AsyncClient], admin_headers: dict[str, str], pg_engine: Engine
) -> None:
    agent, host = await _enrol(replicas[0], admin_headers)
    headers = auth(agent["agent_token"])
    report = climb_report(host)
    responses = await asyncio.gather(
        *(replicas[i % 2].post("/v1/reports", json=report, headers=headers) for i in range(20))
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 19 + [201], statuses
    assert len({r.json()["id"] for r in responses}) == 1
    with pg_engine.connect() as connection:
        stored = connection.scalar(
            select(func.count())
            .select_from(Report)
            .where(Report.idempotency_key == report["idempotency_key"])
        )
    assert stored == 1


def test_the_token_cache_forgets_an_entry_after_its_bound() -> None:
    now = [100.0]
    cache = TokenCache(2.0, clock=lambda: now[0])
    record = AgentTokenRecord(1, 1, "h", "mariadb", "a" * 64, None, None, None)
    cache.put("a" * 64, record, read_at=now[0])
    now[0] += 1.9
    assert cache.get("a" * 64) == record
    now[0] += 0.1
    assert cache.get("a" * 64) is None
    cache.put("a" * 64, record, read_at=now[0])
    cache.forget_agent(1)
    assert cache.get("a" * 64) is None
    assert TokenCache(0.0).get("x") is None


async def test_batched_rows_are_written_on_close_and_refused_after() -> None:
    written: list[Sequence[dict[str, Any]]] = []

    async def write(rows: Sequence[dict[str, Any]]) -> None:
        await asyncio.sleep(0.01)
        written.append(rows)

    batcher = BatchedInsert(
        write, name="t", linger_s=0.05, batch_rows=8, queue_rows=100, put_timeout_s=1.0
    )
    batcher.start()
    appends = [asyncio.create_task(batcher.append({"n": n})) for n in range(30)]
    await asyncio.sleep(0)  # queued, not yet written
    await batcher.close()
    await asyncio.gather(*appends)
    assert sorted(row["n"] for rows in written for row in rows) == list(range(30))
    assert max(len(rows) for rows in written) <= 8
    with pytest.raises(DatabaseUnavailableError):
        await batcher.append({"n": 30})


async def test_a_failed_batch_fails_every_request_in_it() -> None:
    async def write(rows: Sequence[dict[str, Any]]) -> None:
        raise ConnectionError("down")

    batcher = BatchedInsert(
        write, name="t", linger_s=0.01, batch_rows=8, queue_rows=100, put_timeout_s=1.0
    )
    batcher.start()
    outcomes = await asyncio.gather(
        *(batcher.append({"n": n}) for n in range(5)), return_exceptions=True
    )
    assert all(isinstance(outcome, ConnectionError) for outcome in outcomes)
    await batcher.close()


def test_prune_deletes_old_reports_but_each_hosts_newest(db_session: Session) -> None:
    agent, _, facts = create_agent(db_session)
    old = [create_report(db_session, agent, facts) for _ in range(3)]
    recent = create_report(db_session, agent, facts)
    newest_finished = max(old + [recent], key=lambda r: (r.finished_at, r.id))
    long_ago = utcnow() - timedelta(days=400)
    db_session.execute(
        update(Report).where(Report.id.in_([r.id for r in old])).values(received_at=long_ago)
    )
    deleted = ReportRepository(db_session).delete_received_before(
        utcnow() - timedelta(days=365), batch_size=1000
    )
    remaining = set(db_session.scalars(select(Report.id)).all())
    kept_old = {newest_finished.id} & {r.id for r in old}
    assert remaining == {recent.id} | kept_old
    assert deleted == 3 - len(kept_old)
