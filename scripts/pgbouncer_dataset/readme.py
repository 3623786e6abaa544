"""The dataset's README: ``readme_template.md`` filled with the provenance, the results table
and the files' checksums."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from scripts.dataset_readme import common_fields, host_load
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


def readme(
    manifest: Mapping[str, Any], *, workloads: pd.DataFrame, description: Mapping[str, Any]
) -> str:
    """The README of a dataset written by ``trainer.sources.datasets.write_dataset``."""
    before = workloads["other_cpu_before_cores"].mean()
    return Template(TEMPLATE.read_text()).substitute(
        common_fields(
            manifest, description=description, machine=description["machine"], workloads=workloads
        ),
        case_count=len(workloads),
        host_load=host_load(
            workloads["other_cpu_cores"],
            busy_cores=BUSY_CORES,
            more=f", {before:.2f} right before the cases",
        ),
        pgbouncer_version=description["machine"]["pgbouncer_version"],
        postgresql_version=description["machine"]["postgresql_version"],
        pgbench_version=description["machine"]["pgbench_version"],
        server_settings=", ".join(f"{k} = {v}" for k, v in SERVER_SETTINGS.items()),
        scale=SCALE,
        commands="\n".join(
            f"  - `{row['workload_id']}`: `{row['pgbench_command']}`"
            for row in workloads.to_dict(orient="records")
        ),
        scripts=scripts_text(workloads),
        results_table=results_table(workloads),
    )
