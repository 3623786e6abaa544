from __future__ import annotations

from datetime import timedelta

import pytest
from httpx import AsyncClient
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from service.auth.models import Agent, EnrollmentToken
from service.db import utcnow
from tests.service.factories import (
    auth,
    climb_report,
    create_agent,
    create_enrollment_token,
    host_facts,
    recommendation_request,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def _enroll(client: AsyncClient, token: str, **host: object) -> dict[str, object]:
    response = await client.post(
        "/v1/agents/enroll", json={"enrollment_token": token, "host": host_facts(**host)}
    )
    assert response.status_code == 201, response.text
    body: dict[str, object] = response.json()
    return body


async def test_admin_creates_enrollment_token_and_agent_enrolls(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    created = await api_client.post(
        "/v1/enrollment-tokens",
        json={"description": "rack 4", "max_uses": 2},
        headers=admin_headers,
    )
    assert created.status_code == 201
    token = created.json()["token"]
    assert token.startswith("pte_")

    credentials = await _enroll(api_client, token, hostname="db-1.example.net")
    assert str(credentials["agent_token"]).startswith("pta_")
    host = await api_client.get(f"/v1/hosts/{credentials['host_id']}", headers=admin_headers)
    assert host.json()["hostname"] == "db-1.example.net"

    # Tokens are stored hashed: neither secret appears in the database.
    stored = db_session.execute(
        text("SELECT token_hash FROM agents UNION ALL SELECT token_hash FROM enrollment_tokens")
    ).scalars()
    for digest in stored:
        assert digest not in (token, credentials["agent_token"])
        assert len(digest) == 64


async def test_missing_token_is_401(api_client: AsyncClient) -> None:
    response = await api_client.get("/v1/hosts")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_wrong_token_is_401(api_client: AsyncClient) -> None:
    for token in ("nonsense", "pta_not-a-real-token"):
        response = await api_client.get("/v1/hosts", headers=auth(token))
        assert response.status_code == 401


async def test_agent_token_on_admin_routes_is_403(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    for method, path in [
        ("GET", "/v1/hosts"),
        ("GET", "/v1/reports"),
        ("GET", "/v1/models"),
        ("GET", "/v1/agents"),
        ("POST", "/v1/models/1/promote"),
        ("POST", "/v1/enrollment-tokens"),
    ]:
        response = await api_client.request(method, path, headers=auth(token), json={})
        assert response.status_code == 403, (path, response.text)
        assert response.json()["error"] == "forbidden"


async def test_admin_token_cannot_upload_reports(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    response = await api_client.post("/v1/reports", json=climb_report(), headers=admin_headers)
    assert response.status_code == 403


async def test_agent_cannot_write_another_hosts_report(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    other = host_facts(hostname="someone-else.example.net")
    response = await api_client.post("/v1/reports", json=climb_report(other), headers=auth(token))
    assert response.status_code == 403
    assert "someone-else" in response.json()["detail"]


async def test_bad_enrollment_tokens_are_401(api_client: AsyncClient, db_session: Session) -> None:
    _, used_up = create_enrollment_token(db_session, max_uses=1)
    await _enroll(api_client, used_up)
    expired_row, expired = create_enrollment_token(db_session)
    expired_row.expires_at = utcnow() - timedelta(seconds=1)
    revoked_row, revoked = create_enrollment_token(db_session)
    revoked_row.revoked_at = utcnow()
    db_session.flush()
    for token, reason in [
        (used_up, "used up"),
        (expired, "expired"),
        (revoked, "revoked"),
        ("pte_unknown", "unknown"),
    ]:
        response = await api_client.post(
            "/v1/agents/enroll", json={"enrollment_token": token, "host": host_facts()}
        )
        assert response.status_code == 401
        assert reason in response.json()["detail"]


async def test_revoking_an_enrollment_token_via_api(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    row, token = create_enrollment_token(db_session)
    response = await api_client.post(
        f"/v1/enrollment-tokens/{row.id}/revoke", headers=admin_headers
    )
    assert response.status_code == 200
    assert response.json()["revoked_at"] is not None
    enroll = await api_client.post(
        "/v1/agents/enroll", json={"enrollment_token": token, "host": host_facts()}
    )
    assert enroll.status_code == 401


async def test_revoked_agent_token_is_401(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    agent, token, facts = create_agent(db_session)
    payload = recommendation_request(facts.model_dump(mode="json"))
    assert (
        await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
    ).status_code == 200
    revoke = await api_client.post(f"/v1/agents/{agent.id}/revoke", headers=admin_headers)
    assert revoke.status_code == 200
    response = await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    # A revoked agent cannot rotate its way back in.
    rotate = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=admin_headers)
    assert rotate.status_code == 403


async def test_rotation_replaces_the_token_once_the_new_one_is_used(
    api_client: AsyncClient, db_session: Session
) -> None:
    agent, old_token, facts = create_agent(db_session)
    rotated = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=auth(old_token))
    assert rotated.status_code == 200
    new_token = rotated.json()["agent_token"]
    assert new_token != old_token
    assert rotated.json()["previous_token_valid_until"] is not None
    payload = recommendation_request(facts.model_dump(mode="json"))
    # The overlap: until the new token is used, the old one still works.
    old = await api_client.post("/v1/recommendations", json=payload, headers=auth(old_token))
    assert old.status_code == 200
    new = await api_client.post("/v1/recommendations", json=payload, headers=auth(new_token))
    assert new.status_code == 200
    old = await api_client.post("/v1/recommendations", json=payload, headers=auth(old_token))
    assert old.status_code == 401
    db_session.expire_all()
    stored = db_session.scalars(select(Agent).where(Agent.id == agent.id)).one()
    assert stored.rotated_at is not None
    assert stored.previous_token_hash is None


async def test_the_previous_token_stops_after_the_overlap(
    api_client: AsyncClient, db_session: Session
) -> None:
    agent, old_token, facts = create_agent(db_session)
    rotated = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=auth(old_token))
    assert rotated.status_code == 200
    stored = db_session.scalars(select(Agent).where(Agent.id == agent.id)).one()
    stored.previous_token_expires_at = utcnow() - timedelta(seconds=1)
    db_session.flush()
    payload = recommendation_request(facts.model_dump(mode="json"))
    old = await api_client.post("/v1/recommendations", json=payload, headers=auth(old_token))
    assert old.status_code == 401
    assert "replaced by a rotation" in old.json()["detail"]
    retry = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=auth(old_token))
    assert retry.status_code == 401


async def test_a_rotation_whose_answer_was_lost_is_retried_with_the_old_token(
    api_client: AsyncClient, db_session: Session
) -> None:
    agent, old_token, facts = create_agent(db_session)
    lost = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=auth(old_token))
    assert lost.status_code == 200  # the agent never sees this answer
    retried = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=auth(old_token))
    assert retried.status_code == 200
    recovered = retried.json()["agent_token"]
    payload = recommendation_request(facts.model_dump(mode="json"))
    unused = await api_client.post(
        "/v1/recommendations", json=payload, headers=auth(lost.json()["agent_token"])
    )
    assert unused.status_code == 401
    ok = await api_client.post("/v1/recommendations", json=payload, headers=auth(recovered))
    assert ok.status_code == 200
    old = await api_client.post("/v1/recommendations", json=payload, headers=auth(old_token))
    assert old.status_code == 401


async def test_revocation_stops_both_tokens_during_the_overlap(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    agent, old_token, facts = create_agent(db_session)
    rotated = await api_client.post(f"/v1/agents/{agent.id}/rotate", headers=auth(old_token))
    new_token = rotated.json()["agent_token"]
    revoked = await api_client.post(f"/v1/agents/{agent.id}/revoke", headers=admin_headers)
    assert revoked.is_success
    payload = recommendation_request(facts.model_dump(mode="json"))
    for token in (old_token, new_token):
        response = await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
        assert response.status_code == 401
        assert "revoked" in response.json()["detail"]


async def test_agent_cannot_rotate_another_agents_token(
    api_client: AsyncClient, db_session: Session
) -> None:
    first, first_token, _ = create_agent(db_session)
    second, _, _ = create_agent(db_session)
    response = await api_client.post(f"/v1/agents/{second.id}/rotate", headers=auth(first_token))
    assert response.status_code == 403


async def test_an_enrolled_host_cannot_be_taken_over_with_a_fleet_token(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token = create_enrollment_token(db_session, max_uses=2)
    first = await _enroll(api_client, token, hostname="same.example.net")
    response = await api_client.post(
        "/v1/agents/enroll",
        json={"enrollment_token": token, "host": host_facts(hostname="same.example.net")},
    )
    assert response.status_code == 409
    assert "same.example.net" in response.json()["detail"]
    assert "scoped" in response.json()["detail"]
    row = db_session.scalars(select(EnrollmentToken)).all()[-1]
    assert row.uses == 1
    # The enrolled agent keeps working.
    agent = db_session.get(Agent, first["agent_id"])
    assert agent is not None and agent.revoked_at is None


async def test_a_token_scoped_to_the_hostname_reenrols_it_and_revokes_the_old_agent(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    _, fleet = create_enrollment_token(db_session)
    first = await _enroll(api_client, fleet, hostname="same.example.net", cpu_count=4)
    created = await api_client.post(
        "/v1/enrollment-tokens",
        json={"hostname": "same.example.net", "description": "re-enrol db"},
        headers=admin_headers,
    )
    assert created.status_code == 201, created.text
    assert created.json()["hostname"] == "same.example.net"
    second = await _enroll(
        api_client, created.json()["token"], hostname="same.example.net", cpu_count=8
    )
    assert first["host_id"] == second["host_id"]
    assert first["agent_id"] != second["agent_id"]
    facts = host_facts(hostname="same.example.net", cpu_count=8)
    payload = recommendation_request(facts)
    old = await api_client.post(
        "/v1/recommendations", json=payload, headers=auth(str(first["agent_token"]))
    )
    assert old.status_code == 401
    new = await api_client.post(
        "/v1/recommendations", json=payload, headers=auth(str(second["agent_token"]))
    )
    assert new.status_code == 200
    host = await api_client.get(f"/v1/hosts/{second['host_id']}", headers=admin_headers)
    assert host.json()["cpu_count"] == 8


async def test_a_scoped_token_enrols_only_its_hostname(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token = create_enrollment_token(db_session, hostname="db-9.example.net")
    response = await api_client.post(
        "/v1/agents/enroll",
        json={"enrollment_token": token, "host": host_facts(hostname="db-10.example.net")},
    )
    assert response.status_code == 403
    assert "db-9.example.net" in response.json()["detail"]
    await _enroll(api_client, token, hostname="db-9.example.net")


async def test_an_agent_asks_recommendations_for_its_own_host_only(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    other = recommendation_request(host_facts(hostname="someone-else.example.net"))
    response = await api_client.post("/v1/recommendations", json=other, headers=auth(token))
    assert response.status_code == 403
    assert "someone-else" in response.json()["detail"]
    admin = await api_client.post("/v1/recommendations", json=other, headers=admin_headers)
    assert admin.status_code == 200


async def test_list_agents_is_paginated(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    for _ in range(3):
        create_agent(db_session)
    page = await api_client.get("/v1/agents?limit=2&offset=0", headers=admin_headers)
    assert page.status_code == 200
    body = page.json()
    assert body["total"] == 3 and len(body["items"]) == 2
    assert "token_hash" not in body["items"][0]
