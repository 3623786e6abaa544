"""``--list``: each case's state and estimate, what is left, and how the rest splits into
runs of ``--max-minutes`` (the chunks the measurement is run in)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from scripts.mariadb_dataset.cases import Timing
from scripts.mariadb_dataset.resume import (
    CaseState,
    chunks,
    estimate_seconds,
    needs_measuring,
)


def _other_cpu(state: CaseState) -> str:
    if state.record is None:
        return ""
    mean = state.record.other_cpu.get("mean_cores")
    return f"{mean:.2f}" if isinstance(mean, float) else "?"


def format_listing(
    states: Sequence[CaseState],
    timing: Timing,
    *,
    header: str,
    max_minutes: float,
    accept_busy: bool = False,
    redo: bool = False,
    command: str = "",
) -> str:
    """The table of cases, the totals and the chunk plan."""
    lines = [
        header,
        "",
        f"{'state':8} {'case':34} {'est. min':>8} {'other CPU':>9}  measured at / note",
    ]
    for state in states:
        note = state.record.measured_at if state.record is not None else ""
        if state.machine:
            note += f"  OTHER MACHINE: {'; '.join(state.machine)}"
        todo = needs_measuring(state, accept_busy=accept_busy, redo=redo)
        lines.append(
            f"{state.state:8} {state.case.workload_id:34} "
            f"{timing.case_seconds(state.case) / 60:8.1f} {_other_cpu(state):>9}  "
            f"{note}{'' if todo or state.state == 'done' else '  (kept)'}"
        )
    counts = Counter(s.state for s in states)
    todo_cases = [s.case for s in states if needs_measuring(s, accept_busy=accept_busy, redo=redo)]
    workloads = {s.case.workload.name for s in states}
    groups = {s.case.workload.group_name for s in states}
    secondary = [s.case.workload_id for s in states if s.case.secondary]
    lines += [
        "",
        f"{len(states)} cases, {len(workloads)} workloads in {len(groups)} groups; "
        f"secondary-knob sweeps in {len(secondary)}: {', '.join(secondary) or 'none'}",
        ", ".join(f"{state} {counts[state]}" for state in sorted(counts)),
        f"left to measure: {len(todo_cases)} cases, about "
        f"{estimate_seconds(todo_cases, timing) / 60:.0f} minutes in one run "
        f"(whole catalog: {estimate_seconds([s.case for s in states], timing) / 60:.0f})",
    ]
    if todo_cases:
        plan = chunks(todo_cases, timing, max_minutes=max_minutes)
        lines.append(f"in runs of at most {max_minutes:g} minutes: {len(plan)} run(s)")
        for number, chunk in enumerate(plan, start=1):
            lines.append(
                f"  run {number}: {len(chunk)} cases, about "
                f"{estimate_seconds(chunk, timing) / 60:.0f} min: "
                f"{chunk[0].workload_id} … {chunk[-1].workload_id}"
            )
        if command:
            lines.append(f"each run: {command}")
    return "\n".join(lines)
