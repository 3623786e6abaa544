"""The live benchmark's workloads: a sysbench test and the server options it needs."""

from __future__ import annotations

from dataclasses import dataclass

from agents.profile import ThroughputMetric
from lab.sysbench import LUA_DIR

SIZE = "thread_pool_size"
#: Seconds between two throughput samples (the agent's own period, too).
SAMPLE_S = 2.0


@dataclass(frozen=True)
class LiveWorkload:
    """A sysbench test with the server options, tables and throughput metric it runs with,
    and the real dataset's workload group it belongs to (held out of the warm model)."""

    test: str
    group: str
    server_args: tuple[str, ...] = ()
    #: (tables, rows per table).
    tables: tuple[int, int] = (4, 20_000)
    #: Autocommit statements (no transactions) are measured in queries/s.
    metric: ThroughputMetric = "transactions"
    #: The sysbench script's own options.
    extra_args: tuple[str, ...] = ()


#: Every commit fsyncs the redo log and the binlog (the server's default durability).
SYNCED_COMMITS = ("--innodb-flush-log-at-trx-commit=1", "--log-bin=binlog", "--sync-binlog=1")

WORKLOADS: dict[str, LiveWorkload] = {
    "point_select": LiveWorkload("oltp_point_select", "oltp_point_select", metric="queries"),
    "read_only": LiveWorkload("oltp_read_only", "oltp_read_only"),
    "read_write": LiveWorkload("oltp_read_write", "oltp_read_write"),
    "io_bound": LiveWorkload(
        "oltp_read_write",
        "io_bound_read_write",
        (*SYNCED_COMMITS, "--innodb-buffer-pool-size=8M"),
    ),
    # Autocommit updates of 4 rows: statements queue on row locks. On the v2 dataset's
    # CPU-bound server (commits not synced, as here) one group was best; with every commit
    # synced (the server's default: _synced) one group ran at 0.37 of two (docs/lab.md).
    "hot_row_updates": LiveWorkload(
        "oltp_update_non_index",
        "hot_row_updates",
        ("--innodb-buffer-pool-size=128M", "--innodb-flush-log-at-trx-commit=2"),
        tables=(1, 4),
        metric="queries",
    ),
    "hot_row_updates_synced": LiveWorkload(
        "oltp_update_non_index", "hot_row_updates", tables=(1, 4), metric="queries"
    ),
    # Autocommit updates spread over 4 × 10,000 rows, each commit fsyncing the redo log and
    # the binlog (the v2 dataset's commit-bound server): more threads share each group
    # commit, so the optimum lies far above the cores.
    "fsync_updates": LiveWorkload(
        "oltp_update_non_index",
        "fsync_update_non_index",
        (*SYNCED_COMMITS, "--innodb-buffer-pool-size=128M"),
        tables=(4, 10_000),
        metric="queries",
    ),
}

# The v2 dataset's `stall_mix_cpu` (the same script and options, checked by
# tests/test_live_cases.py) on its CPU-bound server: one event in 20 an 80 ms statement
# that never yields. At 256 clients a large pool taking over the queue runs fast for a
# second or two (docs/datasets.md, "A longer discard where the queue carries over"): does
# the agent follow that burst up?
WORKLOADS["stall_mix"] = LiveWorkload(
    str(LUA_DIR / "long_short_mix.lua"),
    "stall_mix_cpu",
    ("--innodb-buffer-pool-size=128M", "--innodb-flush-log-at-trx-commit=2"),
    tables=(4, 10_000),
    metric="queries",
    extra_args=("--long-kind=cpu", "--long-every=20", "--long-cpu-rounds=100000"),
)

#: The real dataset's workload group of each live workload.
DATASET_GROUPS = {name: workload.group for name, workload in WORKLOADS.items()}
