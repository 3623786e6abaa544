"""The dataset's README: ``readme_template.md`` filled with the provenance, the results table
and the files' checksums."""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from scripts.dataset_readme import common_fields, host_load
from scripts.mariadb_dataset.cases import SERVER_NOTES, SERVER_OPTIONS, SIZE, Catalog

TEMPLATE = Path(__file__).with_name("readme_template.md")


def results_table(workloads: pd.DataFrame) -> str:
    lines = [
        "| workload | clients | metric | size 2 | best size (raw) | peak | gain over size 2 "
        "| best within noise | knee | noise (CV) | beyond noise? | other CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in workloads.to_dict(orient="records"):
        lines.append(
            f"| {row['workload']} | {row['clients']} | {row['throughput_metric'][:1]}ps "
            f"| {row['throughput_size2']:.0f} | {row['best_size_raw']} "
            f"| {row['peak_throughput']:.0f} | {row['gain_over_size2']:+.1%} "
            f"| {row[f'best_{SIZE}']} | {row['knee_size']} | {row['noise_cv']:.1%} "
            f"| {'yes' if row['differs_beyond_noise'] else 'no'} "
            f"| {row['other_cpu_cores']:.2f} |"
        )
    return "\n".join(lines)


def secondary_table(curves: pd.DataFrame) -> str:
    rows = curves[curves["knob"] != SIZE]
    if rows.empty:
        return "(none)"
    lines = ["| workload | knob | value | mean | CV | samples |", "|---|---|---|---|---|---|"]
    for row in rows.to_dict(orient="records"):
        lines.append(
            f"| {row['workload_id']} | {row['knob']} | {row['value']} | {row['throughput']:.0f} "
            f"| {row['throughput_cv']:.1%} | {row['samples']} |"
        )
    return "\n".join(lines)


def servers_list(names: list[str]) -> str:
    return "\n".join(
        f"  - `{name}`: {SERVER_NOTES[name]}; `{' '.join(SERVER_OPTIONS[name])}`" for name in names
    )


def workloads_list(catalog: Catalog, names: list[str]) -> str:
    lines = []
    for name in names:
        workload = catalog.workloads[name]
        rows = (
            ""
            if workload.table_size == 10_000 and workload.tables == 4
            else (f" ({workload.tables} × {workload.table_size:,} rows)")
        )
        lines.append(
            f"  - `{name}` ({workload.kind}, server `{workload.server}`, "
            f"{workload.metric}){rows}: {workload.description}"
        )
    return "\n".join(lines)


def secondary_sentence(cases: int, timing: dict[str, Any]) -> str:
    """What the README says of the oversubscribe and stall-limit sweeps (nothing without)."""
    if not cases:
        return ""
    return (
        f"{cases} case(s) also sweep `thread_pool_oversubscribe` "
        f"{list(timing['oversubscribe_grid'])} and `thread_pool_stall_limit` "
        f"{list(timing['stall_grid'])} (at the default size, "
        f"{timing['secondary_repeats']} repeats). "
    )


def settled_sentence(settled: dict[str, dict[str, float]]) -> str:
    """What the README says of the cases measured with a longer discard (nothing without)."""
    if not settled:
        return ""
    listed = ", ".join(
        f"`{case}` ({int(t['discard_samples'])} dropped, {t['dwell_s']:g} s visits)"
        for case, t in settled.items()
    )
    return (
        "Where a load's queue carried a pool size's state into the next visit (the paired "
        "check, `python -m scripts.paired_check`), its case drops more samples after each "
        f"change and makes each visit longer by as much: {listed}. "
    )


def machines(hosts: list[dict[str, Any]]) -> dict[str, str]:
    """The host fields of a dataset measured on more than one machine (``--allow-other-
    machine``): each CPU model with its count of cases, and the kernel builds; empty for
    one machine, whose fields come from its facts."""
    models: dict[str, int] = {}
    for host in hosts:
        models[host["cpu_model"]] = models.get(host["cpu_model"], 0) + int(host["cases"])
    kernels = list(dict.fromkeys(str(h["kernel"]) for h in hosts))
    fields = {}
    if len(models) > 1:
        fields["cpu_model"] = "; ".join(
            f"{m}: {n} case{'s' if n != 1 else ''}" for m, n in models.items()
        )
    if len(kernels) > 1:
        fields["kernel"] = (
            f"{kernels[0]} … {kernels[-1]} ({len(kernels)} builds; each case's in its `case.json`)"
        )
    return fields


def readme(
    manifest: dict[str, Any],
    *,
    catalog: Catalog,
    workloads: pd.DataFrame,
    curves: pd.DataFrame,
    description: dict[str, Any],
) -> str:
    """The README of a dataset written by ``trainer.sources.datasets.write_dataset``."""
    timing = description["timing"]
    host = description["host"]
    secondary_cases = curves.loc[curves["knob"] != SIZE, "workload_id"].unique()
    fields = common_fields(manifest, description=description, machine=host, workloads=workloads)
    fields |= machines(description.get("hosts", []))
    return Template(TEMPLATE.read_text()).substitute(
        fields,
        sysbench_version=host["sysbench_version"],
        host_load=host_load(
            workloads["other_cpu_cores"],
            busy_cores=float(description["busy_cores"]),
            more=" (`other_cpu_cores`)",
        ),
        engine_version=description["engine_version"],
        servers=servers_list(list(dict.fromkeys(workloads["server"]))),
        workloads=workloads_list(catalog, list(dict.fromkeys(workloads["workload"]))),
        summary=catalog.summary,
        kinds=", ".join(f"`{k}`" for k in dict.fromkeys(workloads["kind"])),
        secondary=secondary_sentence(len(secondary_cases), timing),
        settled=settled_sentence(description.get("settled", {})),
        measuring_minutes=f"{description['measuring_minutes']:.0f}",
        busy_cores=f"{description['busy_cores']:g}",
        commands="\n".join(
            f"- `{row['workload_id']}`: `{row['sysbench_command']}`"
            for row in workloads.to_dict(orient="records")
        ),
        grid_points=len(timing["size_grid"]),
        results_table=results_table(workloads),
        secondary_table=secondary_table(curves),
    )
