"""The pieces of the live benchmarks (``python -m benchmarks.mariadb_live`` and
``benchmarks.pgbouncer_live``): the agent on a live server under load against an
interleaved sweep of the same server. See docs/lab.md."""
