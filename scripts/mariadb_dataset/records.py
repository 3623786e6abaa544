"""One measured case on disk: ``<out>/cases/<workload_id>/case.json`` with every sample of
its sweeps and its provenance, written the moment the case ends, so a run can stop at any
point and the next one resumes (docs/datasets.md, "Resuming").

``case.json`` holds the case's definition (:func:`cases.case_definition`), its status, the
host facts (:mod:`host`), the server's command line, the sysbench command, its timings, the
CPU other processes used meanwhile and each sweep (plan, points, samples, profiles). Beside
it: ``curve.csv`` (one row per knob value, for a glance) and ``sysbench.log``.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from agents.sweep import SweepResult
from agents.sweep.stored import sweep_from_json, sweep_to_json
from scripts.mariadb_dataset.cases import SIZE, Case
from scripts.mariadb_dataset.measure import MeasuredCase

RECORD_FORMAT = 1
CASES_DIR = "cases"
SUPERSEDED_DIR = "superseded"
RECORD_FILE = "case.json"

#: done: counts; busy: measured while other processes used more CPU than the threshold;
#: failed: sysbench ended before the sweep did. Busy and failed cases are measured again.
Status = Literal["done", "busy", "failed"]


class RecordError(ValueError):
    """A case file that cannot be read; the message names the file."""


# -- the record ---------------------------------------------------------------------------


@dataclass
class CaseRecord:
    """A measured case as stored: what ran, where, how it went, and its sweeps."""

    dataset: str
    workload_id: str
    status: Status
    definition: dict[str, Any]
    host: dict[str, Any]
    server: dict[str, Any]
    sysbench: dict[str, Any]
    timings: dict[str, Any]
    other_cpu: dict[str, Any]
    sweeps: dict[str, SweepResult]

    @property
    def measured_at(self) -> str:
        return str(self.timings.get("started_at", ""))

    def measured(self, case: Case) -> MeasuredCase:
        """The case as :mod:`tables` reads it."""
        sweeps = dict(self.sweeps)
        size = sweeps.pop(SIZE)
        return MeasuredCase(
            case=case,
            size=size,
            secondary=sweeps,
            sysbench_command=str(self.sysbench.get("command", "")),
            sysbench_ok=bool(self.sysbench.get("ok", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "dataset": self.dataset,
            "workload_id": self.workload_id,
            "status": self.status,
            "definition": self.definition,
            "host": self.host,
            "server": self.server,
            "sysbench": self.sysbench,
            "timings": self.timings,
            "other_cpu": self.other_cpu,
            "sweeps": {knob: sweep_to_json(result) for knob, result in self.sweeps.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseRecord:
        return cls(
            dataset=data["dataset"],
            workload_id=data["workload_id"],
            status=data["status"],
            definition=data["definition"],
            host=data["host"],
            server=data["server"],
            sysbench=data["sysbench"],
            timings=data["timings"],
            other_cpu=data["other_cpu"],
            sweeps={knob: sweep_from_json(sweep) for knob, sweep in data["sweeps"].items()},
        )


def case_dir(out: Path, workload_id: str) -> Path:
    return out / CASES_DIR / workload_id


def write_record(out: Path, record: CaseRecord) -> Path:
    """Write ``record`` atomically (a temporary file, then ``os.replace``): a run killed
    while writing leaves the previous state, never half a file."""
    directory = case_dir(out, record.workload_id)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RECORD_FILE
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
    os.replace(temporary, path)
    return path


def read_record(path: Path) -> CaseRecord:
    try:
        data = json.loads(path.read_text())
        if data.get("format") != RECORD_FORMAT:
            raise RecordError(f"{path}: format {data.get('format')!r}, expected {RECORD_FORMAT}")
        return CaseRecord.from_json(data)
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise RecordError(f"{path}: cannot read the case ({exc})") from exc


def read_records(out: Path) -> dict[str, CaseRecord]:
    """Every stored case under ``out``, by workload id."""
    records = {}
    for path in sorted((out / CASES_DIR).glob(f"*/{RECORD_FILE}")):
        record = read_record(path)
        records[record.workload_id] = record
    return records


def supersede(out: Path, workload_id: str) -> Path | None:
    """Move a case's old files to ``<out>/superseded/<id>-<UTC stamp>/`` before it is
    measured again (kept for inspection; not part of the dataset)."""
    directory = case_dir(out, workload_id)
    if not directory.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = out / SUPERSEDED_DIR / f"{workload_id}-{stamp}"
    target.parent.mkdir(parents=True, exist_ok=True)
    # The folder ignores itself in git: the dataset is what `cases/` holds.
    (target.parent / ".gitignore").write_text("*\n")
    shutil.move(directory, target)
    return target
