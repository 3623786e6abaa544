"""Approval mode's service side through the real API on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from httpx import AsyncClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from service.approvals.models import Approval
from service.db import utcnow
from tests.console.payloads import approval_request
from tests.service.factories import auth, create_agent

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_an_agent_asks_and_polls_until_an_admin_approves(
    api_client: AsyncClient, db_session: Session, admin_headers: dict[str, str]
) -> None:
    _, token, _ = create_agent(db_session)
    gain = {"estimate": 1.2, "low": 1.05, "high": 1.3}
    created = await api_client.post(
        "/v1/approvals", json=approval_request(predicted_gain=gain), headers=auth(token)
    )
    assert created.status_code == 201, created.text
    approval = created.json()
    assert approval["state"] == "pending"
    assert approval["predicted_gain"] == gain
    assert approval["approved_tuple"] is None

    poll = await api_client.get(f"/v1/approvals/{approval['id']}", headers=auth(token))
    assert poll.json()["state"] == "pending"

    decided = await api_client.post(
        f"/v1/approvals/{approval['id']}/approve", json={"reason": "ok"}, headers=admin_headers
    )
    assert decided.status_code == 200, decided.text
    poll = await api_client.get(f"/v1/approvals/{approval['id']}", headers=auth(token))
    assert poll.json()["state"] == "approved"
    assert poll.json()["approved_tuple"] == {"thread_pool_size": 12, "thread_pool_oversubscribe": 3}
    assert poll.json()["edited"] is False
    assert poll.json()["decided_by"] == "admin"


async def test_the_same_key_answers_the_stored_request(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    body = approval_request()
    first = await api_client.post("/v1/approvals", json=body, headers=auth(token))
    again = await api_client.post("/v1/approvals", json=body, headers=auth(token))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    changed = approval_request(key=body["idempotency_key"], values={"thread_pool_size": 3})
    conflict = await api_client.post("/v1/approvals", json=changed, headers=auth(token))
    assert conflict.status_code == 409


async def test_a_new_request_supersedes_the_hosts_undecided_one(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    old = await api_client.post("/v1/approvals", json=approval_request(), headers=auth(token))
    new = await api_client.post("/v1/approvals", json=approval_request(), headers=auth(token))
    states = {
        item["id"]: item["state"]
        for item in (await api_client.get("/v1/approvals", headers=auth(token))).json()["items"]
    }
    assert states == {old.json()["id"]: "superseded", new.json()["id"]: "pending"}


async def test_an_edited_tuple_must_stay_inside_the_catalog_bounds(
    api_client: AsyncClient, db_session: Session, admin_headers: dict[str, str]
) -> None:
    _, token, _ = create_agent(db_session)
    approval_id = (
        await api_client.post("/v1/approvals", json=approval_request(), headers=auth(token))
    ).json()["id"]
    outside = await api_client.post(
        f"/v1/approvals/{approval_id}/approve",
        json={"values": {"thread_pool_size": 500}},
        headers=admin_headers,
    )
    assert outside.status_code == 422
    assert "thread_pool_size=500" in outside.json()["detail"]
    unknown = await api_client.post(
        f"/v1/approvals/{approval_id}/approve",
        json={"values": {"max_connections": 10}},
        headers=admin_headers,
    )
    assert unknown.status_code == 422
    assert "max_connections" in unknown.json()["detail"]
    edited = await api_client.post(
        f"/v1/approvals/{approval_id}/approve",
        json={"values": {"thread_pool_size": 10}},
        headers=admin_headers,
    )
    assert edited.status_code == 200
    assert edited.json()["approved_tuple"] == {"thread_pool_size": 10}
    assert edited.json()["edited"] is True
    twice = await api_client.post(f"/v1/approvals/{approval_id}/reject", headers=admin_headers)
    assert twice.status_code == 409


async def test_a_rejected_request_carries_no_tuple(
    api_client: AsyncClient, db_session: Session, admin_headers: dict[str, str]
) -> None:
    _, token, _ = create_agent(db_session)
    approval_id = (
        await api_client.post("/v1/approvals", json=approval_request(), headers=auth(token))
    ).json()["id"]
    rejected = await api_client.post(
        f"/v1/approvals/{approval_id}/reject", json={"reason": "not now"}, headers=admin_headers
    )
    assert rejected.json()["state"] == "rejected"
    assert rejected.json()["approved_tuple"] is None
    assert rejected.json()["reason"] == "not now"


async def test_an_undecided_request_expires_to_do_nothing(
    api_client: AsyncClient, db_session: Session, admin_headers: dict[str, str]
) -> None:
    _, token, _ = create_agent(db_session)
    approval = (
        await api_client.post("/v1/approvals", json=approval_request(ttl_s=60), headers=auth(token))
    ).json()
    assert approval["expires_at"]
    db_session.execute(
        update(Approval)
        .where(Approval.id == approval["id"])
        .values(expires_at=utcnow() - timedelta(seconds=1))
    )
    poll = await api_client.get(f"/v1/approvals/{approval['id']}", headers=auth(token))
    assert poll.json()["state"] == "expired"
    assert poll.json()["approved_tuple"] is None
    late = await api_client.post(f"/v1/approvals/{approval['id']}/approve", headers=admin_headers)
    assert late.status_code == 409


async def test_the_ttl_is_capped_by_the_service(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    long_wait = approval_request(ttl_s=29 * 24 * 3600)
    approval = (await api_client.post("/v1/approvals", json=long_wait, headers=auth(token))).json()
    row = db_session.get(Approval, approval["id"])
    assert row is not None
    assert row.ttl_s == 24 * 3600  # POOLTUNE_APPROVAL_TTL_HOURS' default


async def test_agents_see_only_their_own_hosts_requests(
    api_client: AsyncClient, db_session: Session, admin_headers: dict[str, str]
) -> None:
    _, mine, _ = create_agent(db_session)
    _, theirs, _ = create_agent(db_session)
    approval_id = (
        await api_client.post("/v1/approvals", json=approval_request(), headers=auth(mine))
    ).json()["id"]
    assert (
        await api_client.get(f"/v1/approvals/{approval_id}", headers=auth(theirs))
    ).status_code == 404
    assert (await api_client.get("/v1/approvals", headers=auth(theirs))).json()["total"] == 0
    listed = await api_client.get("/v1/approvals?state=pending", headers=admin_headers)
    assert approval_id in [item["id"] for item in listed.json()["items"]]
    refused = await api_client.post(f"/v1/approvals/{approval_id}/approve", headers=auth(mine))
    assert refused.status_code == 403


async def test_a_request_for_another_engine_is_refused(
    api_client: AsyncClient, db_session: Session
) -> None:
    _, token, _ = create_agent(db_session)
    body = approval_request(engine="pgbouncer", values={"default_pool_size": 20})
    response = await api_client.post("/v1/approvals", json=body, headers=auth(token))
    assert response.status_code == 422
    assert "engine" in response.json()["detail"]
