"""The catalog of ``mariadb-<cores>core-v1``: 19 cases over 8 workloads (kept so that v1
can be measured again exactly as it was)."""

from __future__ import annotations

from lab.sysbench import LUA_DIR
from scripts.mariadb_dataset.cases import Case, Catalog, Workload

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "oltp_point_select",
            "cpu",
            "main",
            "oltp_point_select",
            metric="queries",
            description="sysbench oltp_point_select on 4 tables × 10,000 rows",
        ),
        Workload(
            "oltp_read_only",
            "cpu",
            "main",
            "oltp_read_only",
            description="sysbench oltp_read_only on 4 tables × 10,000 rows",
        ),
        Workload(
            "oltp_read_write",
            "cpu",
            "main",
            "oltp_read_write",
            description="sysbench oltp_read_write on 4 tables × 10,000 rows",
        ),
        Workload(
            "oltp_write_only",
            "cpu",
            "main",
            "oltp_write_only",
            description="sysbench oltp_write_only on 4 tables × 10,000 rows",
        ),
        Workload(
            "io_bound_read_write",
            "io",
            "io",
            "oltp_read_write",
            table_size=25_000,
            description="oltp_read_write on 4 × 25,000 rows on the IO-bound server",
        ),
        Workload(
            "hot_rows",
            "lock",
            "main",
            "oltp_read_write",
            database="hot",
            tables=1,
            table_size=10,
            description="oltp_read_write on one table of 10 rows (row-lock contention)",
        ),
        Workload(
            "cpu_wait_mix",
            "mixed",
            "main",
            str(LUA_DIR / "cpu_wait_mix.lua"),
            metric="queries",
            extra_args=("--point-selects=4", "--cpu-rounds=2500", "--sleep-ms=10"),
            description=(
                "4 point selects, about 2 ms of `BENCHMARK(2500, MD5())` CPU work and a 10 ms "
                "`SELECT SLEEP` per event"
            ),
        ),
        # The same sysbench workload as oltp_read_only (so the same group), on one core.
        Workload(
            "pinned_read_only",
            "cpu",
            "main",
            "oltp_read_only",
            pinned=True,
            group="oltp_read_only",
            description="oltp_read_only with every server thread pinned to CPU 0",
        ),
    )
}

PLAN = (
    ("oltp_point_select", (4, 16, 64)),
    ("oltp_read_only", (4, 16, 64, 256)),
    ("oltp_read_write", (16, 64)),
    ("oltp_write_only", (16, 64)),
    ("io_bound_read_write", (16, 64)),
    ("hot_rows", (16, 64)),
    ("cpu_wait_mix", (16, 64)),
    ("pinned_read_only", (16, 64)),
)
SECONDARY = {("cpu_wait_mix", 64), ("io_bound_read_write", 64)}


def cases() -> list[Case]:
    return [
        Case(WORKLOADS[name], clients, secondary=(name, clients) in SECONDARY)
        for name, counts in PLAN
        for clients in counts
    ]


def quick_cases() -> list[Case]:
    """One read-only case at 16 clients with the secondary sweeps (a smoke run)."""
    return [Case(WORKLOADS["oltp_read_only"], 16, secondary=True)]


CATALOG = Catalog(
    version="v1",
    workloads=WORKLOADS,
    cases=cases,
    quick_cases=quick_cases,
    summary="19 cases over 8 workloads: the sysbench OLTP mixes, an IO-bound, a hot-row, a "
    "CPU-and-wait mix and a pinned load.",
)
