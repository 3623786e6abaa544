"""Scoring rules shared by the benchmarks (DESIGN.md, "Benchmark vocabulary")."""

from __future__ import annotations

from collections.abc import Sequence


def first_sustained(
    values: Sequence[float],
    threshold: float,
    *,
    window: int,
    hold: float,
    partial_window: bool = False,
) -> int | None:
    """The first index from which at least ``hold`` of the next ``window`` values are
    ``≥ threshold`` (T95: 95% of the peak for 90% of the next 30 samples), or None.

    With ``partial_window`` the windows that run past the end are judged on the values
    they have; without, an index needs a whole window after it.
    """
    last = len(values) if partial_window else len(values) - window + 1
    for index in range(max(0, last)):
        ahead = values[index : index + window]
        if sum(v >= threshold for v in ahead) / len(ahead) >= hold:
            return index
    return None
