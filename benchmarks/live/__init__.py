"""The pieces of ``python -m benchmarks.mariadb_live``: the agent on a live MariaDB under
sysbench against an interleaved sweep of the same server. See docs/lab.md."""
