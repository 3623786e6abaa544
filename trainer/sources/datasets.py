"""Datasets on disk: two Parquet tables and a manifest of hashes; write, verify and load them,
and turn their workloads into examples or into reports. Format: docs/datasets.md."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agents import knobs
from agents.knobs import Engine
from agents.wire import (
    ClimberInfo,
    ClimbReport,
    HostFacts,
    KnobTuple,
    Source,
    TraceKind,
    TraceSample,
    WorkloadProfile,
)
from trainer.examples import Example, dataset_domain
from trainer.regret import Curve

SCHEMA_VERSION = 1
MANIFEST = "MANIFEST.json"
DATA_FILES = ("workloads.parquet", "curves.parquet")

HOST_COLUMNS = ("engine", "engine_version", "cpu_count", "memory_bytes")
PROFILE_COLUMNS = tuple(WorkloadProfile.model_fields)
#: Profile fields newer than some datasets: a dataset without the column loads with the field
#: unknown (NaN), as an agent that cannot measure it reports it. New datasets write them all.
LATER_PROFILE_COLUMNS = ("sync_ms_per_request",)
WORKLOAD_COLUMNS = (
    ("workload_id", "group", "kind")
    + HOST_COLUMNS
    + PROFILE_COLUMNS
    + ("knee_size", "peak_throughput", "default_throughput")
)
CURVE_COLUMNS = (
    "workload_id",
    "knob",
    "value",
    "throughput",
    "throughput_std",
    "samples",
    "latency_ms",
)


class DatasetError(ValueError):
    """A dataset is missing, changed since its manifest, or does not have the schema."""


def datasets_dir() -> Path:
    """``POOLTUNE_DATASETS_DIR``, else the repository's ``datasets/`` folder."""
    configured = os.environ.get("POOLTUNE_DATASETS_DIR")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "datasets"


def bundled(name: str) -> bool:
    """Whether ``datasets_dir()`` holds dataset ``name`` assembled (with its manifest); a
    folder still being measured is not one yet."""
    return (datasets_dir() / name / MANIFEST).is_file()


