"""``pooltune-trainer``: learn workload profile → optimal tuple, score it, register, promote.

The commands only parse and delegate to :mod:`trainer.pipeline`, :mod:`trainer.datasets` and
the service's registry functions; they talk to the service's database directly
(``--database-url`` or ``POOLTUNE_DATABASE_URL``; the same SQLite default as the service).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.engine import Engine as SqlEngine
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from agents.knobs import Engine

if TYPE_CHECKING:
    from trainer.evaluation import Score

DEFAULT_DATABASE_URL = "sqlite:///./pooltune.db"
#: Exit codes: 1 an error, 2 too little data, 3 the promotion gate refused.
GATE_REFUSED = 3

app = typer.Typer(
    help="Train, evaluate, register and promote pooltune's recommendation models.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
errors = Console(stderr=True)

DatabaseUrl = Annotated[
    str,
    typer.Option(
        "--database-url",
        envvar="POOLTUNE_DATABASE_URL",
        help="The service's database (SQLAlchemy URL).",
        show_default=True,
    ),
]
EngineOption = Annotated[Engine, typer.Option("--engine", help="Which engine's reports to use.")]


def fail(message: str, code: int = 1) -> typer.Exit:
    errors.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


@contextlib.contextmanager
def database(url: str, *, migrate: bool = True) -> Iterator[tuple[SqlEngine, Session]]:
    """A session on the service's database (migrated to head first); commits on success."""
    from service import migrate as migrations
    from service.config import Settings
    from service.db import build_engine, build_sessionmaker

    try:
        if migrate:
            migrations.upgrade(url)
        engine = build_engine(Settings(database_url=url))
        with engine.connect():
            pass
    except OperationalError as exc:
        raise fail(f"cannot reach the database {url.split('@')[-1]}: {exc.orig}") from exc
    try:
        with build_sessionmaker(engine)() as session:
            try:
                yield engine, session
                session.commit()
            except BaseException:
                session.rollback()
                raise
    finally:
        engine.dispose()


def progress() -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


@app.command("import-dataset")
def import_dataset(
    name: Annotated[
        str, typer.Argument(help="Dataset name under datasets/ (e.g. sim-v1) or a path.")
    ],
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    limit: Annotated[int | None, typer.Option(help="Import only the first N workloads.")] = None,
) -> None:
    """Turn a dataset into reports in the service's database (idempotent: twice stores once)."""
    from trainer import datasets
    from trainer.importer import import_reports

    try:
        dataset = datasets.load_dataset(name)
    except datasets.DatasetError as exc:
        raise fail(str(exc)) from exc
    total = len(dataset.workloads) if limit is None else min(limit, len(dataset.workloads))
    with database(database_url) as (_, session), progress() as bar:
        task = bar.add_task(f"importing {dataset.name}", total=total)
        created, existing = import_reports(
            session, datasets.reports(dataset), limit=limit, on_report=lambda: bar.advance(task)
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
) -> None:
    """Train on the database's converged reports, write a model card, register a new version."""
    from service.registry import service as registry
    from trainer.data import read_examples
    from trainer.models import SearchConfig
    from trainer.pipeline import NotEnoughDataError
    from trainer.pipeline import train as run_training

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
                )
            except NotEnoughDataError as exc:
                raise fail(str(exc), code=2) from exc
        version = registry.register_version(
            session,
            engine=engine,
            name=name,
            artifact=outcome.model.to_bytes(),
            metrics=outcome.metrics,
            training_summary=outcome.training_summary,
        )
        session.flush()
        print_scores(outcome.scores)
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


