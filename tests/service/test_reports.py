from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session

from agents.wire import MAX_TRACE_SAMPLES
from service.db import get_db_session
from service.reports.models import Report
from tests.service.factories import (
    STARTED,
    auth,
    climb_report,
    create_agent,
    create_report,
    host_facts,
    workload_profile,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


@pytest.fixture
def agent(db_session: Session) -> tuple[Any, str, dict[str, Any]]:
    row, token, facts = create_agent(db_session)
    return row, token, facts.model_dump(mode="json")


async def test_first_upload_is_201_and_a_retry_200_with_the_same_body(
    api_client: AsyncClient, db_session: Session, agent: tuple[Any, str, dict[str, Any]]
) -> None:
    _, token, facts = agent
    payload = climb_report(facts)
    first = await api_client.post("/v1/reports", json=payload, headers=auth(token))
    second = await api_client.post("/v1/reports", json=payload, headers=auth(token))
    assert first.status_code == 201, first.text
    assert second.status_code == 200
    assert first.json() == second.json()
    count = db_session.scalar(
        select(func.count()).where(Report.idempotency_key == payload["idempotency_key"])
    )
    assert count == 1


async def test_reusing_a_key_for_a_different_report_is_409(
    api_client: AsyncClient, agent: tuple[Any, str, dict[str, Any]]
) -> None:
    _, token, facts = agent
    payload = climb_report(facts)
    assert (
        await api_client.post("/v1/reports", json=payload, headers=auth(token))
    ).status_code == 201
    changed = {**payload, "throughput_optimal": 99999.0}
    response = await api_client.post("/v1/reports", json=changed, headers=auth(token))
    assert response.status_code == 409
    assert payload["idempotency_key"] in response.json()["detail"]


async def test_twenty_concurrent_duplicates_store_exactly_one_row(
    live_app: FastAPI, live_client: AsyncClient, admin_headers: dict[str, str], pg_engine: Engine
) -> None:
    token_response = await live_client.post("/v1/enrollment-tokens", json={}, headers=admin_headers)
    facts = host_facts()
    enrolled = await live_client.post(
        "/v1/agents/enroll",
        json={"enrollment_token": token_response.json()["token"], "host": facts},
    )
    agent_token = enrolled.json()["agent_token"]
    payload = climb_report(facts, trace_samples=200)

    async def post_once() -> tuple[int, dict[str, Any]]:
        transport = ASGITransport(app=live_app)
        async with AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.post("/v1/reports", json=payload, headers=auth(agent_token))
            return response.status_code, response.json()

    results = await asyncio.gather(*(post_once() for _ in range(20)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] * 19 + [201], results
    assert len({json.dumps(body, sort_keys=True) for _, body in results}) == 1
    with pg_engine.connect() as connection:
        rows = connection.execute(
            text("SELECT count(*) FROM reports WHERE idempotency_key = :key"),
            {"key": payload["idempotency_key"]},
        ).scalar_one()
    assert rows == 1
    metrics = (await live_client.get("/metrics")).text
    assert 'pooltune_reports_ingested_total{outcome="created"} 1.0' in metrics
    assert 'pooltune_reports_ingested_total{outcome="duplicate"} 19.0' in metrics


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda p: p["profile"].update(qps=-1.0), "qps", "greater than or equal to 0"),
        (lambda p: p.update(idempotency_key="x"), "idempotency_key", "8 to 128"),
        (
            lambda p: p["optimal_tuple"]["values"].update(thread_pool_size=5000),
            "optimal_tuple",
            "outside mariadb's bounds",
        ),
        (lambda p: p["host"].update(engine="oracle"), "engine", "mariadb"),
        (lambda p: p.update(unexpected=1), "unexpected", "Extra inputs"),
        (lambda p: p.pop("converged"), "converged", "Field required"),
    ],
)
async def test_bad_payloads_are_422_naming_the_field_and_reason(
    api_client: AsyncClient,
    agent: tuple[Any, str, dict[str, Any]],
    mutate: Any,
    field: str,
    reason: str,
) -> None:
    _, token, facts = agent
    payload = climb_report(facts)
    mutate(payload)
    response = await api_client.post("/v1/reports", json=payload, headers=auth(token))
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "validation_error"
    assert any(
        field in [str(part) for part in error["loc"]] or field in error["msg"]
        for error in body["detail"]
    ), body
    assert any(reason in error["msg"] for error in body["detail"]), body


async def test_a_trace_longer_than_the_cap_is_422(
    api_client: AsyncClient, agent: tuple[Any, str, dict[str, Any]]
) -> None:
    _, token, facts = agent
    payload = climb_report(facts, trace_samples=1)
    payload["trace"] = payload["trace"] * (MAX_TRACE_SAMPLES + 1)
    response = await api_client.post("/v1/reports", json=payload, headers=auth(token))
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][-1] == "trace"


