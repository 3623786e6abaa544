"""Sweep one knob over a grid and measure the server's curve (``pooltune-agent sweep``).

:mod:`~agents.sweep.plan` says what to measure and in which interleaved order,
:mod:`~agents.sweep.runner` measures it and restores the knobs, :mod:`~agents.sweep.curve`
holds the result and its statistics (the noise test), :mod:`~agents.sweep.output` writes
it, :mod:`~agents.sweep.cli` is the command. See docs/agent.md, "The sweep".
"""

from __future__ import annotations

from agents.sweep.curve import (
    KNEE_SHARE,
    NOISE_Z,
    TIE_LOSS,
    Point,
    SweepResult,
    SweepSample,
    best_value,
    curve_points,
    knee_value,
    noise_level,
    smallest_within_noise,
    within_noise,
)
from agents.sweep.output import (
    CURVE_CSV_COLUMNS,
    SAMPLE_CSV_COLUMNS,
    format_table,
    samples_csv_path,
    write_csv,
    write_plot,
)
from agents.sweep.plan import (
    DEFAULT_GRIDS,
    SweepError,
    SweepInterrupted,
    SweepPlan,
    VisitOrder,
    visit_order,
)
from agents.sweep.runner import Progress, ProgressCallback, Sweeper, run_sweep

__all__ = [
    "CURVE_CSV_COLUMNS",
    "DEFAULT_GRIDS",
    "KNEE_SHARE",
    "NOISE_Z",
    "SAMPLE_CSV_COLUMNS",
    "Point",
    "Progress",
    "ProgressCallback",
    "SweepError",
    "SweepInterrupted",
    "SweepPlan",
    "SweepResult",
    "SweepSample",
    "Sweeper",
    "VisitOrder",
    "best_value",
    "curve_points",
    "format_table",
    "knee_value",
    "noise_level",
    "run_sweep",
    "samples_csv_path",
    "TIE_LOSS",
    "smallest_within_noise",
    "visit_order",
    "within_noise",
    "write_csv",
    "write_plot",
]
