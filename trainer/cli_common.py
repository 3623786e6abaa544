"""What every ``pooltune-trainer`` command shares: the Typer app, its consoles and exit codes,
the database session and the score table."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
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
TOO_LITTLE_DATA = 2
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


def print_scores(scores: Mapping[str, Score], *, title: str = "held-out workloads") -> None:
    table = Table(title=title)
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
