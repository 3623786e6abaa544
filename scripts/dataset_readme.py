"""What the READMEs of the measured datasets (MariaDB and PgBouncer) share: provenance,
the machine, the sweep's timing, which cases differ beyond their noise, the host's other
load and the files. Each dataset's readme.py adds its own fields to its template."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from trainer.sources.datasets import files_table


def host_load(during: pd.Series, *, busy_cores: float, more: str = "") -> str:
    """The README's sentence on what else ran on the host while the sweeps measured
    (``during``: other processes' cores per case; ``more`` follows the figures): a busy
    host is one where they used more than ``busy_cores`` on average."""
    figures = (
        f"other processes used on average {during.mean():.2f} cores (max {during.max():.2f} "
        f"over a case) during the sweeps{more}"
    )
    if during.mean() > busy_cores:
        return (
            f"**Shared with other processes**: {figures}; samples were not filtered, so treat "
            "the noise figures as those of a busy host."
        )
    return f"Quiet: {figures}."


def common_fields(
    manifest: Mapping[str, Any],
    *,
    description: Mapping[str, Any],
    machine: Mapping[str, Any],
    workloads: pd.DataFrame,
) -> dict[str, object]:
    """The template fields every measured dataset's README fills the same way."""
    timing = description["timing"]
    differs = workloads["differs_beyond_noise"].astype(bool)
    # Changes made to the measured tables after the run, each with its reason.
    notes = "".join(f"\n- {note}" for note in description.get("notes", []))
    return {
        "name": manifest["name"],
        "command": manifest["command"],
        "created_at": manifest["created_at"],
        "notes": f"\nChanged after the measurement:\n{notes}\n" if notes else "",
        "cores": machine["cpu_count"],
        "cpu_count": machine["cpu_count"],
        "cpu_model": machine["cpu_model"],
        "memory_gib": f"{machine['memory_bytes'] / 2**30:.1f}",
        "kernel": machine["kernel"],
        "size_grid": list(timing["size_grid"]),
        "dwell_s": f"{timing['dwell_s']:g}",
        "sample_period_s": f"{timing['sample_period_s']:g}",
        "discard_samples": timing["discard_samples"],
        "repeats": timing["repeats"],
        "warmup_s": f"{timing['warmup_s']:g}",
        "baseline_s": f"{timing['baseline_s']:g}",
        "beyond_noise": ", ".join(workloads[differs]["workload_id"]) or "none",
        "within_noise": ", ".join(workloads[~differs]["workload_id"]) or "none",
        "files": files_table(manifest),
    }
