"""Which cases of a run are done, which are measured (again), and whether the stored cases
come from this machine: the pure rules of resuming (docs/datasets.md, "Resuming")."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scripts.mariadb_dataset.cases import Case, Timing, case_definition
from scripts.mariadb_dataset.host import NOTED_FACTS, machine_differences
from scripts.mariadb_dataset.records import CaseRecord

#: done: measured, quiet, as the catalog defines it; pending: never measured; busy / failed:
#: stored but measured again (busy: unless accepted); changed: stored for another
#: definition (workload, clients, server options or timing) and measured again.
State = Literal["done", "pending", "busy", "failed", "changed"]

#: Mean CPU (cores) of other processes above which a case counts as measured on a busy
#: machine (``--busy-cores``).
BUSY_CORES = 0.25


class MachineMismatch(RuntimeError):
    """Stored cases were measured on another machine, engine or sysbench version."""


@dataclass(frozen=True)
class CaseState:
    case: Case
    state: State
    record: CaseRecord | None = None
    #: ``fact: recorded → current`` for the facts that make it another machine.
    machine: tuple[str, ...] = field(default=())


def case_states(
    cases: Sequence[Case],
    records: dict[str, CaseRecord],
    *,
    timing: Timing,
    host: dict[str, Any],
    busy_cores: float = BUSY_CORES,
) -> list[CaseState]:
    """Each case's state against the stored records and this host's facts. Whether a
    measured case was busy is judged by ``busy_cores`` now, from the other processes' CPU
    it stored (so a stricter threshold on a later run sends it back to be measured)."""
    states = []
    for case in cases:
        record = records.get(case.workload_id)
        if record is None:
            states.append(CaseState(case, "pending"))
            continue
        machine = tuple(machine_differences(record.host, host))
        state: State
        if record.definition != case_definition(case, timing):
            state = "changed"
        elif record.status == "failed":
            state = "failed"
        else:
            quiet = other_cpu_summary(record.other_cpu.get("mean_cores"), threshold=busy_cores)
            state = "done" if quiet["quiet"] else "busy"
        states.append(CaseState(case, state, record, machine))
    return states


def needs_measuring(state: CaseState, *, accept_busy: bool = False, redo: bool = False) -> bool:
    """Whether a run measures this case: everything not done, except busy cases when
    ``accept_busy``; everything with ``redo``."""
    if redo:
        return True
    if state.state == "done":
        return False
    if state.state == "busy":
        return not accept_busy
    return True


def counts_as_done(state: CaseState, *, accept_busy: bool = False) -> bool:
    """Whether the stored case goes into the dataset."""
    return state.state == "done" or (accept_busy and state.state == "busy")


def check_same_machine(
    states: Iterable[CaseState], *, allow: bool = False, accept_busy: bool = False
) -> list[str]:
    """Refuse (:class:`MachineMismatch`) when a stored case that stays in the dataset was
    measured on another machine, engine or sysbench version, unless ``allow``; returns
    the differences (for the log) otherwise."""
    foreign = [
        f"{s.case.workload_id} ({'; '.join(s.machine)})"
        for s in states
        if s.machine and counts_as_done(s, accept_busy=accept_busy)
    ]
    if foreign and not allow:
        raise MachineMismatch(
            f"{len(foreign)} stored case(s) were measured on another machine or with other "
            f"versions: {', '.join(foreign[:5])}{' …' if len(foreign) > 5 else ''}. A dataset "
            "compares cases with each other, so it is measured on one machine: measure into "
            "another --out, or pass --allow-other-machine to mix them knowingly (each case "
            "keeps its own host facts)."
        )
    return foreign


def noted_differences(records: Iterable[CaseRecord], host: dict[str, Any]) -> list[str]:
    """Differences that do not refuse (a kernel update between sessions), for the log."""
    seen: set[str] = set()
    for record in records:
        seen.update(machine_differences(record.host, host, facts=NOTED_FACTS))
    return sorted(seen)


def mixed_machines(records: Sequence[CaseRecord]) -> list[str]:
    """The cases whose facts differ from the first case's (for :func:`assemble`)."""
    if not records:
        return []
    reference = records[0].host
    return [
        f"{r.workload_id} ({'; '.join(d)})"
        for r in records[1:]
        if (d := machine_differences(reference, r.host))
    ]


def other_cpu_summary(mean_cores: float | None, *, threshold: float) -> dict[str, Any]:
    """What a record stores of the other processes' CPU: the mean over the case's samples,
    the threshold it was judged against, and whether the case was quiet."""
    quiet = mean_cores is not None and math.isfinite(mean_cores) and mean_cores <= threshold
    return {"mean_cores": mean_cores, "threshold_cores": threshold, "quiet": quiet}


#: Setup estimates: starting a server (data directory, start-up, account), and filling
#: sysbench tables (rows per second, the secondary index included).
SERVER_START_S = 15.0
PREPARE_ROWS_PER_S = 50_000.0


def estimate_seconds(cases: Sequence[Case], timing: Timing) -> float:
    """Expected seconds of one run measuring ``cases``: their measuring time, a start per
    server and a fill per table shape (each happens once per run)."""
    servers = {c.workload.server for c in cases}
    shapes = {
        (c.workload.server, c.workload.database, c.workload.tables, c.workload.table_size)
        for c in cases
    }
    setup = len(servers) * SERVER_START_S + sum(
        2.0 + tables * rows / PREPARE_ROWS_PER_S for _server, _db, tables, rows in shapes
    )
    return setup + sum(timing.case_seconds(c) for c in cases)


def within_budget(
    states: Sequence[CaseState],
    timing: Timing,
    *,
    max_minutes: float | None,
    accept_busy: bool = False,
    redo: bool = False,
) -> list[Case]:
    """The cases to measure in this run, in catalog order: every one that needs measuring,
    or with ``max_minutes`` the first ones whose estimated run fits (at least one)."""
    chosen: list[Case] = []
    for state in states:
        if not needs_measuring(state, accept_busy=accept_busy, redo=redo):
            continue
        if (
            max_minutes is not None
            and chosen
            and estimate_seconds([*chosen, state.case], timing) > max_minutes * 60
        ):
            break
        chosen.append(state.case)
    return chosen


def chunks(cases: Sequence[Case], timing: Timing, *, max_minutes: float) -> list[list[Case]]:
    """``cases`` cut into consecutive runs of at most ``max_minutes`` each (estimated; a
    case longer than that is a run of its own)."""
    out: list[list[Case]] = []
    for case in cases:
        if out and estimate_seconds([*out[-1], case], timing) <= max_minutes * 60:
            out[-1].append(case)
        else:
            out.append([case])
    return out
