"""The dataset's measured cases on disk, one JSON file per case, so a run can stop and resume.

Each case is written (atomically) as soon as it is measured, with the machine it was
measured on and the timing it used; a rerun skips the cases already there. Cases of
another machine, other server versions or another timing are never mixed into one
dataset: :meth:`CaseStore.check_compatible` refuses, naming what differs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.state import atomic_write_text
from lab.pgbouncer import PGBOUNCER
from lab.postgres import program
from scripts.sweep_rows import machine_facts

CASE_FORMAT = 1


class MixError(Exception):
    """Stored cases come from another machine, other versions or another timing."""


def _first_line(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=30)
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if lines else ""


def machine() -> dict[str, Any]:
    """What a case's figures depend on besides the case: the host and the versions of
    PgBouncer, PostgreSQL and pgbench."""
    return machine_facts() | {
        "pgbouncer_version": _first_line([shutil.which("pgbouncer") or PGBOUNCER, "--version"]),
        "postgresql_version": _first_line([str(program("postgres")), "--version"]),
        "pgbench_version": _first_line([str(program("pgbench")), "--version"]),
    }


@dataclass(frozen=True)
class CaseStore:
    """``<dataset>/cases/<case_id>.json``."""

    directory: Path

    def path(self, case_id: str) -> Path:
        return self.directory / f"{case_id}.json"

    def done(self) -> dict[str, dict[str, Any]]:
        """Every stored case by id (a damaged file is an error naming it)."""
        documents: dict[str, dict[str, Any]] = {}
        for path in sorted(self.directory.glob("*.json")):
            try:
                document = json.loads(path.read_text())
                if document.get("format") != CASE_FORMAT:
                    raise ValueError(f"format {document.get('format')!r}")
                documents[str(document["case_id"])] = document
            except (OSError, ValueError, KeyError) as exc:
                raise MixError(f"{path} is damaged ({exc}): delete it to measure it again") from exc
        return documents

    def check_compatible(self, machine: Mapping[str, Any], timing: Mapping[str, Any]) -> None:
        """Refuse to add cases of ``machine`` and ``timing`` to stored cases of others."""
        for case_id, document in self.done().items():
            differences = [
                f"{key}: stored {document['machine'].get(key)!r}, here {value!r}"
                for key, value in machine.items()
                if document["machine"].get(key) != value
            ] + [
                f"timing {key}: stored {document['timing'].get(key)!r}, now {value!r}"
                for key, value in timing.items()
                if document["timing"].get(key) != value
            ]
            if differences:
                raise MixError(
                    f"{self.directory} holds cases measured elsewhere or otherwise (first: "
                    f"{case_id}: {'; '.join(differences)}); a dataset never mixes them: "
                    "measure into another --out, or delete those cases to measure them again"
                )

    def write(self, case_id: str, document: Mapping[str, Any]) -> Path:
        path = self.path(case_id)
        body = {"format": CASE_FORMAT, "case_id": case_id, **document}
        atomic_write_text(path, json.dumps(body, indent=1, default=str) + "\n", mode=0o644)
        return path