def resolve(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.is_dir():
        return path
    candidate = datasets_dir() / str(name_or_path)
    if candidate.is_dir():
        return candidate
    known = sorted(p.name for p in datasets_dir().glob("*") if bundled(p.name))
    raise DatasetError(
        f"no dataset {str(name_or_path)!r} (looked in {datasets_dir()}); "
        f"known: {', '.join(known) or 'none'}"
    )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_dataset(
    directory: Path,
    *,
    name: str,
    workloads: pd.DataFrame,
    curves: pd.DataFrame,
    command: str,
    description: Mapping[str, Any],
) -> dict[str, Any]:
    """Write both tables (zstd-compressed Parquet) and the manifest; returns the manifest."""
    missing = [c for c in WORKLOAD_COLUMNS if c not in workloads.columns]
    missing += [c for c in CURVE_COLUMNS if c not in curves.columns]
    if missing:
        raise DatasetError(f"cannot write {name}: missing columns {missing}")
    directory.mkdir(parents=True, exist_ok=True)
    workloads.to_parquet(directory / "workloads.parquet", compression="zstd", index=False)
    curves.to_parquet(directory / "curves.parquet", compression="zstd", index=False)
    manifest = {
        "name": name,
        "schema_version": SCHEMA_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "workloads": int(len(workloads)),
        "curve_points": int(len(curves)),
        "description": dict(description),
        "files": {
            file: {
                "sha256": sha256_file(directory / file),
                "bytes": (directory / file).stat().st_size,
            }
            for file in DATA_FILES
        },
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return manifest


def files_table(manifest: Mapping[str, Any]) -> str:
    """The rows of a README's table of the files :func:`write_dataset` checksummed: name,
    bytes, sha256."""
    return "\n".join(
        f"| `{name}` | {meta['bytes']:,} | `{meta['sha256']}` |"
        for name, meta in manifest["files"].items()
    )


@dataclass(frozen=True)
class Dataset:
    name: str
    path: Path
    manifest: dict[str, Any]
    workloads: pd.DataFrame
    curves: pd.DataFrame

    def size_curves(self) -> dict[str, Curve]:
        """The pool-size curve of every workload, by workload id."""
        return {
            workload_id: curves[knob]
            for workload_id, curves in self.knob_curves().items()
            for knob in knobs.POOL_SIZE_KNOB.values()
            if knob in curves
        }

    def knob_curves(self) -> dict[str, dict[str, Curve]]:
        """Every workload's curves (throughput per value of one knob), by workload id, knob."""
        out: dict[str, dict[str, Curve]] = {}
        frame = self.curves.assign(knob=self.curves["knob"].astype(str))
        for (workload_id, knob), rows in frame.groupby(["workload_id", "knob"], sort=False):
            rows = rows.sort_values("value")
            out.setdefault(str(workload_id), {})[str(knob)] = Curve(
                sizes=rows["value"].to_numpy(dtype=np.float64),
                throughput=rows["throughput"].to_numpy(dtype=np.float64),
            )
        return out


def verify(directory: Path) -> dict[str, Any]:
    """The manifest, after checking every file's sha256 against it."""
    manifest_path = directory / MANIFEST
    if not manifest_path.exists():
        raise DatasetError(f"{directory} has no {MANIFEST}; it is not a pooltune dataset")
    manifest: dict[str, Any] = json.loads(manifest_path.read_text())
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise DatasetError(
            f"{directory.name}: schema version {manifest.get('schema_version')!r}, "
            f"this version reads {SCHEMA_VERSION}"
        )
    for file, expected in manifest.get("files", {}).items():
        path = directory / file
        if not path.exists():
            raise DatasetError(f"{directory.name}: {file} is missing (listed in {MANIFEST})")
        actual = sha256_file(path)
        if actual != expected["sha256"]:
            raise DatasetError(
                f"{directory.name}: {file} has changed since the manifest was written "
                f"(sha256 {actual[:12]}…, expected {expected['sha256'][:12]}…); restore it "
                f"(git checkout -- {path}) or regenerate the dataset with: "
                f"{manifest.get('command')}"
            )
    return manifest


def load_dataset(name_or_path: str | Path) -> Dataset:
    directory = resolve(name_or_path)
    manifest = verify(directory)
    workloads = pd.read_parquet(directory / "workloads.parquet")
    curves = pd.read_parquet(directory / "curves.parquet")
    for table, columns, frame in (
        ("workloads", WORKLOAD_COLUMNS, workloads),
        ("curves", CURVE_COLUMNS, curves),
    ):
        missing = [c for c in columns if c not in frame.columns and c not in LATER_PROFILE_COLUMNS]
        if missing:
            raise DatasetError(f"{directory.name}: {table}.parquet lacks columns {missing}")
    for column in LATER_PROFILE_COLUMNS:
        if column not in workloads.columns:
            workloads[column] = np.nan
    return Dataset(
        name=str(manifest["name"]),
        path=directory,
        manifest=manifest,
        workloads=workloads,
        curves=curves,
    )


def _none_if_nan(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float | np.floating) and np.isnan(value):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _host_and_profile(row: Mapping[str, Any], dataset: str) -> tuple[HostFacts, WorkloadProfile]:
    host = HostFacts(
        hostname=f"{dataset}/{row['workload_id']}",
        engine=Engine(row["engine"]),
        engine_version=str(row["engine_version"]),
        cpu_count=int(row["cpu_count"]),
        memory_bytes=int(row["memory_bytes"]),
    )
    fields = {name: _none_if_nan(row[name]) for name in PROFILE_COLUMNS if name != "extras"}
    fields["extras"] = row_extras(row)
    return host, WorkloadProfile.model_validate(fields)


def row_extras(row: Mapping[str, Any]) -> dict[str, Any]:
    """A workload row's engine-specific extras, stored as a JSON text ({} when none)."""
    extras = row.get("extras")
    return json.loads(extras) if isinstance(extras, str) and extras else {}


def _best_tuple(row: Mapping[str, Any], engine: Engine) -> dict[str, int]:
    best = {}
    for knob in knobs.tuned_knobs(engine):
        value = _none_if_nan(row.get(f"best_{knob.name}"))
        if value is not None:
            best[knob.name] = int(value)
    return best


def sample(dataset: Dataset, limit: int | None) -> Dataset:
    """At most ``limit`` workloads of ``dataset`` in a stable pseudo-random order (a hash of
    the workload id), so a partial import spans the dataset's groups rather than its first
    rows; a larger ``limit`` takes a superset of a smaller one's."""
    if limit is None or limit >= len(dataset.workloads):
        return dataset
    order = dataset.workloads["workload_id"].map(
        lambda workload_id: hashlib.sha256(str(workload_id).encode()).hexdigest()
    )
    chosen = dataset.workloads.loc[order.sort_values(kind="stable").index[:limit]].sort_index()
    curves = dataset.curves[dataset.curves["workload_id"].isin(set(chosen["workload_id"]))]
    return replace(dataset, workloads=chosen, curves=curves)


def examples(dataset: Dataset) -> list[Example]:
    """Every workload of ``dataset`` as a training example with its curves; real or
    simulated by the dataset's name (:func:`trainer.examples.dataset_domain`)."""
    curves = dataset.knob_curves()
    domain = dataset_domain(dataset.name)
    out = []
    for row in dataset.workloads.to_dict(orient="records"):
        host, profile = _host_and_profile(row, dataset.name)
        size_name = knobs.POOL_SIZE_KNOB[host.engine]
        workload_curves = curves.get(str(row["workload_id"]), {})
        out.append(
            Example(
                group=f"{dataset.name}:{row['group']}",
                host=host,
                profile=profile,
                optimal_tuple=_best_tuple(row, host.engine),
                curve=workload_curves.get(size_name),
                origin=f"dataset:{dataset.name}:{row['workload_id']}",
                domain=domain,
                knob_curves={k: c for k, c in workload_curves.items() if k != size_name},
            )
        )
    return out


def reports(dataset: Dataset, *, received: datetime | None = None) -> Iterator[ClimbReport]:
    """Each workload as a :class:`ClimbReport` whose trace is its measured curve (samples of
    kind sweep), so the trainer reads the same examples back from the database.

    The idempotency key is ``dataset:<name>:<workload_id>``, so importing twice stores nothing
    new; ``climber`` is named ``"dataset"``, carries the workload group, and its settings the
    dataset, workload id and kind.
    """
    stamp = received or datetime(2026, 1, 1, tzinfo=UTC)
    curves_by_workload = {
        str(key): rows for key, rows in dataset.curves.groupby("workload_id", sort=False)
    }
    for row in dataset.workloads.to_dict(orient="records"):
        host, profile = _host_and_profile(row, dataset.name)
        best = _best_tuple(row, host.engine)
        size_name = knobs.POOL_SIZE_KNOB[host.engine]
        default = knobs.default_tuple(host.engine, host.cpu_count)
        rows = curves_by_workload.get(str(row["workload_id"]))
        trace = []
        if rows is not None:
            for index, point in enumerate(
                rows.sort_values(["knob", "value"]).to_dict(orient="records")
            ):
                # Sweeps vary one knob with the others at their defaults.
                tuple_values = dict(default) | {str(point["knob"]): int(point["value"])}
                trace.append(
                    TraceSample(
                        t_s=float(index),
                        knobs=tuple_values,
                        throughput=float(point["throughput"]),
                        latency_ms=_none_if_nan(point["latency_ms"]),
                        connections=profile.connections,
                        kind=TraceKind.SWEEP,
                        sweep_knob=str(point["knob"]),
                    )
                )
        peak = float(row["peak_throughput"])
        default_tp = _none_if_nan(row["default_throughput"])
        yield ClimbReport(
            idempotency_key=f"dataset:{dataset.name}:{row['workload_id']}",
            host=host,
            profile=profile,
            start_tuple=KnobTuple(engine=host.engine, values=default),
            start_source=Source.DEFAULT,
            optimal_tuple=KnobTuple(engine=host.engine, values=best or {size_name: 1}),
            default_tuple=KnobTuple(engine=host.engine, values=default),
            throughput_start=float(default_tp if default_tp is not None else peak),
            throughput_optimal=peak,
            throughput_default=default_tp,
            converged=True,
            samples_to_converge=len(trace),
            trace=trace,
            climber=ClimberInfo(
                name="dataset",
                settings={
                    "dataset": dataset.name,
                    "workload_id": str(row["workload_id"]),
                    "kind": str(row["kind"]),
                },
                workload_group=f"{dataset.name}:{row['group']}",
            ),
            started_at=stamp,
            finished_at=stamp,
        )
