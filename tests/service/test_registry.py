from __future__ import annotations

import threading
from typing import Any

import pytest
from httpx import AsyncClient
from sqlalchemy import Engine, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from agents.knobs import Engine as DbEngine
from service.errors import ConflictError, InvalidInputError
from service.recommendations.model_format import LinearPredictor, artifact_sha256, dump_predictor
from service.registry import service as registry_service
from service.registry.models import ModelVersion, PromotionEvent
from tests.service.factories import create_model_version

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

ARTIFACT = dump_predictor(LinearPredictor.constant(DbEngine.MARIADB, {"thread_pool_size": 4}))


def test_versions_are_numbered_per_engine_and_name(db_session: Session) -> None:
    a1 = create_model_version(db_session, name="a")
    a2 = create_model_version(db_session, name="a")
    b1 = create_model_version(db_session, name="b")
    pb1 = create_model_version(
        db_session, name="a", engine=DbEngine.PGBOUNCER, values={"default_pool_size": 4}
    )
    assert [a1.version, a2.version, b1.version, pb1.version] == [1, 2, 1, 1]
    assert a1.artifact_sha256 == artifact_sha256(a1.artifact)


def test_the_database_refuses_duplicate_version_numbers(db_session: Session) -> None:
    existing = create_model_version(db_session, name="dup")
    duplicate = ModelVersion(
        engine=existing.engine,
        name="dup",
        version=existing.version,
        artifact=ARTIFACT,
        artifact_sha256=artifact_sha256(ARTIFACT),
        artifact_size=len(ARTIFACT),
        metrics={},
        training_summary={},
    )
    with pytest.raises(IntegrityError), db_session.begin_nested():
        db_session.add(duplicate)
        db_session.flush()


def test_concurrent_registrations_get_distinct_numbers(pg_engine: Engine) -> None:
    """Two trainers at once: one insert loses on the unique constraint and retries."""
    factory = sessionmaker(bind=pg_engine, expire_on_commit=False)
    barrier = threading.Barrier(4)
    numbers: list[int] = []
    errors: list[BaseException] = []

    def register() -> None:
        try:
            with factory.begin() as session:
                barrier.wait()
                version = registry_service.register_version(
                    session,
                    engine="mariadb",
                    name="race",
                    artifact=ARTIFACT,
                    metrics={},
                    training_summary={},
                )
                numbers.append(version.version)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=register) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not errors, errors
        assert sorted(numbers) == [1, 2, 3, 4]
    finally:
        with factory.begin() as session:
            session.execute(delete(ModelVersion).where(ModelVersion.name == "race"))


def test_register_rejects_an_artifact_that_does_not_load(db_session: Session) -> None:
    with pytest.raises(InvalidInputError, match="does not load"):
        registry_service.register_version(
            db_session,
            engine="mariadb",
            name="junk",
            artifact=b"\x00not a model",
            metrics={},
            training_summary={},
        )


def test_register_rejects_non_finite_metrics(db_session: Session) -> None:
    with pytest.raises(InvalidInputError, match="finite"):
        registry_service.register_version(
            db_session,
            engine="mariadb",
            name="nan",
            artifact=ARTIFACT,
            metrics={"regret": float("nan")},
            training_summary={},
        )


def test_promotion_is_gated_on_regret_unless_forced(db_session: Session) -> None:
    good = create_model_version(db_session, metrics={"regret": 0.05}, promote=True)
    worse = create_model_version(db_session, metrics={"regret": 0.08})
    with pytest.raises(ConflictError, match="does not beat"):
        registry_service.promote_version(db_session, worse.id, reason="try")
    registry_service.promote_version(db_session, worse.id, reason="rollback drill", forced=True)
    db_session.refresh(good)
    assert (good.is_promoted, worse.is_promoted) == (False, True)
    event = db_session.scalars(
        select(PromotionEvent).where(PromotionEvent.model_version_id == worse.id)
    ).one()
    assert (event.action, event.forced, event.replaced_version_id) == ("promote", True, good.id)


def test_only_one_version_per_engine_can_be_promoted(db_session: Session) -> None:
    create_model_version(db_session, promote=True)
    other = create_model_version(db_session)
    with pytest.raises(IntegrityError), db_session.begin_nested():
        db_session.execute(
            update(ModelVersion).where(ModelVersion.id == other.id).values(is_promoted=True)
        )


async def test_registry_routes_show_metrics_summary_and_sha(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    version = create_model_version(db_session, metrics={"regret": 0.04})
    create_model_version(db_session, name="other")
    listed = (await api_client.get("/v1/models?name=const", headers=admin_headers)).json()
    assert listed["total"] == 1
    detail = (await api_client.get(f"/v1/models/{version.id}", headers=admin_headers)).json()
    assert detail["metrics"] == {"regret": 0.04}
    assert detail["training_summary"] == {"reports": 10}
    assert detail["artifact_sha256"] == version.artifact_sha256
    assert "artifact" not in detail
    assert detail["is_promoted"] is False and detail["history"] == []


async def test_promote_and_demote_routes(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    current = create_model_version(db_session, metrics={"regret": 0.05}, promote=True)
    worse = create_model_version(db_session, metrics={"regret": 0.5})
    rejected = await api_client.post(
        f"/v1/models/{worse.id}/promote", json={"reason": "?"}, headers=admin_headers
    )
    assert rejected.status_code == 409
    assert rejected.json()["error"] == "promotion_rejected"
    forced = await api_client.post(
        f"/v1/models/{worse.id}/promote",
        json={"reason": "operator says so", "forced": True},
        headers=admin_headers,
    )
    assert forced.status_code == 200
    body: dict[str, Any] = forced.json()
    assert body["is_promoted"] is True
    assert body["history"][0]["reason"] == "operator says so"
    demoted = await api_client.post(f"/v1/models/{worse.id}/demote", headers=admin_headers)
    assert demoted.status_code == 200 and demoted.json()["is_promoted"] is False
    again = await api_client.post(f"/v1/models/{worse.id}/demote", headers=admin_headers)
    assert again.status_code == 409
    missing = await api_client.post("/v1/models/999999/promote", headers=admin_headers)
    assert missing.status_code == 404
    db_session.refresh(current)
    assert current.is_promoted is False