async def test_malformed_json_is_422(
    api_client: AsyncClient, agent: tuple[Any, str, dict[str, Any]]
) -> None:
    _, token, _ = agent
    response = await api_client.post(
        "/v1/reports",
        content=b"{not json",
        headers={**auth(token), "content-type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"


async def test_oversize_bodies_are_413(make_app: Any, db_session: Session) -> None:
    _, token, facts = create_agent(db_session)
    app = make_app(max_body_bytes=4096)

    def override() -> Any:
        yield db_session

    app.dependency_overrides[get_db_session] = override
    payload = climb_report(facts.model_dump(mode="json"), trace_samples=100)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://t") as client:
        declared = await client.post("/v1/reports", json=payload, headers=auth(token))

        async def chunks() -> Any:  # no Content-Length: the limit is counted while reading
            body = json.dumps(payload).encode()
            for start in range(0, len(body), 1000):
                yield body[start : start + 1000]

        streamed = await client.post(
            "/v1/reports",
            content=chunks(),
            headers={**auth(token), "content-type": "application/json"},
        )
    for response in (declared, streamed):
        assert response.status_code == 413
        assert response.json()["error"] == "payload_too_large"


async def test_a_stored_report_comes_back_whole_with_its_trace(
    api_client: AsyncClient, admin_headers: dict[str, str], agent: tuple[Any, str, dict[str, Any]]
) -> None:
    _, token, facts = agent
    payload = climb_report(facts, trace_samples=300)
    created = await api_client.post("/v1/reports", json=payload, headers=auth(token))
    report_id = created.json()["id"]
    response = await api_client.get(f"/v1/reports/{report_id}", headers=admin_headers)
    assert response.status_code == 200
    body = response.json()
    assert body["trace_samples"] == 300
    assert body["report"]["trace"] == [{**sample, "latency_ms": 1.5} for sample in payload["trace"]]
    assert body["report"]["profile"] == {
        **workload_profile(),
        **{k: v for k, v in body["report"]["profile"].items() if v in (None, {})},
    }
    assert body["report"]["idempotency_key"] == payload["idempotency_key"]


async def test_the_trace_is_stored_compressed(
    api_client: AsyncClient, db_session: Session, agent: tuple[Any, str, dict[str, Any]]
) -> None:
    _, token, facts = agent
    payload = climb_report(facts, trace_samples=1000)
    created = await api_client.post("/v1/reports", json=payload, headers=auth(token))
    stored = db_session.get(Report, created.json()["id"])
    assert stored is not None
    assert len(stored.trace) < len(json.dumps(payload["trace"])) / 5


async def test_host_shows_current_tuple_last_report_and_gain(
    api_client: AsyncClient, admin_headers: dict[str, str], agent: tuple[Any, str, dict[str, Any]]
) -> None:
    row, token, facts = agent
    await api_client.post("/v1/reports", json=climb_report(facts), headers=auth(token))
    response = await api_client.get(f"/v1/hosts/{row.host_id}", headers=admin_headers)
    body = response.json()
    assert body["current_tuple"] == {"thread_pool_size": 12}
    assert body["last_report"]["throughput_optimal"] == 12500.0
    assert body["gain_over_default"] == pytest.approx(0.25)


async def test_list_reports_filters_and_paginates(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    agent_a, _, facts_a = create_agent(db_session)
    agent_b, _, facts_b = create_agent(db_session, engine="percona")
    for day in range(5):
        create_report(
            db_session,
            agent_a,
            facts_a,
            started_at=(STARTED + timedelta(days=day)).isoformat(),
            finished_at=(STARTED + timedelta(days=day, minutes=5)).isoformat(),
            converged=day % 2 == 0,
        )
    create_report(db_session, agent_b, facts_b)

    async def get(query: str) -> dict[str, Any]:
        response = await api_client.get(f"/v1/reports?{query}", headers=admin_headers)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    everything = await get("")
    assert everything["total"] == 6
    page = await get("limit=2&offset=2")
    assert [r["id"] for r in page["items"]] == [r["id"] for r in everything["items"][2:4]]
    assert (await get(f"host_id={agent_a.host_id}"))["total"] == 5
    assert (await get("engine=percona"))["total"] == 1
    assert (await get(f"host_id={agent_a.host_id}&converged=false"))["total"] == 2
    since = (STARTED + timedelta(days=3)).isoformat().replace("+00:00", "Z")
    assert (await get(f"host_id={agent_a.host_id}&since={since}"))["total"] == 2
    bad = await api_client.get("/v1/reports?limit=0", headers=admin_headers)
    assert bad.status_code == 422
    naive = await api_client.get("/v1/reports?since=2026-01-01T00:00:00", headers=admin_headers)
    assert naive.status_code == 422


async def test_hosts_list_is_paginated(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    for _ in range(5):
        create_agent(db_session)
    create_agent(db_session, engine="pgbouncer")
    first = (await api_client.get("/v1/hosts?limit=3", headers=admin_headers)).json()
    second = (await api_client.get("/v1/hosts?limit=3&offset=3", headers=admin_headers)).json()
    assert first["total"] == second["total"] == 6
    ids = [h["id"] for h in first["items"] + second["items"]]
    assert len(set(ids)) == 6 and ids == sorted(ids, reverse=True)
    pgbouncer = (await api_client.get("/v1/hosts?engine=pgbouncer", headers=admin_headers)).json()
    assert pgbouncer["total"] == 1
    missing = await api_client.get("/v1/hosts/999999", headers=admin_headers)
    assert missing.status_code == 404
