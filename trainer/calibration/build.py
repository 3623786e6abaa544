"""``pooltune-trainer make-sim-v2``: calibrate, draw, write sim-v2.

Fits the simulator to every case of the measured dataset (deterministic), or reuses the fitted
cases a sim-v2 manifest recorded (``calibration``), draws the corpus, and writes the dataset
with its manifest (the fitted parameters of every case in ``description.calibration``) and
README.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.calibration import simcorpus_v2
from trainer.calibration.fit import FitConfig, fit_cases
from trainer.calibration.realcases import real_cases
from trainer.simcorpus import SIZE_GRID
from trainer.sources import datasets


def calibration_records(
    real: str, *, processes: int, config: FitConfig | None = None
) -> list[dict[str, Any]]:
    """Fit every case of the measured dataset ``real``; one JSON-ready record per case."""
    cases = real_cases(datasets.load_dataset(real))
    fits = fit_cases(cases, config, processes=processes)
    return [simcorpus_v2.calibration_record(c, f) for c, f in zip(cases, fits, strict=True)]


def recorded_calibration(manifest_path: Path) -> list[dict[str, Any]]:
    """The fitted cases a sim-v2 manifest recorded."""
    try:
        manifest = json.loads(manifest_path.read_text())
        records: list[dict[str, Any]] = manifest["description"]["calibration"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise datasets.DatasetError(
            f"{manifest_path}: not a sim-v2 manifest with description.calibration ({exc})"
        ) from exc
    return records


def make_sim_v2(
    out: Path,
    *,
    workloads: int,
    seed: int,
    real: str,
    processes: int,
    calibration: Path | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write the sim-v2 corpus to ``out``; returns its manifest."""
    config = FitConfig()
    records = (
        recorded_calibration(calibration)
        if calibration is not None
        else calibration_records(real, processes=processes, config=config)
    )
    workload_table, curves = simcorpus_v2.build_corpus(
        workloads, seed=seed, calibration=records, processes=processes, on_progress=on_progress
    )
    command = (
        f"pooltune-trainer make-sim-v2 --out {out} --workloads {workloads} "
        f"--seed {seed} --real {real}"
    )
    if calibration is not None:
        command += f" --calibration {calibration}"
    manifest = datasets.write_dataset(
        out,
        name=out.name,
        workloads=workload_table,
        curves=curves,
        command=command,
        description={
            "source": "agents/sim",
            "seed": seed,
            "size_grid": SIZE_GRID,
            "real_dataset": real,
            "calibrated_workloads": int((workload_table["calibrated_from"] != "").sum()),
            "calibrated_share": simcorpus_v2.CALIBRATED_SHARE,
            "jitter": simcorpus_v2.JITTER,
            "other_cores": simcorpus_v2.OTHER_CORES,
            "fit": dataclasses.asdict(config),
            "calibration": records,
        },
    )
    (out / "README.md").write_text(simcorpus_v2.readme(manifest))
    return manifest
