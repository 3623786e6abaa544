"""pgbench runs of the lab: their summary is parsed, and a stopped run leaves nothing behind."""

from __future__ import annotations

import os

import pytest

from lab.pgbench import SELECT_ONLY, Pgbench, cluster_endpoint, parse_result, sleep_script
from lab.postgres import PostgresCluster

pytestmark = pytest.mark.pgbouncer


def test_a_finished_run_reports_its_transactions(
    pgbench: Pgbench, pg_cluster: PostgresCluster
) -> None:
    run = pgbench.start(cluster_endpoint(pg_cluster), SELECT_ONLY, clients=2, time_s=2)
    result = run.wait(timeout_s=30)
    assert result.transactions > 100 and result.failed == 0
    assert result.tps > 0 and result.latency_ms is not None


def test_a_stopped_run_takes_its_process_group_with_it(
    pgbench: Pgbench, pg_cluster: PostgresCluster
) -> None:
    run = pgbench.start(cluster_endpoint(pg_cluster), sleep_script(50), clients=4, time_s=300)
    assert run.running()
    run.stop()
    assert not run.running()
    with pytest.raises(ProcessLookupError):
        os.killpg(run.process.pid, 0)


def test_output_without_a_summary_is_refused() -> None:
    with pytest.raises(ValueError, match="no pgbench summary"):
        parse_result("pgbench: error: connection to server failed")
