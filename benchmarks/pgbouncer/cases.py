"""The PgBouncer live benchmark's workloads: a pgbench script and a pool mode each. Their
names are the PgBouncer dataset's groups, so a warm model is trained without the case's
whole workload."""

from __future__ import annotations

from dataclasses import dataclass

from lab.pgbench import SELECT_ONLY, TPCB_LIKE, Script, hot_row_script, sleep_script

SIZE = "default_pool_size"
#: PgBouncer's default pool size: where the agent starts cold, and the sweep's reference.
DEFAULT_SIZE = 20
#: pgbench's scale (the dataset's): 400,000 accounts, 4 branches.
SCALE = 4
#: The agent's hard bounds: the test cluster's max_connections of 200 leaves the pool 192.
BOUNDS = (1, 128)


@dataclass(frozen=True)
class LiveWorkload:
    script: Script
    pool_mode: str = "transaction"


WORKLOADS: dict[str, LiveWorkload] = {
    "select_only": LiveWorkload(SELECT_ONLY),
    "tpcb_like": LiveWorkload(TPCB_LIKE),
    "sleep_5ms": LiveWorkload(sleep_script(5)),
    "sleep_20ms": LiveWorkload(sleep_script(20)),
    "hot_rows": LiveWorkload(hot_row_script(4)),
}
