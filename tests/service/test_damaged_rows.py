"""Stored JSON that is not what its reader expects is shown as damaged, never a 500."""

from __future__ import annotations

import zlib

import pytest
from httpx import AsyncClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from tests.service.factories import create_agent, create_model_version, create_report

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def _damage(session: Session, statement: str, **params: object) -> None:
    session.execute(text(statement), params)
    session.expire_all()


async def test_a_model_version_whose_metrics_are_not_an_object(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    promoted = create_model_version(db_session, name="good", promote=True)
    damaged = create_model_version(db_session, name="bad")
    _damage(
        db_session,
        "UPDATE model_versions SET metrics = '[1, 2]', training_summary = '\"x\"' WHERE id = :id",
        id=damaged.id,
    )
    listing = await api_client.get("/v1/models", headers=admin_headers)
    assert listing.status_code == 200, listing.text
    items = {item["id"]: item for item in listing.json()["items"]}
    assert items[promoted.id]["damaged"] == []
    assert items[damaged.id]["metrics"] == {}
    assert items[damaged.id]["damaged"] == [
        "metrics: expected a JSON object, found list",
        "training_summary: expected a JSON object, found str",
    ]
    item = await api_client.get(f"/v1/models/{damaged.id}", headers=admin_headers)
    assert item.status_code == 200 and item.json()["damaged"]
    # Promotion reads the gate metric: damaged metrics mean none, so the gate refuses...
    refused = await api_client.post(f"/v1/models/{damaged.id}/promote", headers=admin_headers)
    assert refused.status_code == 409
    assert refused.json()["error"] == "promotion_rejected"
    # ... unless forced; and a damaged promoted version leaves nothing to beat.
    forced = await api_client.post(
        f"/v1/models/{damaged.id}/promote", json={"forced": True}, headers=admin_headers
    )
    assert forced.status_code == 200, forced.text
    after = await api_client.post(f"/v1/models/{promoted.id}/promote", headers=admin_headers)
    assert after.status_code == 200, after.text


async def test_a_report_whose_trace_does_not_decode(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    agent, _, facts = create_agent(db_session)
    report = create_report(db_session, agent, facts)
    for blob in (b"garbage", b"ptz1not-zlib", b"ptz1" + zlib.compress(b"{}")):
        _damage(
            db_session, "UPDATE reports SET trace = :blob WHERE id = :id", blob=blob, id=report.id
        )
        response = await api_client.get(f"/v1/reports/{report.id}", headers=admin_headers)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["report"]["trace"] == []
        assert len(body["damaged"]) == 1 and body["damaged"][0].startswith("trace: does not decode")
    listing = await api_client.get("/v1/reports", headers=admin_headers)
    assert listing.status_code == 200


async def test_a_report_whose_tuples_are_damaged(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    agent, _, facts = create_agent(db_session)
    report = create_report(db_session, agent, facts)
    create_report(db_session, agent, facts)
    _damage(
        db_session,
        "UPDATE reports SET optimal_tuple = '[]', profile = '7' WHERE id = :id",
        id=report.id,
    )
    listing = await api_client.get("/v1/reports", headers=admin_headers)
    assert listing.status_code == 200, listing.text
    damaged = [item for item in listing.json()["items"] if item["damaged"]]
    assert [item["id"] for item in damaged] == [report.id]
    assert damaged[0]["optimal_tuple"] == {}
    item = await api_client.get(f"/v1/reports/{report.id}", headers=admin_headers)
    assert item.status_code == 200, item.text
    assert item.json()["report"] is None
    assert any(note.startswith("report: not a valid report") for note in item.json()["damaged"])


async def test_a_host_whose_current_tuple_is_damaged(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    agent, _, facts = create_agent(db_session)
    create_report(db_session, agent, facts)
    _damage(
        db_session,
        'UPDATE hosts SET current_tuple = \'{"thread_pool_size": "many"}\' WHERE id = :id',
        id=agent.host_id,
    )
    _damage(
        db_session, "UPDATE reports SET start_tuple = 'null' WHERE host_id = :id", id=agent.host_id
    )
    listing = await api_client.get("/v1/hosts", headers=admin_headers)
    assert listing.status_code == 200, listing.text
    (host,) = [item for item in listing.json()["items"] if item["id"] == agent.host_id]
    assert host["current_tuple"] is None
    assert host["damaged"] == ["current_tuple: expected {knob: integer}, found dict"]
    detail = await api_client.get(f"/v1/hosts/{agent.host_id}", headers=admin_headers)
    assert detail.status_code == 200, detail.text
    assert detail.json()["last_report"]["damaged"] == [
        "start_tuple: expected {knob: integer}, found null"
    ]
