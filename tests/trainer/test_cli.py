"""pooltune-trainer end to end on its own PostgreSQL database: import, train, promote, list,
show, evaluate, bootstrap — through the real CLI, committing for real."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fixtures.postgres import scratch_database
from trainer import simcorpus
from trainer.cli import app
from trainer.sources import datasets

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

runner = CliRunner()


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    with scratch_database("pooltune_trainer_cli") as url:
        yield url


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workloads, curves = simcorpus.build_corpus(150, seed=21, processes=1)
    directory = tmp_path_factory.mktemp("datasets") / "sim-cli"
    datasets.write_dataset(
        directory, name="sim-cli", workloads=workloads, curves=curves, command="t", description={}
    )
    return directory


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_the_trainer_cli_from_an_empty_database_to_a_promoted_model(
    database_url: str, dataset_dir: Path, tmp_path: Path
) -> None:
    db = ["--database-url", database_url]

    code, out = invoke("train", *db, "--trials", "2")
    assert code == 2, out
    assert "training needs at least 30" in out
    assert "import-dataset" in out

    code, out = invoke("import-dataset", str(dataset_dir), *db)
    assert code == 0, out
    assert "150 reports imported, 0 already there" in out
    code, out = invoke("import-dataset", str(dataset_dir), *db)
    assert "0 reports imported, 150 already there" in out

    card_dir = tmp_path / "cards"
    code, out = invoke("train", *db, "--trials", "2", "--card-dir", str(card_dir))
    assert code == 0, out
    assert "registered mariadb lightgbm version 1" in out
    card = card_dir / "mariadb-lightgbm"
    assert (card / "card.html").exists()
    assert (card / "regret_cdf.png").stat().st_size > 1000
    assert (card / "predicted_vs_best.png").stat().st_size > 1000
    scores = json.loads((card / "card.json").read_text())["scores"]
    assert {"lightgbm", "sklearn-hgb", "default", "heuristic", "little", "nearest"} <= set(scores)

    code, out = invoke("list", *db)
    assert code == 0 and "lightgbm" in out

    code, out = invoke("show", "1", *db)
    assert code == 0, out
    shown = json.loads(out)
    assert shown["version"] == 1 and len(shown["artifact_sha256"]) == 64
    assert shown["training_summary"]["examples"] == 150

    code, out = invoke("evaluate", "1", *db)
    assert code == 0, out
    assert "lightgbm:1" in out and "heuristic" in out

    # Promotion goes through the gate (against the baselines: no model is promoted yet);
    # --force always promotes, and says so.
    code, out = invoke("promote", "1", *db)
    assert "gate:" in out
    if code == 3:
        assert "refuses" in out
        code, out = invoke("promote", "1", *db, "--force", "--reason", "test")
    assert code == 0, out
    assert "promoted mariadb lightgbm version 1" in out

    code, out = invoke("bootstrap", *db, "--engine", "mariadb")
    assert code == 0, out
    assert "version 1 is promoted; nothing to do" in out

    # A model an older pooltune trained on another feature list cannot serve: bootstrap
    # says so and trains one that can, and the gate passes over the unloadable incumbent.
    older = json.loads(_artifact(database_url, 1))
    older["features"] = older["features"][:-2]
    _set_artifact(database_url, 1, json.dumps(older).encode())
    code, out = invoke(
        "bootstrap", *db, "--dataset", str(dataset_dir), "--workloads", "150", "--trials", "2"
    )
    assert code == 0, out
    out = " ".join(out.split())  # the console wraps long lines
    assert "does not load with this version" in out
    assert "training a new one" in out
    assert "the gate compares with the baselines" in out
    assert "promoted mariadb bootstrap version 1" in out or "no model promoted" in out


def _artifact(url: str, version_id: int) -> bytes:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            query = text("SELECT artifact FROM model_versions WHERE id = :id")
            return bytes(connection.execute(query, {"id": version_id}).scalar_one())
    finally:
        engine.dispose()


def _set_artifact(url: str, version_id: int, artifact: bytes) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("UPDATE model_versions SET artifact = :artifact WHERE id = :id"),
                {"artifact": artifact, "id": version_id},
            )
    finally:
        engine.dispose()


def test_unknown_dataset_and_unreachable_database_give_clear_errors() -> None:
    code, out = invoke("import-dataset", "no-such-dataset")
    assert code == 1 and "no dataset 'no-such-dataset'" in out
    code, out = invoke("list", "--database-url", "postgresql+psycopg://nobody:x@127.0.0.1:1/none")
    assert code == 1 and "cannot reach the database" in out
