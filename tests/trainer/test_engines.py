"""A model per engine: bootstrap learns PgBouncer's from a PgBouncer dataset (and leaves an
engine without one to the heuristic), the baselines include PgBouncer's rule of thumb, and
the service answers each engine from its own promoted model."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from agents.knobs import Engine
from agents.wire import HostFacts, RecommendationRequest, Source, WorkloadProfile
from service.recommendations.predictor_cache import PredictorCache
from service.recommendations.service import recommend
from tests.fixtures.postgres import scratch_database
from trainer import baselines, simcorpus
from trainer.bootstrap import bootstrap_plan
from trainer.cli import app
from trainer.evaluation import baseline_predictors
from trainer.sources import datasets

runner = CliRunner()


def pgbouncer_dataset(directory: Path, *, workloads: int, groups: int) -> Path:
    """A small PgBouncer-engine dataset: simulated workloads with PgBouncer's knob, in
    ``groups`` workload groups (what a measured one looks like to the trainer)."""
    table, curves = simcorpus.build_corpus(workloads, seed=5, processes=1)
    table = table.copy()
    table["engine"] = "pgbouncer"
    table["engine_version"] = "PgBouncer 1.18.0; PostgreSQL 15"
    table["group"] = [f"w{index % groups}" for index in range(len(table))]
    table["best_default_pool_size"] = table["best_thread_pool_size"]
    table = table.drop(columns=[c for c in table.columns if c.startswith("best_thread_pool")])
    sizes = curves[curves["knob"] == "thread_pool_size"].copy()
    sizes["knob"] = "default_pool_size"
    out = directory / "pgbouncer-2core-v1"
    datasets.write_dataset(
        out, name=out.name, workloads=table, curves=sizes, command="test", description={}
    )
    return out


@pytest.fixture
def datasets_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pgbouncer_dataset(tmp_path, workloads=60, groups=8)
    monkeypatch.setenv("POOLTUNE_DATASETS_DIR", str(tmp_path))
    return tmp_path


def test_the_rule_of_thumb_baseline_is_pgbouncers_only(datasets_dir: Path) -> None:
    examples = datasets.examples(datasets.load_dataset("pgbouncer-2core-v1"))
    assert all(e.engine is Engine.PGBOUNCER for e in examples)
    assert {int(v) for v in baselines.rule_of_thumb_sizes(examples[:3])} <= {
        2 * e.host.cpu_count + 1 for e in examples
    }
    assert set(baselines.default_sizes(examples)) == {20.0}
    assert "2cores+disk" in baseline_predictors(examples)
    mariadb = datasets.examples(_mariadb_sample(datasets_dir))
    assert "2cores+disk" not in baseline_predictors(mariadb)


def _mariadb_sample(directory: Path) -> datasets.Dataset:
    table, curves = simcorpus.build_corpus(12, seed=2, processes=1)
    out = directory / "mariadb-sample"
    datasets.write_dataset(
        out, name=out.name, workloads=table, curves=curves, command="test", description={}
    )
    return datasets.load_dataset(out)


@pytest.fixture
def database_url() -> Iterator[str]:
    with scratch_database("pooltune_trainer_engines") as url:
        yield url


@pytest.mark.postgres
@pytest.mark.slow
def test_bootstrap_learns_a_model_per_engine_and_the_service_uses_it(
    datasets_dir: Path, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the model card goes to ./var/cards
    result = runner.invoke(app, ["bootstrap", "--database-url", database_url, "--trials", "2"])
    out = " ".join(result.output.split())
    assert result.exit_code == 0, out
    # No sim-v1 here: MariaDB keeps the heuristic; PgBouncer learns from its dataset.
    assert "mariadb: no bundled dataset; the service answers from its heuristic" in out
    assert "pgbouncer-2core-v1: 60 reports imported" in out
    assert "registered pgbouncer bootstrap version 1" in out
    if "no model promoted" in out:  # the gate's call on 8 workloads; promote to go on
        forced = runner.invoke(app, ["promote", "1", "--database-url", database_url, "--force"])
        assert forced.exit_code == 0, forced.output
    again = runner.invoke(app, ["bootstrap", "--database-url", database_url])
    assert "pgbouncer: bootstrap version 1 is promoted; nothing to do" in " ".join(
        again.output.split()
    )

    engine = create_engine(database_url)
    cache = PredictorCache(allow_pickle=False)
    profile = WorkloadProfile(
        window_s=30.0,
        connections=64,
        active_connections=30.0,
        qps=2000.0,
        tps=500.0,
        latency_ms=20.0,
        cpu_ms_per_request=0.5,
        wait_ms_per_request=19.5,
    )
    try:
        with Session(engine) as session:
            answers = {
                name: recommend(
                    session,
                    RecommendationRequest(
                        host=HostFacts(
                            hostname="h",
                            engine=name,
                            engine_version="1",
                            cpu_count=2,
                            memory_bytes=1 << 33,
                        ),
                        profile=profile,
                    ),
                    cache=cache,
                    host_id=None,
                    agent_id=None,
                ).response
                for name in ("pgbouncer", "mariadb")
            }
            session.rollback()
    finally:
        engine.dispose()
    assert answers["pgbouncer"].source is Source.MODEL
    assert answers["pgbouncer"].model_version == "bootstrap:1"
    assert set(answers["pgbouncer"].start_tuple.values) >= {"default_pool_size"}
    assert answers["mariadb"].source is Source.HEURISTIC
    card = json.loads((tmp_path / "var/cards/pgbouncer-bootstrap/card.json").read_text())
    assert "2cores+disk" in card["scores"]
    assert math.isfinite(card["scores"]["2cores+disk"]["regret"]["mean"])


def test_a_split_of_few_groups_leaves_neither_side_empty(datasets_dir: Path) -> None:
    from trainer.examples import split_by_group

    examples = datasets.examples(datasets.load_dataset("pgbouncer-2core-v1"))
    for seed in range(20):
        for fraction in (0.05, 0.25, 0.95):
            two = [e for e in examples if e.group.endswith((":w0", ":w1"))]
            train, test = split_by_group(two, test_fraction=fraction, seed=seed)
            assert train and test
            assert {e.group for e in train}.isdisjoint({e.group for e in test})
    # Many groups: the usual hash split, about the fraction asked.
    _, test = split_by_group(examples, test_fraction=0.5, seed=0)
    assert 0 < len({e.group for e in test}) < 8


def test_bootstrap_leaves_out_a_dataset_still_being_measured(datasets_dir: Path) -> None:
    """A dataset folder with cases but no manifest yet (a resumable build half-way) is not
    bundled: bootstrap trains on what is assembled and says so for the engine left bare."""
    (datasets_dir / "mariadb-2core-v2" / "cases").mkdir(parents=True)
    plan, notes = bootstrap_plan(None, None)
    assert plan == {Engine.PGBOUNCER: ("pgbouncer-2core-v1",)}
    assert notes == ["mariadb: no bundled dataset; the service answers from its heuristic"]
    assert not datasets.bundled("mariadb-2core-v2") and datasets.bundled("pgbouncer-2core-v1")
