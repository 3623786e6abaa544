"""``pooltune-trainer``: learn workload profile → optimal tuple, score it, register, promote.

The commands only parse and delegate to :mod:`trainer.pipeline`, :mod:`trainer.versions` and
:mod:`trainer.sources`; they talk to the service's database directly
(``--database-url`` or ``POOLTUNE_DATABASE_URL``; the same SQLite default as the service).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from agents.knobs import Engine
from trainer import cli_registry  # noqa: F401  (registers its commands on the app)
from trainer.calibration.command import make_sim_v2_command
from trainer.cli_common import (
    DEFAULT_DATABASE_URL,
    GATE_REFUSED,
    TOO_LITTLE_DATA,
    DatabaseUrl,
    EngineOption,
    app,
    console,
    database,
    errors,
    fail,
    print_scores,
    progress,
)
from trainer.weighting import DEFAULT_REAL_SHARE


@app.command("import-dataset")
def import_dataset(
    name: Annotated[
        str, typer.Argument(help="Dataset name under datasets/ (e.g. sim-v1) or a path.")
    ],
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    limit: Annotated[
        int | None,
        typer.Option(help="Import at most N workloads, a stable sample spanning the groups."),
    ] = None,
) -> None:
    """Turn a dataset into reports in the service's database (idempotent: twice stores once)."""
    from trainer.importer import import_reports
    from trainer.sources import datasets

    try:
        dataset = datasets.sample(datasets.load_dataset(name), limit)
    except datasets.DatasetError as exc:
        raise fail(str(exc)) from exc
    with database(database_url) as (_, session), progress() as bar:
        task = bar.add_task(f"importing {dataset.name}", total=len(dataset.workloads))
        created, existing = import_reports(
            session, datasets.reports(dataset), on_report=lambda: bar.advance(task)
        )
    console.print(f"{dataset.name}: {created} reports imported, {existing} already there")


@app.command()
def train(
    engine: EngineOption = Engine.MARIADB,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    name: Annotated[str, typer.Option(help="Model name in the registry.")] = "lightgbm",
    trials: Annotated[int, typer.Option(min=1, help="Optuna trials.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the split, the search and the models.")] = 0,
    worker: Annotated[
        int, typer.Option(min=0, help="Worker index when several share a study.")
    ] = 0,
    test_fraction: Annotated[float, typer.Option(min=0.05, max=0.5)] = 0.2,
    storage: Annotated[
        str | None,
        typer.Option(help="Optuna storage URL; defaults to the database (in memory for SQLite)."),
    ] = None,
    card_dir: Annotated[Path, typer.Option(help="Where the model card goes.")] = Path("var/cards"),
    limit: Annotated[int | None, typer.Option(help="Use at most N reports.")] = None,
    promote: Annotated[
        bool, typer.Option(help="Promote the new version if it passes the gate.")
    ] = False,
    min_groups: Annotated[
        int,
        typer.Option(min=3, help="Fewest workload groups to train on (a real dataset has few)."),
    ] = 30,
    real_weighting: Annotated[
        str,
        typer.Option(
            help="How real workloads count against simulated ones: 'weights' (sample "
            "weights) or 'finetune' (boost on the real ones after the simulated ones)."
        ),
    ] = "weights",
    real_share: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=100.0,
            help="With 'weights': the real workloads' total weight as a "
            "share of the simulated ones'.",
        ),
    ] = DEFAULT_REAL_SHARE,
) -> None:
    """Train on the database's converged reports, write a model card, register a new version."""
    from trainer import versions
    from trainer.pipeline import NotEnoughDataError
    from trainer.pipeline import train as run_training
    from trainer.search import SearchConfig
    from trainer.sources.database import read_examples
    from trainer.weighting import DomainWeighting

    try:
        weighting = DomainWeighting(kind=real_weighting, real_share=real_share)
    except ValueError as exc:
        raise fail(f"--real-weighting: {exc}") from exc

    if storage is None and not database_url.startswith("sqlite"):
        storage = database_url
    with database(database_url) as (_, session):
        with console.status("reading reports"):
            examples = list(read_examples(session, engine=engine, limit=limit))
        console.print(f"{len(examples)} examples for {engine.value}")
        with progress() as bar:
            task = bar.add_task("optuna trials", total=trials)
            config = SearchConfig(
                trials=trials,
                seed=seed,
                worker=worker,
                storage_url=storage,
                weighting=weighting,
                on_trial=lambda done, best: bar.update(
                    task,
                    completed=min(done, trials),
                    description=f"optuna trials (best {best:.4f})",
                ),
            )
            try:
                outcome = run_training(
                    examples,
                    engine=engine,
                    config=config,
                    test_fraction=test_fraction,
                    card_dir=card_dir / f"{engine.value}-{name}",
                    on_stage=lambda stage: bar.console.print(f"· {stage}"),
                    min_groups=min_groups,
                )
            except NotEnoughDataError as exc:
                raise fail(str(exc), code=2) from exc
        version = versions.register(session, outcome, engine=engine, name=name)
        print_scores(outcome.scores)
        if outcome.real is not None:
            print_scores(outcome.real.scores, title="real workloads, leave one workload out")
        for domain, gain in outcome.metrics.get("predicted_gain", {}).items():
            console.print(
                f"predicted gain, {domain}: {gain['coverage']:.3f} of true gains inside the "
                f"interval, median error {gain['median_abs_error']:.3f} ({gain['count']} workloads)"
            )
        console.print(
            f"registered {engine.value} {name} version {version.version} (id {version.id}); "
            f"model card: {outcome.card_path}"
        )
        version_id = version.id
    if promote:
        promote_command(
            version_id,
            database_url=database_url,
            force=False,
            reason="trained and promoted",
            seed=seed,
            test_fraction=test_fraction,
        )


