"""``pooltune-trainer`` commands that read the registry (list, show, evaluate) and regenerate
the simulated corpus; registered on :data:`trainer.cli_common.app`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agents.knobs import Engine
from trainer.cli_common import (
    DEFAULT_DATABASE_URL,
    DatabaseUrl,
    app,
    console,
    database,
    fail,
    print_scores,
    progress,
)


@app.command("make-sim-dataset")
def make_sim_dataset(
    out: Annotated[Path, typer.Option(help="Dataset folder to write.")] = Path("datasets/sim-v1"),
    workloads: Annotated[int, typer.Option(min=10, help="How many workloads.")] = 20_000,
    seed: Annotated[int, typer.Option(help="Corpus seed.")] = 1,
    processes: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
) -> None:
    """Generate the simulated corpus (seeded, regenerable) with its manifest and README."""
    from trainer import simcorpus
    from trainer.sources import datasets

    with progress() as bar:
        task = bar.add_task("simulating workloads", total=workloads)
        workload_table, curves = simcorpus.build_corpus(
            workloads, seed=seed, processes=processes, on_progress=lambda n: bar.advance(task, n)
        )
    command = f"pooltune-trainer make-sim-dataset --out {out} --workloads {workloads} --seed {seed}"
    manifest = datasets.write_dataset(
        out,
        name=out.name,
        workloads=workload_table,
        curves=curves,
        command=command,
        description={"source": "agents/sim", "seed": seed, "size_grid": simcorpus.SIZE_GRID},
    )
    (out / "README.md").write_text(simcorpus.readme(manifest))
    total = sum(meta["bytes"] for meta in manifest["files"].values())
    console.print(
        f"wrote {out}: {workloads} workloads, {len(curves)} curve points, {total:,} bytes"
    )


@app.command("list")
def list_command(
    engine: Annotated[Engine | None, typer.Option(help="Only this engine.")] = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
) -> None:
    """The registered model versions, newest first."""
    from service.registry import service as registry

    with database(database_url) as (_, session):
        versions, total = registry.list_versions(
            session, engine=engine.value if engine else None, name=None, limit=limit, offset=0
        )
        table = Table(title=f"model versions ({total})")
        for column in ("id", "engine", "name", "version", "regret", "promoted", "created"):
            table.add_column(column)
        for v in versions:
            regret = v.metrics.get("regret")
            table.add_row(
                str(v.id),
                v.engine,
                v.name,
                str(v.version),
                f"{regret:.4f}" if isinstance(regret, int | float) else "—",
                "yes" if v.is_promoted else "",
                v.created_at.isoformat(timespec="seconds"),
            )
        console.print(table)


@app.command()
def show(
    version_id: Annotated[int, typer.Argument(help="The model version's id.")],
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
) -> None:
    """One version's metrics, training data summary and artifact hash."""
    import json

    from service.registry import service as registry

    with database(database_url) as (_, session):
        try:
            v = registry.get_version(session, version_id)
        except Exception as exc:
            raise fail(str(exc)) from exc
        console.print_json(
            json.dumps(
                {
                    "id": v.id,
                    "engine": v.engine,
                    "name": v.name,
                    "version": v.version,
                    "promoted": v.is_promoted,
                    "artifact_sha256": v.artifact_sha256,
                    "artifact_bytes": v.artifact_size,
                    "metrics": {k: m for k, m in v.metrics.items() if k not in ("scores", "card")},
                    "training_summary": v.training_summary,
                },
                default=str,
            )
        )


@app.command()
def evaluate(
    version_id: Annotated[int, typer.Argument(help="The model version's id.")],
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    seed: Annotated[int, typer.Option(help="Seed of the evaluation split.")] = 0,
    test_fraction: Annotated[float, typer.Option(min=0.05, max=0.5)] = 0.2,
) -> None:
    """Re-score a version and the baselines on the current data's held-out workloads."""
    from service.errors import NotFoundError
    from service.recommendations.predictor import ArtifactError
    from trainer import versions
    from trainer.pipeline import NotEnoughDataError

    with database(database_url) as (_, session):
        try:
            scores = versions.rescore(session, version_id, seed=seed, test_fraction=test_fraction)
        except NotFoundError as exc:
            raise fail(str(exc)) from exc
        except ArtifactError as exc:
            raise fail(f"cannot load the artifact: {exc}") from exc
        except NotEnoughDataError as exc:
            raise fail(str(exc), code=2) from exc
    print_scores(scores)
