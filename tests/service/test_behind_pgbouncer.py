"""The service behind a real PgBouncer in transaction mode (docker-compose.yml's layout).

Every transaction may land on another server connection, so psycopg must never prepare
statements there (``POOLTUNE_DB_PGBOUNCER=true``; PgBouncer 1.18 does not carry prepared
statements across): hundreds of concurrent hot-route requests — each statement run far more
often than psycopg's prepare threshold — and the admin routes all answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient

from lab.pgbouncer import DatabaseEntry
from lab.postgres import PostgresCluster
from service.migrate import upgrade
from tests.fixtures.pgbouncer import PgBouncerFactory
from tests.service.factories import auth, climb_report, host_facts, recommendation_request

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.pgbouncer, pytest.mark.postgres]

DATABASE = "pooltune_behind_pgbouncer"


def _url(host: str, port: int, cluster: PostgresCluster) -> str:
    return f"postgresql+psycopg://{cluster.role}:{cluster.password}@{host}:{port}/{DATABASE}"


async def test_the_hot_routes_work_behind_transaction_pooling(
    pg_cluster: PostgresCluster,
    pgbouncer_factory: PgBouncerFactory,
    make_app: Callable[..., FastAPI],
    admin_headers: dict[str, str],
) -> None:
    pg_cluster.sql(f"DROP DATABASE IF EXISTS {DATABASE}")
    pg_cluster.sql(f"CREATE DATABASE {DATABASE} OWNER {pg_cluster.role}")
    try:
        upgrade(_url(pg_cluster.host, pg_cluster.port, pg_cluster))  # directly, not pooled
        bouncer = pgbouncer_factory(
            databases=(DatabaseEntry(DATABASE, dbname=DATABASE),), default_pool_size=4
        )
        app = make_app(
            database_url=_url(bouncer.host, bouncer.port, pg_cluster),
            db_pgbouncer=True,
            db_pool_size=10,
            # What is tested is the protocol behind transaction pooling, not the wait for a
            # connection: 200 requests on 10 may queue past 3 s on a busy CI host.
            db_pool_timeout_s=30.0,
        )
        async with app.router.lifespan_context(app):
            transport = ASGITransport(app=app)
            async with AsyncClient(transport=transport, base_url="http://t", timeout=60) as c:
                created = await c.post("/v1/enrollment-tokens", json={}, headers=admin_headers)
                host = host_facts()
                enrolled = await c.post(
                    "/v1/agents/enroll",
                    json={"enrollment_token": created.json()["token"], "host": host},
                )
                assert enrolled.status_code == 201, enrolled.text
                headers = auth(enrolled.json()["agent_token"])
                calls = [
                    c.post("/v1/reports", json=climb_report(host), headers=headers)
                    if i % 2
                    else c.post(
                        "/v1/recommendations", json=recommendation_request(host), headers=headers
                    )
                    for i in range(200)
                ]
                responses = await asyncio.gather(*calls)
                assert sorted({r.status_code for r in responses}) == [200, 201], [
                    r.text for r in responses if r.status_code >= 300
                ][:3]
                listed = await c.get("/v1/reports?limit=1", headers=admin_headers)
                assert listed.json()["total"] == 100
        stats = bouncer.admin("SHOW POOLS")
        assert stats, "the requests went through PgBouncer"
    finally:
        pg_cluster.sql(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
