"""The real ``pooltune-agent`` on the suite's PostgreSQL + PgBouncer under pgbench load:
several pools climbed in turn inside the pool budget, the original sizes restored on
SIGTERM and after kill -9 ("no own size" included), a DBA's SET adopted, and the operator
commands. Short windows (0.5 s samples, 2 s profiles) keep each scenario within ~40 s."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.pgbench import Pgbench, sleep_script
from lab.pgbouncer import DatabaseEntry, PgBouncer
from tests.agents.agent_process import AgentProcess, run_cli
from tests.agents.pgbouncer.agent_setup import (
    agent_env,
    ini_line,
    pool_sizes,
    saved_tuple,
    setting,
    state_file,
    write_config,
)
from tests.fixtures.pgbouncer import PgBouncerFactory, client_endpoint

pytestmark = [pytest.mark.slow, pytest.mark.pgbouncer]

#: What the test cluster leaves the pools: max_connections 60 − 3 superuser − reserve 5.
SERVER_LIMIT = 52


@pytest.fixture
def two_pools(pgbouncer_factory: PgBouncerFactory) -> PgBouncer:
    """bench follows default_pool_size (20); bench2 has its own pool_size=30."""
    return pgbouncer_factory(
        databases=(DatabaseEntry("bench"), DatabaseEntry("bench2", pool_size=30))
    )


class SizeWatcher:
    """Polls SHOW DATABASES every 0.1 s: every pair of sizes PgBouncer ran."""

    def __init__(self, bouncer: PgBouncer) -> None:
        self.bouncer = bouncer
        self.seen: list[dict[str, int]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.is_set():
            self.seen.append(pool_sizes(self.bouncer))
            time.sleep(0.1)

    def __enter__(self) -> SizeWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)


@pytest.fixture
def loaded(two_pools: PgBouncer, pgbench: Pgbench) -> Iterator[PgBouncer]:
    """bench: 40 clients of 20-ms transactions (wants ~40 connections); bench2: 16 of 5 ms."""
    pgbench.start(client_endpoint(two_pools, "bench"), sleep_script(20), clients=40, time_s=120)
    pgbench.start(client_endpoint(two_pools, "bench2"), sleep_script(5), clients=16, time_s=120)
    yield two_pools


def test_pools_climb_in_turn_inside_the_budget_and_sigterm_restores_them(
    loaded: PgBouncer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, loaded, pools=["bench", "bench2"], climb_max_s=8)
    with SizeWatcher(loaded) as watcher:
        agent = AgentProcess(config, agent_env(loaded), tmp_path / "agent.log")
        try:
            agent.wait_for(
                lambda: (agent.status() or {}).get("phase") == "watching",
                timeout=60,
                what="both pools climbed",
            )
            status = agent.status()
        finally:
            code = agent.terminate()
    log = agent.log()
    assert code == 0, log[-3000:]
    # In turn: bench first, with what bench2's 30 leaves it; then bench2.
    assert "pool bench: its turn, sizes up to 22 (larger ones break the rule" in log
    assert log.index("pool bench: turn over") < log.index("pool bench2: its turn")
    # Never over the budget, bench never above its ceiling.
    assert watcher.seen
    assert all(sum(sizes.values()) <= SERVER_LIMIT for sizes in watcher.seen), watcher.seen
    assert max(sizes["bench"] for sizes in watcher.seen) == 22  # the load wants more
    assert status is not None and set(status["pools"]) == {"bench", "bench2"}
    assert {pool["phase"] for pool in status["pools"].values()} == {"holding"}
    # SIGTERM restored both at once: bench follows the default again, bench2 has its 30.
    assert pool_sizes(loaded) == {"bench": 20, "bench2": 30}
    assert "pool_size" not in ini_line(loaded, "bench")
    assert ini_line(loaded, "bench2").endswith("pool_size=30")
    assert not state_file(config).exists()
    # One report per pool (spooled: no service), each inside its turn's bounds.
    reports = [
        json.loads(path.read_text())["payload"]
        for path in sorted((tmp_path / "state" / "spool").glob("*.json"))
    ]
    assert len(reports) == 2
    ceilings: dict[str, int] = {}
    for pool, size in re.findall(r"pool (\w+): its turn, sizes up to (\d+)", log):
        ceilings[pool] = max(ceilings.get(pool, 0), int(size))
    assert ceilings["bench"] == 22
    in_turn = sorted(reports, key=lambda report: report["started_at"])
    for pool, report in zip(("bench", "bench2"), in_turn, strict=True):
        sizes = [s["knobs"]["default_pool_size"] for s in report["trace"]]
        assert all(1 <= size <= ceilings[pool] for size in sizes), (pool, ceilings, sizes)


def test_kill9_mid_climb_then_the_next_start_restores_every_pool_first(
    loaded: PgBouncer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, loaded, pools=["bench", "bench2"], climb_max_s=30)
    crashed = AgentProcess(config, agent_env(loaded), tmp_path / "crashed.log")
    try:
        # The size in force, not only the ini line: the line is edited before RELOAD.
        crashed.wait_for(
            lambda: pool_sizes(loaded)["bench"] != 20, timeout=30, what="a change of bench"
        )
    finally:
        crashed.kill()
    assert saved_tuple(config) == {"pool_size@bench": None}
    assert "pool_size" in ini_line(loaded, "bench")

    config = write_config(tmp_path, loaded, pools=["bench", "bench2"], profile_window_s=6)
    restarted = AgentProcess(config, agent_env(loaded), tmp_path / "restarted.log")
    try:
        restarted.wait_for_log("climbing the pools", timeout=30)
        log = restarted.log()
        assert "pool_size" not in ini_line(loaded, "bench")
        assert pool_sizes(loaded) == {"bench": 20, "bench2": 30}
        assert log.index("restored the original pool sizes") < log.index("climbing the pools")
    finally:
        code = restarted.terminate()
    assert code == 0
    assert pool_sizes(loaded) == {"bench": 20, "bench2": 30}


def test_status_and_restore_commands_after_a_kill9(loaded: PgBouncer, tmp_path: Path) -> None:
    config = write_config(tmp_path, loaded, pools=["bench2"], climb_max_s=30)
    env = agent_env(loaded)
    crashed = AgentProcess(config, env, tmp_path / "crashed.log")
    try:
        crashed.wait_for(
            lambda: not ini_line(loaded, "bench2").endswith("pool_size=30"),
            timeout=30,
            what="a change of bench2",
        )
    finally:
        crashed.kill()
    status = run_cli(config, "status", env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["saved_original_tuple"] == {"pool_size@bench2": 30}
    restored = run_cli(config, "restore", env=env)
    assert restored.returncode == 0, restored.stderr
    assert "restored {'pool_size@bench2': 30}" in restored.stdout
    assert pool_sizes(loaded)["bench2"] == 30
    assert not state_file(config).exists()


def test_a_manual_set_during_a_climb_is_adopted_not_reverted(
    pgbouncer: PgBouncer, pgbench: Pgbench, tmp_path: Path
) -> None:
    # Both databases follow default_pool_size: the agent SETs it (2 × 24 ≤ 52).
    pgbench.start(client_endpoint(pgbouncer, "bench"), sleep_script(10), clients=24, time_s=90)
    config = write_config(tmp_path, pgbouncer, bounds=(1, 24), climb_max_s=60)
    agent = AgentProcess(config, agent_env(pgbouncer), tmp_path / "agent.log")
    try:
        agent.wait_for(
            lambda: (
                state_file(config).exists() and (agent.status() or {}).get("phase") == "climbing"
            ),
            timeout=30,
            what="a climb in progress",
        )
        dba_value = 11 if setting(pgbouncer, "default_pool_size") != 11 else 9
        pgbouncer.admin(f"SET default_pool_size = {dba_value}")
        agent.wait_for_log("knobs changed outside the agent", timeout=10)
        agent.wait_for_log(
            f"climbing again from the adopted tuple {{'default_pool_size': {dba_value}}}",
            timeout=5,
        )
        assert saved_tuple(config) == {"default_pool_size": dba_value}
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()[-3000:]
    # Stopping restores the adopted baseline: the DBA's value, not the 20 from before.
    assert setting(pgbouncer, "default_pool_size") == dba_value


def test_test_dry_run_and_sweep_commands(
    pgbouncer: PgBouncer, pgbench: Pgbench, tmp_path: Path
) -> None:
    pgbench.start(client_endpoint(pgbouncer, "bench"), sleep_script(5), clients=8, time_s=60)
    config = write_config(tmp_path, pgbouncer)
    env = agent_env(pgbouncer)
    tested = run_cli(config, "test", env=env)
    assert tested.returncode == 0, tested.stderr
    assert "server: pgbouncer PgBouncer 1." in tested.stdout
    assert "knobs in force: {'default_pool_size': 20}" in tested.stdout
    assert "note: default_pool_size above 26 breaks the rule" in tested.stdout
    assert "test passed" in tested.stdout

    dry = run_cli(config, "dry-run", "--window", "2", env=env)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["current_tuple"] == {"default_pool_size": 20}
    assert plan["profile"]["connections"] == 8 and plan["profile"]["tps"] > 50
    assert 1 <= plan["would_apply"]["default_pool_size"] <= 64
    assert setting(pgbouncer, "default_pool_size") == 20

    out = tmp_path / "sweep.csv"
    swept = run_cli(
        config,
        "sweep",
        *("--values", "2,8", "--dwell", "1.5", "--repeats", "1", "--sample-period", "0.5"),
        *("--discard", "1", "--yes", "--no-plot", "--out", str(out)),
        env=env,
    )
    assert swept.returncode == 0, swept.stderr
    assert out.exists() and "default_pool_size" in out.read_text()
    assert setting(pgbouncer, "default_pool_size") == 20
    assert not state_file(config).exists()


def test_sigterm_keeps_a_set_back_after_the_agents_own_reload(
    two_pools: PgBouncer, pgbench: Pgbench, tmp_path: Path
) -> None:
    """A DBA's runtime SET survives the RELOAD the agent sends for a pool size change."""
    two_pools.admin("SET default_pool_size = 15")
    pgbench.start(client_endpoint(two_pools, "bench2"), sleep_script(5), clients=8, time_s=60)
    config = write_config(tmp_path, two_pools, pools=["bench2"], climb_max_s=6)
    agent = AgentProcess(config, agent_env(two_pools), tmp_path / "agent.log")
    try:
        agent.wait_for(
            lambda: saved_tuple(config) is not None, timeout=30, what="bench2's first change"
        )
        assert setting(two_pools, "default_pool_size") == 15
    finally:
        code = agent.terminate(signal.SIGTERM)
    assert code == 0
    assert setting(two_pools, "default_pool_size") == 15
    assert pool_sizes(two_pools) == {"bench": 15, "bench2": 30}
