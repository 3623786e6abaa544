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
}

#: The real dataset's workload group of each live workload (held out of the warm model).
DATASET_GROUPS = {
    "point_select": "oltp_point_select",
    "read_only": "oltp_read_only",
    "read_write": "oltp_read_write",
    "io_bound": "io_bound_read_write",
}


def metric_of(workload: str) -> ThroughputMetric:
    """Point selects are autocommit statements (no transactions): measured in queries/s."""
    return "queries" if workload == "point_select" else "transactions"
