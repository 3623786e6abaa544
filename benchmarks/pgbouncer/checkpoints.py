"""PostgreSQL's checkpoints placed on a live run's series: the lab cluster logs each one
with an epoch timestamp, and each run's line says when they wrote, beside the run's worst
10 s. A checkpoint's writes, and the full-page images every first change of a page after
it begins adds to the WAL, can pull a write-heavy load down for seconds at a fixed pool
size: the safety figure must not read that as the agent's doing (docs/pgbouncer.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.live.cases import SAMPLE_S
from benchmarks.live.scoring import ROLLING, worst_window

#: What the lab cluster of a live case adds to its settings: each log line begins with
#: the epoch time in seconds (``%n``), and each checkpoint is logged as it begins and ends.
CHECKPOINT_SETTINGS: Mapping[str, str] = {
    "log_checkpoints": "on",
    "log_line_prefix": "'%n '",
}

_LINE = re.compile(
    r"^(?P<at>\d+\.\d+) LOG:\s+(?:checkpoint|restartpoint) "
    r"(?P<what>starting|complete): ?(?P<rest>.*)$"
)
_BUFFERS = re.compile(r"wrote (\d+) buffers")


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint: when it began and ended (epoch seconds; None while unfinished),
    why (``time``, ``wal``, ``immediate force wait``, …) and how many buffers it wrote."""

    began: float
    ended: float | None
    reason: str
    buffers: int | None = None


def read_checkpoints(log: str) -> list[Checkpoint]:
    """The checkpoints of a server log written with :data:`CHECKPOINT_SETTINGS`, in order;
    lines of other formats are skipped (a log without them yields none)."""
    found: list[Checkpoint] = []
    began: tuple[float, str] | None = None
    for line in log.splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            continue
        at = float(match["at"])
        if match["what"] == "starting":
            if began is not None:
                found.append(Checkpoint(began[0], None, began[1]))
            began = (at, match["rest"].strip())
        elif began is not None:
            buffers = _BUFFERS.search(match["rest"])
            found.append(Checkpoint(began[0], at, began[1], int(buffers[1]) if buffers else None))
            began = None
    if began is not None:
        found.append(Checkpoint(began[0], None, began[1]))
    return found


def on_series(checkpoints: Sequence[Checkpoint], times: Sequence[float]) -> list[str]:
    """Each checkpoint that overlapped a series whose samples ended at ``times``, as
    ``began–ended s`` from the series' start (its first sample began ``SAMPLE_S`` before
    the first time), with its reason and buffers."""
    if not times:
        return []
    start, end = times[0] - SAMPLE_S, times[-1]
    spans: list[str] = []
    for checkpoint in checkpoints:
        ended = checkpoint.ended if checkpoint.ended is not None else end
        if ended < start or checkpoint.began > end:
            continue
        buffers = "" if checkpoint.buffers is None else f", {checkpoint.buffers} buffers"
        spans.append(
            f"{checkpoint.began - start:.0f}–{ended - start:.0f} s ({checkpoint.reason}{buffers})"
        )
    return spans


def checkpoint_line(
    checkpoints: Sequence[Checkpoint], series: Sequence[float], times: Sequence[float]
) -> str:
    """One run's checkpoints beside where its worst 10 s lie, in seconds from its start."""
    worst = worst_window(series)
    where = (
        ""
        if worst is None
        else f"worst 10 s at {worst * SAMPLE_S:.0f}–{(worst + ROLLING) * SAMPLE_S:.0f} s; "
    )
    spans = on_series(checkpoints, times)
    return where + "checkpoints " + (", ".join(spans) if spans else "none")


def record_checkpoints(
    raw: dict[str, Any], key: str, checkpoints: Sequence[Checkpoint], label: str
) -> None:
    """Add the checkpoints to every recorded run of case ``key`` (``--json``) and print,
    for the control and each agent run, where they fell."""
    listed = [[c.began, c.ended, c.reason, c.buffers] for c in checkpoints]
    for name, case in raw.items():
        if name != key and not name.startswith(f"{key}-"):
            continue
        case["checkpoints"] = listed
        series = {f"agent {name[len(key) + 1 :] or 'cold'}": ("agent", "agent_times")}
        if name == key:  # one control per case, recorded beside each run
            series = {"control": ("control", "control_times")} | series
        for run, (values, times) in series.items():
            if case.get(values) and case.get(times):
                line = checkpoint_line(checkpoints, case[values], case[times])
                print(f"# {label} {run}: {line}", flush=True)
