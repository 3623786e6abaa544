"""The database cut or frozen under the service, through a TCP proxy the test controls.

Every route that needs the database answers 503 ``database_unavailable`` with Retry-After
within its timeouts (never a 500, never a hang); /healthz answers at once even with the
worker threads all stuck on the database; /readyz says 503 within its own timeout; and the
service recovers by itself when the database is back.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient, Response
from sqlalchemy import Engine, make_url

from lab.tcp_proxy import TcpProxy
from tests.fixtures.postgres import _empty_all_tables
from tests.service.factories import auth, climb_report, host_facts, recommendation_request

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]

TIMEOUTS: dict[str, Any] = {
    "db_connect_timeout_s": 2,
    "db_statement_timeout_s": 1.0,
    "db_io_grace_s": 0.5,
    "db_pool_timeout_s": 1.0,
    "readyz_timeout_s": 1.0,
    "db_pool_size": 5,
    "db_max_overflow": 10,
}
#: The longest a request may take to give up: a pool wait, a ping, a reconnection.
GIVE_UP_S = 1.0 + 1.5 + 2.0 + 2.0


@pytest.fixture
def pg_proxy(pg_database_url: str) -> Iterator[tuple[TcpProxy, str]]:
    url = make_url(pg_database_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
    try:
        proxied = url.set(host="127.0.0.1", port=proxy.port)
        yield proxy, proxied.render_as_string(hide_password=False)
    finally:
        proxy.stop()


@pytest.fixture
async def proxied_client(
    make_app: Callable[..., FastAPI], pg_proxy: tuple[TcpProxy, str], pg_engine: Engine
) -> AsyncIterator[AsyncClient]:
    app = make_app(database_url=pg_proxy[1], **TIMEOUTS)
    try:
        async with app.router.lifespan_context(app):
            transport = ASGITransport(app=app)
            async with AsyncClient(
                transport=transport, base_url="http://testserver", timeout=60
            ) as client:
                yield client
    finally:
        _empty_all_tables(pg_engine)


async def _agent(client: AsyncClient, admin: dict[str, str]) -> tuple[dict[str, str], Any]:
    created = await client.post("/v1/enrollment-tokens", json={}, headers=admin)
    host = host_facts()
    enrolled = await client.post(
        "/v1/agents/enroll", json={"enrollment_token": created.json()["token"], "host": host}
    )
    assert enrolled.status_code == 201, enrolled.text
    return auth(enrolled.json()["agent_token"]), host


async def _timed(call: Any) -> tuple[Response, float]:
    started = time.perf_counter()
    response = await call
    return response, time.perf_counter() - started


def _unavailable(response: Response) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["error"] == "database_unavailable"
    assert int(response.headers["retry-after"]) >= 1


async def _until_ready(client: AsyncClient, deadline_s: float = 20.0) -> float:
    started = time.monotonic()
    while (await client.get("/readyz")).status_code != 200:
        assert time.monotonic() - started < deadline_s, "the service did not recover"
        await asyncio.sleep(0.2)
    return time.monotonic() - started


def _requests(
    client: AsyncClient, agent: dict[str, str], host: Any, admin: dict[str, str]
) -> list[Any]:
    return [
        client.post("/v1/recommendations", json=recommendation_request(host), headers=agent),
        client.post("/v1/reports", json=climb_report(host), headers=agent),
        client.get("/v1/hosts", headers=admin),
        client.get("/v1/reports", headers=admin),
        client.get("/v1/models", headers=admin),
        client.post("/v1/enrollment-tokens", json={}, headers=admin),
    ]


async def test_database_cut_gives_503_then_recovers(
    proxied_client: AsyncClient, pg_proxy: tuple[TcpProxy, str], admin_headers: dict[str, str]
) -> None:
    proxy, _ = pg_proxy
    agent, host = await _agent(proxied_client, admin_headers)
    proxy.cut()
    for call in _requests(proxied_client, agent, host, admin_headers):
        response, elapsed = await _timed(call)
        _unavailable(response)
        assert elapsed < GIVE_UP_S, elapsed
    health, elapsed = await _timed(proxied_client.get("/healthz"))
    assert health.status_code == 200 and elapsed < 0.5
    ready, elapsed = await _timed(proxied_client.get("/readyz"))
    _unavailable(ready)
    assert elapsed < TIMEOUTS["readyz_timeout_s"] + 0.5

    proxy.restore()
    await _until_ready(proxied_client)
    for call in _requests(proxied_client, agent, host, admin_headers):
        response = await call
        assert response.status_code in (200, 201), response.text


async def test_frozen_database_gives_503_in_time_and_healthz_stays_fast(
    proxied_client: AsyncClient, pg_proxy: tuple[TcpProxy, str], admin_headers: dict[str, str]
) -> None:
    proxy, _ = pg_proxy
    agent, host = await _agent(proxied_client, admin_headers)
    proxy.freeze()
    payload = recommendation_request(host)
    stuck = [
        asyncio.create_task(
            _timed(proxied_client.post("/v1/recommendations", json=payload, headers=agent))
        )
        for _ in range(60)
    ]
    await asyncio.sleep(0.3)  # every worker thread now waits on the frozen database
    health: list[float] = []
    ready = asyncio.create_task(_timed(proxied_client.get("/readyz")))
    while not all(task.done() for task in stuck):
        response, elapsed = await _timed(proxied_client.get("/healthz"))
        assert response.status_code == 200
        health.append(elapsed)
        await asyncio.sleep(0.05)
    outcomes = [task.result() for task in stuck]
    for response, _elapsed in outcomes:
        _unavailable(response)
    slowest = max(elapsed for _, elapsed in outcomes)
    # 60 requests share 40 worker threads: two rounds of giving up at most.
    assert slowest < 2 * GIVE_UP_S, slowest
    ready_response, ready_elapsed = ready.result()
    _unavailable(ready_response)
    assert ready_elapsed < TIMEOUTS["readyz_timeout_s"] + 0.5, ready_elapsed
    assert len(health) >= 10
    assert statistics.median(health) < 0.05, health
    assert max(health) < 0.5, health

    proxy.restore()
    await _until_ready(proxied_client)
    response = await proxied_client.post("/v1/recommendations", json=payload, headers=agent)
    assert response.status_code == 200, response.text