def print_scores(scores: Mapping[str, Score]) -> None:
    table = Table(title="held-out workloads")
    columns = ("predictor", "median regret", "p90 regret", "mean regret", "n", "coverage")
    for column in columns + ("size / best (median, p90)",):
        table.add_column(column, justify="right")
    for name, score in scores.items():
        coverage = "—" if score.coverage is None else f"{score.coverage:.3f}"
        table.add_row(
            name,
            f"{score.regret.median:.4f}",
            f"{score.regret.p90:.4f}",
            f"{score.regret.mean:.4f}",
            str(score.regret.count),
            coverage,
            "—"
            if score.size_ratio is None
            else f"{score.size_ratio.median:.2f}, {score.size_ratio.p90:.2f}",
        )
    console.print(table)


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
    from service.registry import service as registry
    from service.registry.repository import RegistryRepository
    from trainer.artifact import ArtifactError, TupleModel
    from trainer.data import read_examples
    from trainer.pipeline import NotEnoughDataError, promotion_gate

    with database(database_url) as (_, session):
        try:
            candidate_row = registry.get_version(session, version_id)
        except Exception as exc:  # the service's NotFoundError
            raise fail(str(exc)) from exc
        engine = Engine(candidate_row.engine)
        current_row = RegistryRepository(session).promoted(engine.value)
        try:
            candidate = TupleModel.from_bytes(candidate_row.artifact)
        except ArtifactError as exc:
            raise fail(f"cannot load an artifact: {exc}") from exc
        current = None
        if current_row is not None and current_row.id != candidate_row.id:
            try:
                current = TupleModel.from_bytes(current_row.artifact)
            except ArtifactError as exc:
                # The service cannot load it either: it answers from its heuristic, which
                # the gate's baselines stand for.
                console.print(
                    f"the promoted {current_row.name} version {current_row.version} does not "
                    f"load with this version ({exc}); the gate compares with the baselines"
                )
        examples = list(read_examples(session, engine=engine))
        try:
            decision = promotion_gate(
                candidate, current, examples, test_fraction=test_fraction, seed=seed
            )
        except NotEnoughDataError as exc:
            if not force:
                raise fail(f"{exc}; pass --force to promote without the gate") from exc
            decision = None
        if decision is not None:
            console.print(
                f"gate: {decision.reason}: {'passes' if decision.accepted else 'refuses'}"
            )
        if decision is not None and not decision.accepted and not force:
            raise fail(
                "the gate refuses this version; pass --force to promote it anyway",
                code=GATE_REFUSED,
            )
        text = reason or "promoted by pooltune-trainer"
        if decision is not None:
            text += f" ({decision.reason})"
        if force:
            logging.getLogger(__name__).warning(
                "forced promotion of version %s: %s", version_id, text
            )
        registry.promote_version(
            session,
            version_id,
            reason=text,
            forced=force,
            evaluated_by_caller=decision is not None,
        )
        console.print(
            f"promoted {engine.value} {candidate_row.name} version {candidate_row.version}"
        )


@app.command()
def bootstrap(
    engine: EngineOption = Engine.MARIADB,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    dataset: Annotated[str, typer.Option(help="Bundled dataset to learn from.")] = "sim-v1",
    workloads: Annotated[int, typer.Option(min=50, help="How many of its workloads.")] = 3000,
    trials: Annotated[int, typer.Option(min=1, help="Optuna trials.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the split, search and models.")] = 0,
) -> None:
    """Out of the box: unless a model this version can load is promoted for the engine,
    import a bundled dataset, train a small model and promote it (through the gate) —
    seconds, not minutes."""
    from service.registry.repository import RegistryRepository
    from trainer.artifact import ArtifactError, TupleModel

    with database(database_url) as (_, session):
        promoted = RegistryRepository(session).promoted(engine.value)
        if promoted is not None:
            try:
                TupleModel.from_bytes(promoted.artifact)
            except ArtifactError as exc:
                console.print(
                    f"{engine.value}: {promoted.name} version {promoted.version} is promoted "
                    f"but does not load with this version ({exc}); training a new one"
                )
            else:
                console.print(
                    f"{engine.value}: {promoted.name} version {promoted.version} is promoted; "
                    "nothing to do"
                )
                return
    import_dataset(dataset, database_url=database_url, limit=workloads)
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
        )
    except typer.Exit as exc:
        if exc.exit_code != GATE_REFUSED:
            raise
        console.print("no model promoted: the service answers from its heuristic")


@app.command("make-sim-dataset")
def make_sim_dataset(
    out: Annotated[Path, typer.Option(help="Dataset folder to write.")] = Path("datasets/sim-v1"),
    workloads: Annotated[int, typer.Option(min=10, help="How many workloads.")] = 20_000,
    seed: Annotated[int, typer.Option(help="Corpus seed.")] = 1,
    processes: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
) -> None:
    """Generate the simulated corpus (seeded, regenerable) with its manifest and README."""
    from trainer import datasets, simcorpus

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
                    "metrics": {k: m for k, m in v.metrics.items() if k != "scores"},
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
    from service.registry import service as registry
    from trainer.artifact import ArtifactError, TupleModel
    from trainer.data import read_examples
    from trainer.evaluation import baseline_predictors
    from trainer.evaluation import evaluate as run_evaluation
    from trainer.examples import split_by_group

    with database(database_url) as (_, session):
        try:
            row = registry.get_version(session, version_id)
            model = TupleModel.from_bytes(row.artifact)
        except ArtifactError as exc:
            raise fail(f"cannot load the artifact: {exc}") from exc
        except Exception as exc:
            raise fail(str(exc)) from exc
        examples = list(read_examples(session, engine=Engine(row.engine)))
    train_set, test_set = split_by_group(examples, test_fraction=test_fraction, seed=seed)
    if not test_set or not train_set:
        raise fail(f"{len(examples)} examples are too few to hold some out", code=2)
    scores = run_evaluation(
        test=test_set,
        models={f"{row.name}:{row.version}": model},
        predictors=baseline_predictors(train_set),
    )
    print_scores(scores)


def main() -> None:
    logging.basicConfig(level=os.environ.get("POOLTUNE_LOG_LEVEL", "WARNING"))
    try:
        app()
    except KeyboardInterrupt:
        errors.print("interrupted")
        sys.exit(130)
