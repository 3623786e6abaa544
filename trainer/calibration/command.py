"""``pooltune-trainer make-sim-v2``: the command's options; the work is
:func:`trainer.calibration.build.make_sim_v2`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()
errors = Console(stderr=True)


def make_sim_v2_command(
    out: Annotated[Path, typer.Option(help="Dataset folder to write.")] = Path("datasets/sim-v2"),
    workloads: Annotated[int, typer.Option(min=10, help="How many workloads.")] = 20_000,
    seed: Annotated[int, typer.Option(help="Corpus seed.")] = 2,
    real: Annotated[str, typer.Option(help="The measured dataset to fit.")] = "mariadb-2core-v1",
    calibration: Annotated[
        Path | None, typer.Option(help="Reuse the fits recorded in this sim-v2 MANIFEST.json.")
    ] = None,
    processes: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
) -> None:
    """Fit the simulator to every measured curve, then generate the calibrated simulated
    corpus sim-v2 (seeded, regenerable) with its manifest and README."""
    from trainer.calibration.build import make_sim_v2, recorded_calibration
    from trainer.sources.datasets import DatasetError

    try:
        if calibration is not None:
            recorded_calibration(calibration)
    except DatasetError as exc:
        errors.print(f"--calibration: {exc}")
        raise typer.Exit(1) from exc
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("calibrating and simulating", total=workloads)
        try:
            manifest = make_sim_v2(
                out,
                workloads=workloads,
                seed=seed,
                real=real,
                processes=processes,
                calibration=calibration,
                on_progress=lambda n: bar.advance(task, n),
            )
        except DatasetError as exc:
            errors.print(f"--real: {exc}")
            raise typer.Exit(1) from exc
    total = sum(meta["bytes"] for meta in manifest["files"].values())
    console.print(f"wrote {out}: {workloads} workloads, {total:,} bytes")
