"""The final dataset from the stored cases: ``workloads.parquet``, ``curves.parquet``,
``MANIFEST.json`` (``trainer.sources.datasets.write_dataset``) and the README."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scripts.mariadb_dataset.cases import Case, Catalog, Timing
from scripts.mariadb_dataset.readme import readme
from scripts.mariadb_dataset.records import CASES_DIR, RECORD_FILE, CaseRecord
from scripts.mariadb_dataset.resume import CaseState, counts_as_done, mixed_machines
from scripts.mariadb_dataset.tables import build_tables
from trainer.sources.datasets import write_dataset

logger = logging.getLogger("make_mariadb_dataset")


class AssembleError(RuntimeError):
    """The stored cases cannot make the dataset as asked; the message says why."""


def assemble(
    out: Path,
    *,
    name: str,
    catalog: Catalog,
    timing: Timing,
    states: Sequence[CaseState],
    command: str,
    busy_cores: float,
    partial: bool = False,
    accept_busy: bool = False,
    allow_other_machine: bool = False,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Write the dataset from the done cases of ``states`` (in catalog order); returns its
    manifest and workloads table. Refuses a dataset with cases still to measure unless
    ``partial``, and cases from different machines unless ``allow_other_machine``."""
    used = [s for s in states if counts_as_done(s, accept_busy=accept_busy)]
    missing = [s.case.workload_id for s in states if s not in used]
    not_done = [f"{s.case.workload_id} ({s.state})" for s in states if s not in used]
    hint = (
        f"; busy = measured while other processes used more than {busy_cores:g} cores "
        "(--accept-busy keeps them)"
        if any(s.state == "busy" for s in states if s not in used)
        else ""
    )
    if not used:
        raise AssembleError(
            f"no finished case under {out / CASES_DIR}: {', '.join(not_done[:8])}{hint}"
        )
    if missing and not partial:
        raise AssembleError(
            f"{len(missing)} case(s) not done yet: {', '.join(not_done[:8])}"
            f"{' …' if len(missing) > 8 else ''}{hint}. Measure them first, or pass --partial "
            "to write a dataset of the finished cases"
        )
    records = [s.record for s in used if s.record is not None]
    mixed = mixed_machines(records)
    if mixed and not allow_other_machine:
        raise AssembleError(
            f"the cases come from different machines or versions: {', '.join(mixed[:5])}; "
            "pass --allow-other-machine to assemble them anyway"
        )
    workloads, curves = build_tables([(s.record, s.case) for s in used if s.record])
    # Judged by this run's threshold (``--accept-busy`` keeps busy cases, marked here).
    workloads["quiet"] = [s.state == "done" for s in used if s.record]
    host = dict(records[0].host)
    description: dict[str, Any] = {
        "catalog": catalog.version,
        "host": host,
        "engine_version": host["engine_version"],
        "servers": {
            r.server["name"]: r.server["command_line"]
            for r in reversed(records)  # the first case of each server wins
        },
        "timing": timing.as_dict(),
        "settled": settled_cases([s.case for s in used], timing),
        "cases": [r.workload_id for r in records],
        "cases_missing": missing,
        "case_files": f"{CASES_DIR}/<workload_id>/{RECORD_FILE}",
        "measuring_minutes": round(sum(r.timings["measuring_s"] for r in records) / 60, 1),
        "measuring_commands": sorted({str(r.timings.get("command", "")) for r in records}),
        "busy_cores": busy_cores,
        "other_cpu_cores_mean": float(workloads["other_cpu_cores"].mean()),
        "mixed_machines": mixed,
        "hosts": host_groups(records),
        "notes": list(catalog.notes),
    }
    manifest = write_dataset(
        out,
        name=name,
        workloads=workloads,
        curves=curves,
        command=command,
        description=description,
    )
    (out / "README.md").write_text(
        readme(
            manifest,
            catalog=catalog,
            workloads=workloads,
            curves=curves,
            description=description,
        )
    )
    logger.info("wrote %s: %d cases, %d curve points", out, len(workloads), len(curves))
    if missing:
        logger.warning("partial dataset: %d case(s) missing", len(missing))
    return manifest, workloads


def settled_cases(cases: Sequence[Case], timing: Timing) -> dict[str, dict[str, float]]:
    """The cases measured with a longer discard than ``timing``'s (``Case.settle_s``): their
    samples dropped after each change and their visits' length."""
    settled = {}
    for case in cases:
        own = timing.for_case(case)
        if own != timing:
            settled[case.workload_id] = {
                "discard_samples": own.discard_samples,
                "dwell_s": own.dwell_s,
            }
    return settled


def host_groups(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """The machines the cases were measured on: CPU model and kernel, with how many cases
    each, in order of first use."""
    counts: Counter[tuple[str, str]] = Counter(
        (str(r.host.get("cpu_model", "")), str(r.host.get("kernel", ""))) for r in records
    )
    return [{"cpu_model": m, "kernel": k, "cases": n} for (m, k), n in counts.items()]
