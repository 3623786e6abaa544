"""Inputs that once answered 500: each is now a 4xx that names the field.

NUL characters, integers beyond their columns, strings longer than their column, datetimes
outside years 1-9999 in UTC, connection counts that overflowed a validator, booleans where a
number belongs; with and without a promoted model where the route reads one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import AsyncClient, Response
from sqlalchemy.orm import Session

from tests.fixtures.postgres import TEST_ADMIN_TOKEN
from tests.service.factories import (
    auth,
    climb_report,
    create_agent,
    create_model_version,
    host_facts,
    recommendation_request,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

NUL = "db\u0000x"
OUT_OF_RANGE = "0001-01-01T00:00:00+14:00"


def _field_named(response: Response, *loc: str | int) -> None:
    """A 422 whose first error points at ``loc`` (the last parts of its location)."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_error", body
    locations = [error["loc"] for error in body["detail"]]
    assert any(location[-len(loc) :] == list(loc) for location in locations), (loc, body)


@pytest.fixture
def agent(db_session: Session) -> tuple[str, dict[str, Any]]:
    _, token, facts = create_agent(db_session)
    return token, facts.model_dump(mode="json")


@pytest.fixture(params=[False, True], ids=["heuristic", "model"])
def with_model(request: pytest.FixtureRequest, db_session: Session) -> bool:
    if request.param:
        create_model_version(db_session, promote=True)
    return bool(request.param)


async def test_nul_in_an_enrolment_token_description(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    response = await api_client.post(
        "/v1/enrollment-tokens", json={"description": NUL}, headers=admin_headers
    )
    _field_named(response, "body", "description")
    assert "NUL" in response.json()["detail"][0]["msg"]


async def test_nul_in_an_enrolment_hostname(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    created = await api_client.post("/v1/enrollment-tokens", json={}, headers=admin_headers)
    response = await api_client.post(
        "/v1/agents/enroll",
        json={"enrollment_token": created.json()["token"], "host": host_facts(hostname=NUL)},
    )
    _field_named(response, "host", "hostname")


async def test_nul_in_a_reports_start_model_version(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]]
) -> None:
    token, facts = agent
    report = climb_report(facts, start_model_version=NUL)
    response = await api_client.post("/v1/reports", json=report, headers=auth(token))
    _field_named(response, "start_model_version")


async def test_nul_in_the_model_name_filter(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    response = await api_client.get("/v1/models", params={"name": NUL}, headers=admin_headers)
    _field_named(response, "query", "name")


async def test_a_lone_surrogate_in_a_hostname(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    created = await api_client.post("/v1/enrollment-tokens", json={}, headers=admin_headers)
    body = json.dumps(
        {"enrollment_token": created.json()["token"], "host": host_facts(hostname="db-\ud800")}
    )
    response = await api_client.post(
        "/v1/agents/enroll", content=body, headers={"Content-Type": "application/json"}
    )
    _field_named(response, "host", "hostname")


async def test_memory_bytes_beyond_bigint(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]], with_model: bool
) -> None:
    token, facts = agent
    huge = facts | {"memory_bytes": 2**63}
    for path, payload in [
        ("/v1/reports", climb_report(huge)),
        ("/v1/recommendations", recommendation_request(huge)),
    ]:
        response = await api_client.post(path, json=payload, headers=auth(token))
        _field_named(response, "host", "memory_bytes")
    assert (
        await api_client.post(
            "/v1/reports",
            json=climb_report(facts | {"memory_bytes": 2**63 - 1}),
            headers=auth(token),
        )
    ).status_code == 201


async def test_samples_to_converge_beyond_integer(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]]
) -> None:
    token, facts = agent
    report = climb_report(facts, samples_to_converge=2**31)
    response = await api_client.post("/v1/reports", json=report, headers=auth(token))
    _field_named(response, "samples_to_converge")


async def test_a_start_model_version_longer_than_its_column(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]]
) -> None:
    token, facts = agent
    too_long = climb_report(facts, start_model_version="m" * 201)
    response = await api_client.post("/v1/reports", json=too_long, headers=auth(token))
    _field_named(response, "start_model_version")
    fits = climb_report(facts, start_model_version="m" * 200)
    assert (await api_client.post("/v1/reports", json=fits, headers=auth(token))).status_code == 201


