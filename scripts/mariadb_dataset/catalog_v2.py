"""The catalog of ``mariadb-<cores>core-v2``: 71 cases over 29 workloads in 24 groups,
chosen to spread the optima (docs/datasets.md, "v2").

Kinds: ``cpu`` (the OLTP mixes, range scans, CPU-heavy statements), ``lock`` (hot rows,
secondary-index contention), ``wait`` (server-side sleeps of 1, 10 and 50 ms per request),
``stall`` (long statements among short ones: the secondary knobs' loads), ``commit``
(every commit fsyncs the redo log and the binlog), ``io`` (read IO through a small buffer
pool), ``mixed`` and ``phased``. Pinned variants (the server on one core) share the group
of the load they pin, so leave-one-workload-out never trains on the same load.
"""

from __future__ import annotations

from agents.profile import ThroughputMetric
from lab.sysbench import LUA_DIR
from scripts.mariadb_dataset.cases import Case, Catalog, Workload

CPU_WAIT_MIX = str(LUA_DIR / "cpu_wait_mix.lua")
LONG_SHORT_MIX = str(LUA_DIR / "long_short_mix.lua")
MIXED_OLTP = str(LUA_DIR / "mixed_oltp.lua")
PHASED = str(LUA_DIR / "phased.lua")

#: Read-IO tables: 4 × 100,000 rows (about 100 MB) behind an 8 MiB buffer pool.
READ_IO_ROWS = 100_000


def _oltp(name: str, *, metric: ThroughputMetric = "transactions") -> Workload:
    """A built-in sysbench OLTP script on the CPU-bound server, 4 tables × 10,000 rows."""
    return Workload(
        name,
        "cpu",
        "main",
        name,
        metric=metric,
        description=f"sysbench `{name}` on 4 tables × 10,000 rows",
    )


def _wait(name: str, sleep_ms: int) -> Workload:
    return Workload(
        name,
        "wait",
        "main",
        CPU_WAIT_MIX,
        metric="queries",
        extra_args=("--point-selects=4", "--cpu-rounds=2500", f"--sleep-ms={sleep_ms}"),
        description=(
            f"`cpu_wait_mix.lua`: 4 point selects, about 2 ms of `BENCHMARK(2500, MD5())` and "
            f"a {sleep_ms} ms `SELECT SLEEP` per event"
        ),
    )


def _pinned(base: Workload) -> Workload:
    return Workload(
        f"pinned_{base.name.removeprefix('oltp_')}",
        base.kind,
        base.server,
        base.test,
        database=base.database,
        tables=base.tables,
        table_size=base.table_size,
        metric=base.metric,
        pinned=True,
        group=base.group_name,
        extra_args=base.extra_args,
        description=f"{base.name} with every server thread pinned to CPU 0 (a one-core server)",
    )


_BASE: tuple[Workload, ...] = (
    _oltp("oltp_point_select", metric="queries"),
    _oltp("oltp_read_only"),
    _oltp("oltp_read_write"),
    _oltp("oltp_write_only"),
    _oltp("oltp_update_index", metric="queries"),
    _oltp("oltp_update_non_index", metric="queries"),
    Workload(
        "oltp_insert",
        "cpu",
        "main",
        "oltp_insert",
        database="ins",
        metric="queries",
        description="sysbench `oltp_insert` (its own database: the tables grow)",
    ),
    Workload(
        "range_scans",
        "cpu",
        "main",
        "oltp_read_only",
        extra_args=("--range-size=1000", "--point-selects=1"),
        description="`oltp_read_only` with ranges of 1,000 rows (sorting, DISTINCT, SUM)",
    ),
    Workload(
        "cpu_heavy",
        "cpu",
        "main",
        CPU_WAIT_MIX,
        metric="queries",
        extra_args=("--point-selects=1", "--cpu-rounds=20000", "--sleep-ms=0"),
        description="`cpu_wait_mix.lua`: 1 point select and about 16 ms of `BENCHMARK()` CPU",
    ),
    Workload(
        "hot_rows",
        "lock",
        "main",
        "oltp_read_write",
        database="hot",
        tables=1,
        table_size=10,
        description="`oltp_read_write` on one table of 10 rows (row locks, deadlocks retried)",
    ),
    Workload(
        "hot_row_updates",
        "lock",
        "main",
        "oltp_update_non_index",
        database="hot4",
        tables=1,
        table_size=4,
        metric="queries",
        description="`oltp_update_non_index` on one table of 4 rows (autocommit updates)",
    ),
    Workload(
        "index_contention",
        "lock",
        "main",
        "oltp_update_index",
        database="idx",
        tables=1,
        table_size=100,
        metric="queries",
        description="`oltp_update_index` on one table of 100 rows (secondary-index upkeep)",
    ),
    _wait("wait_1ms", 1),
    _wait("wait_10ms", 10),
    _wait("wait_50ms", 50),
    Workload(
        "stall_mix_cpu",
        "stall",
        "main",
        LONG_SHORT_MIX,
        metric="queries",
        extra_args=("--long-kind=cpu", "--long-every=20", "--long-cpu-rounds=100000"),
        description=(
            "`long_short_mix.lua`: 4 point selects per event; one event in 20 is instead a "
            "`BENCHMARK(100000, MD5())` of about 80 ms that never yields (groups stall)"
        ),
    ),
    Workload(
        "stall_mix_sleep",
        "stall",
        "main",
        LONG_SHORT_MIX,
        metric="queries",
        extra_args=("--long-kind=sleep", "--long-every=10", "--long-sleep-ms=200"),
        description=(
            "`long_short_mix.lua`: 4 point selects per event; one event in 10 is instead a "
            "200 ms `SELECT SLEEP` (a wait the pool is told about)"
        ),
    ),
    Workload(
        "mixed_oltp",
        "mixed",
        "main",
        MIXED_OLTP,
        metric="queries",
        description=(
            "`mixed_oltp.lua`: per event one of point select 70 %, range SUM 15 %, indexed "
            "UPDATE 10 %, 8 ms of `BENCHMARK()` 4 %, 50 ms `SLEEP` 1 %"
        ),
    ),
    Workload(
        "phased",
        "phased",
        "main",
        PHASED,
        metric="queries",
        extra_args=("--phase-s=10",),
        description=(
            "`phased.lua`: 10 s of CPU work (4 point selects + `BENCHMARK(2500)`) then 10 s of "
            "waits (1 point select + a 20 ms `SLEEP`), alternating"
        ),
    ),
    Workload(
        "fsync_write_only",
        "commit",
        "fsync",
        "oltp_write_only",
        description="`oltp_write_only` on the commit-bound server (each commit fsyncs twice)",
    ),
    Workload(
        "fsync_update_non_index",
        "commit",
        "fsync",
        "oltp_update_non_index",
        metric="queries",
        description="`oltp_update_non_index` on the commit-bound server (one fsync per update)",
    ),
    Workload(
        "io_bound_read_write",
        "io",
        "io",
        "oltp_read_write",
        table_size=25_000,
        description="`oltp_read_write` on 4 × 25,000 rows on the IO-bound server (as in v1)",
    ),
    Workload(
        "read_io_point_select",
        "io",
        "readio",
        "oltp_point_select",
        table_size=READ_IO_ROWS,
        extra_args=("--rand-type=uniform",),
        metric="queries",
        description=(
            "`oltp_point_select` on 4 × 100,000 rows, uniform ids, behind an 8 MiB buffer pool "
            "(nearly every select reads a page)"
        ),
    ),
    Workload(
        "read_io_read_only",
        "io",
        "readio",
        "oltp_read_only",
        table_size=READ_IO_ROWS,
        extra_args=("--rand-type=uniform",),
        description="`oltp_read_only` on 4 × 100,000 rows, uniform ids, an 8 MiB buffer pool",
    ),
)
_BY_NAME = {w.name: w for w in _BASE}
_PINNED = tuple(
    _pinned(_BY_NAME[name])
    for name in (
        "oltp_point_select",
        "oltp_read_only",
        "oltp_read_write",
        "wait_10ms",
        "stall_mix_cpu",
    )
)
WORKLOADS: dict[str, Workload] = {w.name: w for w in _BASE + _PINNED}

