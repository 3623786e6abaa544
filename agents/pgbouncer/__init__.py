"""PgBouncer in front of PostgreSQL: the admin console and PostgreSQL connections, the
collectors, the pool budget, the ini edits for per-database pool sizes and the workload
profile. The adapter is :mod:`agents.targets.pgbouncer`; the facts are in docs/pgbouncer.md."""