@app.command("promote")
def promote_command(
    version_id: Annotated[int, typer.Argument(help="The model version's id (see `list`).")],
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    force: Annotated[bool, typer.Option(help="Promote even if the gate refuses (logged).")] = False,
    reason: Annotated[str, typer.Option(help="Why; recorded with the promotion.")] = "",
    seed: Annotated[int, typer.Option(help="Seed of the evaluation split.")] = 0,
    test_fraction: Annotated[float, typer.Option(min=0.05, max=0.5)] = 0.2,
) -> None:
    """Make a version the one the service uses, if it is better (or with --force).

    Better means: a lower mean regret than both the promoted version and the best baseline,
    all scored on the same held-out workloads of the current data.
    """
    from service.errors import NotFoundError
    from service.recommendations.predictor import ArtifactError
    from trainer import versions
    from trainer.pipeline import NotEnoughDataError

    with database(database_url) as (_, session):
        try:
            promotion = versions.promote(
                session,
                version_id,
                force=force,
                reason=reason,
                seed=seed,
                test_fraction=test_fraction,
                on_note=console.print,
            )
        except NotFoundError as exc:
            raise fail(str(exc)) from exc
        except ArtifactError as exc:
            raise fail(f"cannot load an artifact: {exc}") from exc
        except NotEnoughDataError as exc:
            raise fail(f"{exc}; pass --force to promote without the gate", code=2) from exc
        except versions.GateRefusedError as exc:
            raise fail(
                "the gate refuses this version; pass --force to promote it anyway",
                code=GATE_REFUSED,
            ) from exc
        version = promotion.version
        console.print(f"promoted {version.engine} {version.name} version {version.version}")


@app.command()
def bootstrap(
    engine: Annotated[
        Engine | None,
        typer.Option("--engine", help="Only this engine (default: every bundled dataset's)."),
    ] = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            help="Datasets to learn from (repeat the option; default: the engine's bundled ones).",
            show_default=False,
        ),
    ] = None,
    workloads: Annotated[
        int, typer.Option(min=50, help="How many workloads of each dataset, at most.")
    ] = 3000,
    trials: Annotated[int, typer.Option(min=1, help="Optuna trials.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the split, search and models.")] = 0,
) -> None:
    """Out of the box, for each engine with bundled datasets (MariaDB: the calibrated
    simulated corpus and the real sweeps; PgBouncer: its measured dataset): unless a model
    this version can load is promoted for the engine, import the datasets, train a small model
    and promote it (through the gate) — a few minutes."""
    from trainer.bootstrap import bootstrap_plan
    from trainer.sources.datasets import DatasetError

    try:
        plan, notes = bootstrap_plan(engine, dataset)
    except DatasetError as exc:
        raise fail(str(exc)) from exc
    for note in notes:
        console.print(note)
    for chosen, names in plan.items():
        _bootstrap_engine(
            chosen,
            database_url=database_url,
            datasets=names,
            workloads=workloads,
            trials=trials,
            seed=seed,
        )


def _bootstrap_engine(
    engine: Engine,
    *,
    database_url: str,
    datasets: Sequence[str],
    workloads: int,
    trials: int,
    seed: int,
) -> None:
    """One engine's bootstrap (see :func:`bootstrap`)."""
    from trainer import pipeline, versions
    from trainer.bootstrap import MIN_REAL_GROUPS, workload_groups
    from trainer.sources.datasets import DatasetError

    try:
        groups = sum(workload_groups(name) for name in datasets)
    except DatasetError as exc:
        raise fail(str(exc)) from exc
    if groups < MIN_REAL_GROUPS:
        console.print(
            f"{engine.value}: {', '.join(datasets)} hold {groups} workload groups, too few "
            "to learn from; "
            "the service answers from its heuristic"
        )
        return
    with database(database_url) as (_, session):
        promoted, unloadable = versions.promoted_version(session, engine)
        label = None if promoted is None else f"{promoted.name} version {promoted.version}"
    if label is not None and unloadable is None:
        console.print(f"{engine.value}: {label} is promoted; nothing to do")
        return
    if label is not None:
        console.print(
            f"{engine.value}: {label} is promoted but does not load with this version "
            f"({unloadable}); training a new one"
        )
    for name in datasets:
        import_dataset(name, database_url=database_url, limit=workloads)
    try:
        train(
            engine=engine,
            database_url=database_url,
            name="bootstrap",
            trials=trials,
            seed=seed,
            worker=0,
            test_fraction=0.2,
            storage=None,
            card_dir=Path("var/cards"),
            limit=None,
            promote=True,
            min_groups=min(pipeline.MIN_GROUPS, groups),
            real_weighting="weights",
            real_share=DEFAULT_REAL_SHARE,
        )
    except typer.Exit as exc:
        if exc.exit_code not in (TOO_LITTLE_DATA, GATE_REFUSED):
            raise
        console.print(f"{engine.value}: no model promoted: the service answers from its heuristic")


app.command("make-sim-v2")(make_sim_v2_command)


def main() -> None:
    logging.basicConfig(level=os.environ.get("POOLTUNE_LOG_LEVEL", "WARNING"))
    try:
        app()
    except KeyboardInterrupt:
        errors.print("interrupted")
        sys.exit(130)