WIDE = (128,)

#: (workload, clients, secondary sweeps, extra sizes); grouped by server so that a chunk
#: starts few servers, the read-IO server (its tables take longest to fill) last.
PLAN: tuple[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = (
    # name, client counts, the counts with secondary sweeps, extra sizes
    ("oltp_point_select", (4, 16, 64, 256), (), ()),
    ("oltp_read_only", (4, 16, 64, 256), (), ()),
    ("oltp_read_write", (4, 16, 64, 256), (), ()),
    ("oltp_write_only", (16, 64), (), ()),
    ("oltp_update_index", (16, 64), (), ()),
    ("oltp_update_non_index", (16, 64), (), ()),
    ("oltp_insert", (16, 64), (), ()),
    ("range_scans", (16, 64), (), ()),
    ("cpu_heavy", (4, 16, 64), (), ()),
    ("hot_rows", (16, 64, 256), (64,), ()),
    ("hot_row_updates", (16, 64), (), ()),
    ("index_contention", (16, 64), (), ()),
    ("wait_1ms", (16, 64), (), ()),
    ("wait_10ms", (16, 64, 256), (), ()),
    ("wait_50ms", (16, 64, 256), (256,), WIDE),
    ("stall_mix_cpu", (16, 64, 256), (16, 64, 256), ()),
    ("stall_mix_sleep", (16, 64), (16, 64), WIDE),
    ("mixed_oltp", (16, 64), (64,), ()),
    ("phased", (16, 64), (), ()),
    ("pinned_point_select", (16, 64), (), ()),
    ("pinned_read_only", (16, 64), (), ()),
    ("pinned_read_write", (64,), (), ()),
    ("pinned_wait_10ms", (64,), (), ()),
    ("pinned_stall_mix_cpu", (64,), (64,), ()),
    ("fsync_write_only", (4, 16, 64, 256), (64,), WIDE),
    ("fsync_update_non_index", (16, 64, 256), (), WIDE),
    ("io_bound_read_write", (16, 64, 256), (64,), ()),
    ("read_io_point_select", (16, 64, 256), (), WIDE),
    ("read_io_read_only", (16, 64), (), ()),
)


def cases() -> list[Case]:
    return [
        Case(
            WORKLOADS[name],
            clients,
            secondary=clients in secondary,
            extra_sizes=extra if clients >= 64 else (),
        )
        for name, counts, secondary, extra in PLAN
        for clients in counts
    ]


def quick_cases() -> list[Case]:
    """A read-only case and a stalling one with its secondary sweeps (a smoke run)."""
    by_id = {c.workload_id: c for c in cases()}
    return [by_id["oltp_read_only-c16"], by_id["stall_mix_cpu-c16"]]


CATALOG = Catalog(
    version="v2",
    workloads=WORKLOADS,
    cases=cases,
    quick_cases=quick_cases,
    summary=(
        "OLTP mixes at 4–256 clients, CPU-heavy statements, hot-row and secondary-index "
        "contention, server-side waits of 1, 10 and 50 ms, long statements among short ones "
        "(with oversubscribe and stall-limit sweeps), fsync-bound commits, read IO through "
        "a small buffer pool, mixed and phased loads, and the server pinned to one core."
    ),
)
