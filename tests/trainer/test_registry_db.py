"""The trainer against a real PostgreSQL: import, streaming read, registration, the promotion
gate, and the service answering with exactly the trainer's prediction."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from httpx import AsyncClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from agents.knobs import Engine
from service.recommendations.tuple_model import KnobModel, TupleModel
from service.registry import service as registry
from service.registry.service import PromotionRejectedError
from service.reports.models import Report
from tests.service.factories import auth, create_agent
from trainer import simcorpus
from trainer.artifact import artifact_bytes
from trainer.examples import split_by_group
from trainer.importer import import_reports
from trainer.pipeline import promotion_gate
from trainer.search import SearchConfig, search_lightgbm
from trainer.sources import datasets
from trainer.sources.database import read_examples

from .synthetic import synthetic_examples

pytestmark = [pytest.mark.postgres]


@pytest.fixture(scope="module")
def sim_dataset(tmp_path_factory: pytest.TempPathFactory) -> datasets.Dataset:
    workloads, curves = simcorpus.build_corpus(160, seed=11, processes=1)
    directory = tmp_path_factory.mktemp("data") / "sim-small"
    datasets.write_dataset(
        directory,
        name="sim-small",
        workloads=workloads,
        curves=curves,
        command="test",
        description={},
    )
    return datasets.load_dataset(directory)


@pytest.fixture(scope="module")
def good_model(sim_dataset: datasets.Dataset) -> TupleModel:
    examples = datasets.examples(sim_dataset)
    return search_lightgbm(Engine.MARIADB, examples, SearchConfig(trials=2, seed=0)).model


def always_size_one() -> TupleModel:
    """A deliberately bad model: pool size 1 whatever the workload."""
    return TupleModel(
        engine=Engine.MARIADB,
        knob_models={"thread_pool_size": KnobModel(None, None, None, constant=0.0)},
    )


def test_import_is_idempotent_and_reads_back_the_same_examples(
    db_session: Session, sim_dataset: datasets.Dataset
) -> None:
    created, existing = import_reports(db_session, datasets.reports(sim_dataset))
    assert (created, existing) == (160, 0)
    again = import_reports(db_session, datasets.reports(sim_dataset))
    assert again == (0, 160)
    assert db_session.scalar(select(func.count()).select_from(Report)) == 160

    from_db = {e.origin: e for e in read_examples(db_session, engine=Engine.MARIADB, batch_size=7)}
    from_files = {e.group: e for e in datasets.examples(sim_dataset)}
    assert len(from_db) == 160
    for example in from_db.values():
        original = from_files[example.group]
        assert example.optimal_tuple == original.optimal_tuple
        assert example.profile == original.profile
        assert example.curve is not None and original.curve is not None
        assert example.curve.sizes.tolist() == original.curve.sizes.tolist()
        np.testing.assert_allclose(example.curve.throughput, original.curve.throughput)
        # A sim-* dataset is simulated, with its secondary knobs' curves too.
        assert example.domain == original.domain == "simulated"
        assert (
            set(example.knob_curves)
            == set(original.knob_curves)
            == {
                "thread_pool_oversubscribe",
                "thread_pool_stall_limit",
            }
        )
        for name, curve in example.knob_curves.items():
            np.testing.assert_allclose(curve.throughput, original.knob_curves[name].throughput)


def test_registration_numbers_versions_per_name(
    db_session: Session, good_model: TupleModel
) -> None:
    first = registry.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="lightgbm",
        artifact=artifact_bytes(good_model),
        metrics={"regret": 0.02},
        training_summary={"examples": 160},
    )
    second = registry.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="lightgbm",
        artifact=artifact_bytes(good_model),
        metrics={"regret": 0.01},
        training_summary={"examples": 160},
    )
    assert (first.version, second.version) == (1, 2)
    assert first.artifact_sha256 == second.artifact_sha256


def test_gate_refuses_a_worse_model_and_accepts_a_better_one(db_session: Session) -> None:
    # Synthetic workloads whose optimum the rule of thumb misses (a hidden contention factor).
    examples = synthetic_examples(300, seed=4)
    train_set, _ = split_by_group(examples, test_fraction=0.3, seed=0)
    good = search_lightgbm(Engine.MARIADB, train_set, SearchConfig(trials=2, seed=0)).model
    refused = promotion_gate(always_size_one(), good, examples, test_fraction=0.3, seed=0)
    assert not refused.accepted
    assert refused.current_regret is not None
    assert refused.candidate_regret > refused.current_regret
    accepted = promotion_gate(good, always_size_one(), examples, test_fraction=0.3, seed=0)
    assert accepted.accepted, accepted.reason
    assert accepted.candidate_regret < accepted.best_baseline_regret
    assert accepted.best_baseline == "heuristic"

    # The registry's own gate (metrics recorded at registration) refuses the worse one too.
    current = registry.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="good",
        artifact=artifact_bytes(good),
        metrics={"regret": accepted.candidate_regret},
        training_summary={},
    )
    registry.promote_version(db_session, current.id, reason="first")
    worse = registry.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="bad",
        artifact=artifact_bytes(always_size_one()),
        metrics={"regret": refused.candidate_regret},
        training_summary={},
    )
    with pytest.raises(PromotionRejectedError, match="does not beat the promoted version"):
        registry.promote_version(db_session, worse.id, reason="should fail")


@pytest.mark.anyio
async def test_the_service_answers_with_the_trainers_prediction(
    db_session: Session,
    api_client: AsyncClient,
    sim_dataset: datasets.Dataset,
    good_model: TupleModel,
) -> None:
    version = registry.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="lightgbm",
        artifact=artifact_bytes(good_model),
        metrics={"regret": 0.01},
        training_summary={},
    )
    registry.promote_version(db_session, version.id, reason="test")
    db_session.flush()
    checked = 0
    for example in datasets.examples(sim_dataset)[:12]:
        _, token, _ = create_agent(
            db_session, hostname=example.host.hostname, cpu_count=example.host.cpu_count
        )
        host: dict[str, Any] = example.host.model_dump(mode="json")
        response = await api_client.post(
            "/v1/recommendations",
            json={"host": host, "profile": example.profile.model_dump(mode="json")},
            headers=auth(token),
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["source"] == "model"
        assert body["model_version"].endswith(":1")
        start, ranges = good_model.predict(example.host, example.profile)
        assert body["start_tuple"]["values"]["thread_pool_size"] == start["thread_pool_size"]
        low, high = ranges["thread_pool_size"]
        served = body["ranges"]["thread_pool_size"]
        assert (served["low"], served["high"]) == (low, high)
        checked += 1
    assert checked == 12