async def test_a_started_at_outside_years_1_to_9999_in_utc(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]]
) -> None:
    token, facts = agent
    for started, finished in [
        (OUT_OF_RANGE, "2026-01-01T00:00:00Z"),
        ("2026-01-01T00:00:00Z", "9999-12-31T23:00:00-14:00"),
    ]:
        report = climb_report(facts, started_at=started, finished_at=finished)
        response = await api_client.post("/v1/reports", json=report, headers=auth(token))
        field = "started_at" if started == OUT_OF_RANGE else "finished_at"
        _field_named(response, field)
        assert "years 1 to 9999" in str(response.json()["detail"])


async def test_report_datetimes_are_stored_in_utc(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]], admin_headers: dict[str, str]
) -> None:
    token, facts = agent
    report = climb_report(
        facts, started_at="2026-01-05T12:00:00+02:00", finished_at="2026-01-05T12:05:00+02:00"
    )
    response = await api_client.post("/v1/reports", json=report, headers=auth(token))
    assert response.status_code == 201, response.text
    assert response.json()["started_at"] == "2026-01-05T10:00:00Z"


async def test_a_since_filter_outside_years_1_to_9999_in_utc(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    for name in ("since", "until"):
        response = await api_client.get(
            "/v1/reports", params={name: OUT_OF_RANGE}, headers=admin_headers
        )
        _field_named(response, "query", name)


@pytest.mark.parametrize("connections", ["1e309", "1" + "0" * 309, "1e308"])
async def test_huge_connection_counts(
    api_client: AsyncClient,
    agent: tuple[str, dict[str, Any]],
    with_model: bool,
    connections: str,
) -> None:
    token, facts = agent
    for path, payload in [
        ("/v1/recommendations", recommendation_request(facts)),
        ("/v1/reports", climb_report(facts)),
    ]:
        # Written by hand: the number must reach the service exactly as typed.
        body = json.dumps(payload).replace('"connections": 200,', f'"connections": {connections},')
        assert connections in body
        response = await api_client.post(
            path, content=body, headers={**auth(token), "Content-Type": "application/json"}
        )
        _field_named(response, "profile", "connections")


async def test_huge_active_connections_are_refused_not_overflowed(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]]
) -> None:
    token, facts = agent
    payload = recommendation_request(facts, active_connections=1e308)
    response = await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
    assert response.status_code == 422
    assert "active_connections" in response.json()["detail"][0]["msg"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ttl_hours": True}, "ttl_hours"),
        ({"max_uses": True}, "max_uses"),
        ({"max_uses": "3"}, "max_uses"),
        ({"ttl_hours": "1.5"}, "ttl_hours"),
    ],
)
async def test_no_coercion_from_booleans_or_strings(
    api_client: AsyncClient, admin_headers: dict[str, str], body: dict[str, Any], field: str
) -> None:
    response = await api_client.post("/v1/enrollment-tokens", json=body, headers=admin_headers)
    _field_named(response, "body", field)


async def test_a_converged_flag_must_be_a_boolean(
    api_client: AsyncClient, agent: tuple[str, dict[str, Any]]
) -> None:
    token, facts = agent
    for value in (1, "true"):
        report = climb_report(facts, converged=value)
        response = await api_client.post("/v1/reports", json=report, headers=auth(token))
        _field_named(response, "converged")


async def test_every_json_body_route_answers_malformed_json_with_422(
    app: FastAPI, api_client: AsyncClient
) -> None:
    """A body that is not JSON, not UTF-8 or gives a key twice is a documented 422 on every
    operation the OpenAPI schema gives a JSON body (a router left on FastAPI's default parser
    answers an undocumented 400 or keeps the last key)."""
    operations = [
        (method.upper(), path)
        for path, item in app.openapi()["paths"].items()
        for method, operation in item.items()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    ]
    assert len(operations) >= 5, operations
    for method, path in operations:
        for body in (b'{"trailing": 1,', b"\xff\xfe{}", b'{"a": 1, "a": 2}'):
            response = await api_client.request(
                method,
                re.sub(r"\{[^}]+\}", "1", path),
                content=body,
                headers={**auth(TEST_ADMIN_TOKEN), "content-type": "application/json"},
            )
            assert response.status_code == 422, (method, path, body, response.text)
            assert response.json()["error"] == "validation_error", (method, path, body)
