"""The dataset's README: ``readme_template.md`` filled with the provenance, the results table
and the files' checksums."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from scripts.pgbouncer_dataset.cases import SCALE, SIZE, WORKLOADS
from scripts.pgbouncer_dataset.measure import BUSY_CORES, SERVER_SETTINGS

TEMPLATE = Path(__file__).with_name("readme_template.md")


def results_table(workloads: pd.DataFrame) -> str:
    lines = [
        "| case | size 20 | best size (raw) | peak | gain over 20 | best within noise | knee "
        "| noise (CV) | beyond noise? | other CPU before / during |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in workloads.to_dict(orient="records"):
        lines.append(
            f"| {row['workload_id']} | {row['default_throughput']:.0f} | {row['best_size_raw']} "
            f"| {row['peak_throughput']:.0f} | {row['gain_over_default']:+.1%} "
            f"| {row[f'best_{SIZE}']} | {row['knee_size']} | {row['noise_cv']:.1%} "
            f"| {'yes' if row['differs_beyond_noise'] else 'no'} "
            f"| {row['other_cpu_before_cores']:.2f} / {row['other_cpu_cores']:.2f} |"
        )
    return "\n".join(lines)


def scripts_text(workloads: pd.DataFrame) -> str:
    """The text of every custom pgbench script the cases ran."""
    blocks = []
    for name in dict.fromkeys(workloads["workload"]):
        script = WORKLOADS[name].script
        if script.text is not None:
            body = "\n".join(f"  {line}" for line in script.text.strip().splitlines())
            blocks.append(f"  - `{name}`:\n\n  ```\n{body}\n  ```")
    return "\n".join(blocks) or "  (none)"


def host_load(workloads: pd.DataFrame) -> str:
    """The README's sentence on what else ran on the host."""
    during = workloads["other_cpu_cores"]
    figures = (
        f"other processes used on average {during.mean():.2f} cores (max {during.max():.2f} "
        f"over a case) during the sweeps, {workloads['other_cpu_before_cores'].mean():.2f} "
        "right before the cases"
    )
    if during.mean() > BUSY_CORES:
        return (
            f"**Shared with other processes**: {figures}; samples were not filtered, so treat "
            "the noise figures as those of a busy host."
        )
    return f"Quiet: {figures}."


def readme(
    manifest: Mapping[str, Any], *, workloads: pd.DataFrame, description: Mapping[str, Any]
) -> str:
    """The README of a dataset written by ``trainer.sources.datasets.write_dataset``."""
    timing = description["timing"]
    machine = description["machine"]
    beyond = workloads[workloads["differs_beyond_noise"].astype(bool)]
    within = workloads[~workloads["differs_beyond_noise"].astype(bool)]
    notes = "".join(f"\n- {note}" for note in description.get("notes", []))
    return Template(TEMPLATE.read_text()).substitute(
        name=manifest["name"],
        command=manifest["command"],
        created_at=manifest["created_at"],
        case_count=len(workloads),
        notes=f"\nChanged after the measurement:\n{notes}\n" if notes else "",
        cores=machine["cpu_count"],
        cpu_count=machine["cpu_count"],
        cpu_model=machine["cpu_model"],
        memory_gib=f"{machine['memory_bytes'] / 2**30:.1f}",
        kernel=machine["kernel"],
        host_load=host_load(workloads),
        pgbouncer_version=machine["pgbouncer_version"],
        postgresql_version=machine["postgresql_version"],
        pgbench_version=machine["pgbench_version"],
        server_settings=", ".join(f"{k} = {v}" for k, v in SERVER_SETTINGS.items()),
        scale=SCALE,
        size_grid=list(timing["size_grid"]),
        dwell_s=f"{timing['dwell_s']:g}",
        sample_period_s=f"{timing['sample_period_s']:g}",
        discard_samples=timing["discard_samples"],
        repeats=timing["repeats"],
        warmup_s=f"{timing['warmup_s']:g}",
        baseline_s=f"{timing['baseline_s']:g}",
        commands="\n".join(
            f"  - `{row['workload_id']}`: `{row['pgbench_command']}`"
            for row in workloads.to_dict(orient="records")
        ),
        scripts=scripts_text(workloads),
        results_table=results_table(workloads),
        beyond_noise=", ".join(beyond["workload_id"]) or "none",
        within_noise=", ".join(within["workload_id"]) or "none",
        files="\n".join(
            f"| `{name}` | {meta['bytes']:,} | `{meta['sha256']}` |"
            for name, meta in manifest["files"].items()
        ),
    )
