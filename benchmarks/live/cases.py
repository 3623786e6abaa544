"""The live benchmark's workloads: a sysbench test and the server options it needs."""

from __future__ import annotations

from agents.profile import ThroughputMetric

SIZE = "thread_pool_size"
#: Seconds between two throughput samples (the agent's own period, too).
SAMPLE_S = 2.0

#: name -> (sysbench test, extra server options).
WORKLOADS: dict[str, tuple[str, tuple[str, ...]]] = {
    "point_select": ("oltp_point_select", ()),
    "read_only": ("oltp_read_only", ()),
    "read_write": ("oltp_read_write", ()),
    "io_bound": (
        "oltp_read_write",
        (
            "--innodb-flush-log-at-trx-commit=1",
            "--log-bin=binlog",
            "--sync-binlog=1",
            "--innodb-buffer-pool-size=8M",
        ),
    ),
    # Autocommit updates of 4 rows: statements queue on row locks. On the v2 dataset's
    # CPU-bound server (commits not synced, as here) one group was best; with every commit
    # synced (the server's default: _synced) one group ran at 0.37 of two (docs/lab.md).
    "hot_row_updates": (
        "oltp_update_non_index",
        ("--innodb-buffer-pool-size=128M", "--innodb-flush-log-at-trx-commit=2"),
    ),
    "hot_row_updates_synced": ("oltp_update_non_index", ()),
}
#: The tables a workload runs on, (tables, rows), where not :data:`DEFAULT_TABLES`.
DEFAULT_TABLES = (4, 20_000)
TABLES = {"hot_row_updates": (1, 4), "hot_row_updates_synced": (1, 4)}

#: The real dataset's workload group of each live workload (held out of the warm model).
DATASET_GROUPS = {
    "point_select": "oltp_point_select",
    "read_only": "oltp_read_only",
    "read_write": "oltp_read_write",
    "io_bound": "io_bound_read_write",
    "hot_row_updates": "hot_row_updates",
    "hot_row_updates_synced": "hot_row_updates",
}


#: The workloads of autocommit statements only.
QUERY_METRIC = ("point_select", "hot_row_updates", "hot_row_updates_synced")


def metric_of(workload: str) -> ThroughputMetric:
    """Point selects and hot-row updates are autocommit statements (no transactions):
    measured in queries/s."""
    return "queries" if workload in QUERY_METRIC else "transactions"
