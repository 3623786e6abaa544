"""The PgBouncer target against a real PgBouncer and PostgreSQL the suite starts (lab/),
with real pgbench loads."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from agents.pgbouncer import profile as pgbouncer_profile
from agents.pgbouncer.view import pool_snapshot
from agents.targets.base import KnobApplyError, Snapshot, Target, TargetMisconfigured
from agents.targets.pgbouncer import PgBouncerTarget
from agents.wire import WorkloadProfile
from lab.pgbench import (
    SELECT_ONLY,
    TPCB_LIKE,
    Pgbench,
    Script,
    hot_row_script,
    sleep_script,
)
from lab.pgbouncer import DatabaseEntry, PgBouncer
from lab.postgres import PostgresCluster
from tests.fixtures.pgbouncer import PgBouncerFactory, client_endpoint, target_settings

pytestmark = pytest.mark.pgbouncer


@pytest.fixture
def target(pgbouncer: PgBouncer) -> Iterator[PgBouncerTarget]:
    agent_target = PgBouncerTarget(target_settings(pgbouncer))
    agent_target.connect()
    try:
        yield agent_target
    finally:
        agent_target.close()


def pool_servers(bouncer: PgBouncer, database: str) -> int:
    """Server connections PgBouncer holds for ``database`` (every state)."""
    states = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")
    total = 0
    for row in bouncer.admin("SHOW POOLS"):
        if row[0] == database:
            columns = dict(zip(POOL_COLUMNS, row, strict=False))
            total += sum(int(columns[state]) for state in states)
    return total


POOL_COLUMNS = (
    "database",
    "user",
    "cl_active",
    "cl_waiting",
    "cl_active_cancel_req",
    "cl_waiting_cancel_req",
    "sv_active",
    "sv_active_cancel",
    "sv_being_canceled",
    "sv_idle",
    "sv_used",
    "sv_tested",
    "sv_login",
)


# -- check ---------------------------------------------------------------------------------


def test_the_target_implements_the_target_protocol(target: PgBouncerTarget) -> None:
    assert isinstance(target, Target)


def test_check_passes_on_a_good_setup(target: PgBouncerTarget, pg_cluster: PostgresCluster) -> None:
    info = target.check()
    assert info.version.startswith("PgBouncer 1.")
    assert "PostgreSQL 15" in info.version
    assert info.thread_handling == "pool_mode=transaction"
    assert info.server_pid == pg_cluster.postmaster_pid()
    # No max_db_connections: PgBouncer alone does not keep PostgreSQL safe.
    assert any("max_db_connections does not keep bench, bench2" in note for note in info.notes)
    # Both follow the default: 2 × 26 = 52 is the most the server leaves them.
    assert any(
        note.startswith("default_pool_size above 26 breaks the rule (the pools may open bench 27")
        and "[bounds] default_pool_size = [1, 26]" in note
        for note in info.notes
    ), info.notes
    facts = target.host_facts()
    assert facts.engine == "pgbouncer" and facts.cpu_count >= 1
    assert facts.engine_version.startswith("PgBouncer")


def test_check_refuses_a_console_user_without_admin_rights(pgbouncer: PgBouncer) -> None:
    settings = target_settings(
        pgbouncer, user=pgbouncer.stats_user, password=pgbouncer.stats_password
    )
    stats_only = PgBouncerTarget(settings)
    try:
        assert stats_only.check(read_only=True).version.startswith("PgBouncer")
        with pytest.raises(
            TargetMisconfigured, match="may not change default_pool_size.*admin_users"
        ):
            stats_only.check()
    finally:
        stats_only.close()


def test_check_refuses_a_postgres_role_without_pg_monitor(
    pgbouncer: PgBouncer, pg_cluster: PostgresCluster
) -> None:
    pg_cluster.sql("DROP ROLE IF EXISTS nomonitor")
    pg_cluster.sql("CREATE ROLE nomonitor LOGIN PASSWORD 'nomonitor-pw'")
    try:
        settings = target_settings(
            pgbouncer, postgres_user="nomonitor", postgres_password="nomonitor-pw"
        )
        blind = PgBouncerTarget(settings)
        with pytest.raises(TargetMisconfigured, match="GRANT pg_monitor TO nomonitor"):
            blind.check(read_only=True)
        blind.close()
    finally:
        pg_cluster.sql("DROP ROLE nomonitor")


def test_check_refuses_a_port_that_is_not_pgbouncer(
    pgbouncer: PgBouncer, pg_cluster: PostgresCluster
) -> None:
    # PostgreSQL's own port, with an account it knows: there is no admin console there.
    settings = target_settings(
        pgbouncer, user=pg_cluster.role, password=pg_cluster.password
    ).model_copy(update={"port": pg_cluster.port})
    wrong = PgBouncerTarget(settings)
    with pytest.raises(TargetMisconfigured, match='database "pgbouncer" does not exist'):
        wrong.check(read_only=True)
    wrong.close()


def test_check_refuses_a_wrong_password_and_an_unknown_pool(pgbouncer: PgBouncer) -> None:
    wrong_password = PgBouncerTarget(target_settings(pgbouncer, password="not-the-password"))
    with pytest.raises(TargetMisconfigured, match="authentication failed"):
        wrong_password.check(read_only=True)
    unknown_pool = PgBouncerTarget(target_settings(pgbouncer, pools=["bench", "nosuchdb"]))
    with pytest.raises(TargetMisconfigured, match="nosuchdb not in PgBouncer's"):
        unknown_pool.check(read_only=True)
    unknown_pool.close()


# -- counters ------------------------------------------------------------------------------


@pytest.mark.slow
def test_pooled_transactions_match_pgbench_own_count(
    target: PgBouncerTarget, pgbouncer: PgBouncer, pgbench: Pgbench
) -> None:
    target.check(read_only=True)
    before = target.read_counters()
    run = pgbench.start(client_endpoint(pgbouncer), SELECT_ONLY, clients=8, time_s=6)
    time.sleep(3)
    during = target.read_counters()
    result = run.wait(timeout_s=30)
    after = target.read_counters()

    counted = pgbouncer_profile.transactions(before, after)
    assert result.transactions > 1000
    assert abs(counted - result.transactions) <= max(10, 0.01 * result.transactions)
    rates = pgbouncer_profile.interval(before, during)
    assert rates.tps > 0.2 * result.tps
    assert rates.connections == 8
    assert after.cpu_seconds is not None and before.cpu_seconds is not None
    assert after.cpu_seconds > before.cpu_seconds
    assert after.counters["pgbouncer_cpu_s"] > before.counters["pgbouncer_cpu_s"]
    # The host's busy CPU covers at least PostgreSQL's and PgBouncer's share of it.
    host_busy = after.counters["host_busy_s"] - before.counters["host_busy_s"]
    pgbouncer_cpu = after.counters["pgbouncer_cpu_s"] - before.counters["pgbouncer_cpu_s"]
    assert host_busy >= 0.9 * (after.cpu_seconds - before.cpu_seconds + pgbouncer_cpu)
    # PostgreSQL's own count agrees once its backends flushed their statistics: at most
    # every second while busy, after 10 s when idle (why throughput is PgBouncer's count).
    deadline = time.monotonic() + 15
    while True:
        latest = target.read_counters()
        committed = latest.counters["pg_xact_commit"] - before.counters["pg_xact_commit"]
        own = latest.counters["agent_pg_statements"] - before.counters["agent_pg_statements"]
        if committed - own >= counted or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert committed - own == pytest.approx(counted, rel=0.01)


# -- knobs ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_apply_reads_back_and_a_shrink_holds_under_load(
    target: PgBouncerTarget, pgbouncer: PgBouncer, pgbench: Pgbench
) -> None:
    target.check()
    pgbench.start(client_endpoint(pgbouncer), sleep_script(10), clients=16, time_s=30)
    time.sleep(2)
    assert pool_servers(pgbouncer, "bench") == 16
    assert target.apply({"default_pool_size": 4}) == {"default_pool_size": 4}
    time.sleep(1.5)
    assert pool_servers(pgbouncer, "bench") <= 4
    assert target.current_tuple(["default_pool_size"]) == {"default_pool_size": 4}
    assert target.apply({"default_pool_size": 12}) == {"default_pool_size": 12}
    time.sleep(1.5)
    assert 4 < pool_servers(pgbouncer, "bench") <= 12


def test_apply_refuses_values_outside_the_catalog(target: PgBouncerTarget) -> None:
    target.check()
    with pytest.raises(KnobApplyError, match="outside"):
        target.apply({"default_pool_size": 0})
    assert target.current_tuple(["default_pool_size"]) == {"default_pool_size": 20}


def test_a_manual_set_and_a_reload_are_seen_by_current_tuple(
    target: PgBouncerTarget, pgbouncer: PgBouncer
) -> None:
    target.check()
    pgbouncer.admin("SET default_pool_size = 13")
    assert target.current_tuple(["default_pool_size", "reserve_pool_size"]) == {
        "default_pool_size": 13,
        "reserve_pool_size": 0,
    }
    pgbouncer.admin("RELOAD")  # back to the file's value
    assert target.current_tuple(["default_pool_size"]) == {"default_pool_size": 20}


def test_the_budget_refuses_two_pools_over_max_connections(target: PgBouncerTarget) -> None:
    target.check()
    # 60 max_connections − 3 superuser − 5 reserve = 52; both pools follow the default.
    with pytest.raises(KnobApplyError) as refused:
        target.apply({"default_pool_size": 30})
    message = str(refused.value)
    assert "bench 30 + bench2 30 = 60 server connections" in message
    assert "max_connections 60 − superuser_reserved_connections 3 − reserve 5 = 52" in message
    assert "rule: Σ pool sizes ≤ max_db_connections" in message
    assert target.current_tuple(["default_pool_size"]) == {"default_pool_size": 20}
    assert target.apply({"default_pool_size": 26}) == {"default_pool_size": 26}
    # The reserve pool counts too.
    with pytest.raises(KnobApplyError, match="= 54 server connections"):
        target.apply({"reserve_pool_size": 1})


def test_the_budget_refuses_pools_above_max_db_connections(
    pgbouncer_factory: PgBouncerFactory,
) -> None:
    bouncer = pgbouncer_factory(max_db_connections=10)
    capped = PgBouncerTarget(target_settings(bouncer))
    try:
        capped.check()
        with pytest.raises(KnobApplyError, match="database bench: Σ pool sizes 12 = 12 > max_db_"):
            capped.apply({"default_pool_size": 12})
        assert capped.apply({"default_pool_size": 10}) == {"default_pool_size": 10}
    finally:
        capped.close()


def bench2_line(bouncer: PgBouncer) -> str:
    (line,) = [x for x in bouncer.config_file.read_text().splitlines() if x.startswith("bench2 ")]
    return line


def test_per_database_pool_sizes_go_through_the_ini(
    pgbouncer_factory: PgBouncerFactory,
) -> None:
    bouncer = pgbouncer_factory(databases=(DatabaseEntry("bench"), DatabaseEntry("bench2")))
    pools = PgBouncerTarget(target_settings(bouncer, pools=["bench", "bench2"]))
    try:
        pools.check()
        assert pools.own_pool_sizes() == {"bench": None, "bench2": None}
        pools.apply({"default_pool_size": 15})
        assert pools.apply_pool_sizes({"bench2": 5}) == {"bench2": 5}
        assert pools.pool_sizes() == {"bench": 15, "bench2": 5}
        # The agent's RELOAD kept the SET it had made.
        assert pools.current_tuple(["default_pool_size"]) == {"default_pool_size": 15}
        assert bench2_line(bouncer).endswith(" pool_size=5")
        with pytest.raises(KnobApplyError, match="bench 15 \\+ bench2 40 = 55"):
            pools.apply_pool_sizes({"bench2": 40})
        assert pools.pool_sizes() == {"bench": 15, "bench2": 5}
        assert pools.apply_pool_sizes({"bench2": None}) == {"bench2": 15}
        assert "pool_size" not in bench2_line(bouncer)
    finally:
        pools.close()


# -- profile -------------------------------------------------------------------------------


def snapshots_of(
    target: PgBouncerTarget,
    pgbench: Pgbench,
    bouncer: PgBouncer,
    script: Script,
    *,
    clients: int = 8,
    seconds: float = 6.0,
) -> list[Snapshot]:
    """The target's snapshots every 0.5 s over ``seconds`` of ``script`` under pgbench."""
    run = pgbench.start(client_endpoint(bouncer), script, clients=clients, time_s=int(seconds) + 5)
    try:
        time.sleep(1.5)
        snapshots: list[Snapshot] = [target.read_counters()]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.5)
            snapshots.append(target.read_counters())
        return snapshots
    finally:
        run.stop()


def profile_of(
    target: PgBouncerTarget, pgbench: Pgbench, bouncer: PgBouncer, script: Script
) -> WorkloadProfile:
    return pgbouncer_profile.build_profile(snapshots_of(target, pgbench, bouncer, script))


@pytest.mark.slow
def test_samples_carry_the_lock_signal_of_hot_rows_and_not_of_reads(
    target: PgBouncerTarget, pgbouncer: PgBouncer, pgbench: Pgbench
) -> None:
    """The climber's lock signal over each window: transactions updating two rows queue on
    their row locks; select-only waits on none."""
    target.check(read_only=True)

    def lock_signal(script: Script) -> float | None:
        snapshots = snapshots_of(target, pgbench, pgbouncer, script)
        return pgbouncer_profile.interval(snapshots[0], snapshots[-1]).lock_waits

    hot, reads = lock_signal(hot_row_script(2)), lock_signal(SELECT_ONLY)
    assert hot is not None and hot > 0.2
    # Select-only backends are rarely caught in a transaction at all (None: none was).
    assert (reads or 0.0) < 0.05


@pytest.mark.slow
def test_each_pool_reads_its_own_lock_signal(
    pgbouncer_factory: PgBouncerFactory, pgbench: Pgbench
) -> None:
    """Two pools on one PostgreSQL database: hot-row updates through one, 5-ms sleeps
    (in a transaction, waiting on no lock) through the other. Each pool's view reads its
    own backends' lock share, so the sleeping pool is not taken for one queueing on row
    locks."""
    bouncer = pgbouncer_factory()
    pools = PgBouncerTarget(target_settings(bouncer, pools=["bench", "bench2"]))
    runs = [
        pgbench.start(client_endpoint(bouncer, "bench"), hot_row_script(2), clients=8, time_s=12),
        pgbench.start(client_endpoint(bouncer, "bench2"), sleep_script(5), clients=8, time_s=12),
    ]
    try:
        pools.check(read_only=True)
        time.sleep(1.5)
        first = last = pools.read_counters()
        # pg_stat_activity is sampled at each read: one read is one instant, which a busy
        # host may catch with no backend waiting; twelve are the window's mean, as live.
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            time.sleep(0.5)
            last = pools.read_counters()
    finally:
        for run in runs:
            run.stop()
        pools.close()

    def signal(database: str | None) -> float | None:
        if database is None:
            return pgbouncer_profile.interval(first, last).lock_waits
        view = pool_snapshot(first, database), pool_snapshot(last, database)
        return pgbouncer_profile.interval(*view).lock_waits

    hot, sleeping, both = signal("bench"), signal("bench2"), signal(None)
    assert hot is not None and hot > 0.2
    assert sleeping is not None and sleeping < 0.05
    # Every tuned pool's backends together: the hot pool's waits, diluted by the other's.
    assert both is not None and sleeping < both < hot


@pytest.mark.slow
def test_profiles_tell_cpu_sleep_and_lock_bound_loads_apart(
    target: PgBouncerTarget, pgbouncer: PgBouncer, pgbench: Pgbench
) -> None:
    target.check(read_only=True)
    select_only = profile_of(target, pgbench, pgbouncer, SELECT_ONLY)
    sleeping = profile_of(target, pgbench, pgbouncer, sleep_script(20))
    hot_rows = profile_of(target, pgbench, pgbouncer, hot_row_script(2))
    tpcb = profile_of(target, pgbench, pgbouncer, TPCB_LIKE)

    for profile in (select_only, sleeping, hot_rows, tpcb):
        assert profile.connections == 8
        assert profile.tps > 0 and profile.latency_ms is not None
        assert profile.cpu_ms_per_request is not None
    # Reads: select-only and the sleep script only read; TPC-B-like is 1 SELECT in 5 DML.
    assert select_only.read_fraction == 1.0 and sleeping.read_fraction == 1.0
    assert tpcb.read_fraction == pytest.approx(0.2, abs=0.02)
    assert hot_rows.read_fraction == pytest.approx(0.5, abs=0.02)
    # The sleep script waits off-CPU about 20 ms per transaction; select-only hardly waits.
    assert sleeping.wait_ms_per_request is not None and sleeping.wait_ms_per_request > 15
    assert sleeping.extras["pg_share_timeout"] > 0.6
    assert select_only.extras.get("pg_share_timeout", 0.0) == 0.0
    assert select_only.latency_ms is not None and sleeping.latency_ms is not None
    assert select_only.latency_ms < sleeping.latency_ms / 5
    assert select_only.wait_ms_per_request is not None
    assert sleeping.wait_ms_per_request > 5 * select_only.wait_ms_per_request
    assert (
        sleeping.blocking_coefficient is not None and select_only.blocking_coefficient is not None
    )
    assert sleeping.blocking_coefficient > 3 * select_only.blocking_coefficient
    # Every client of the sleep script is inside a transaction nearly all the time.
    assert sleeping.active_connections > 7
    # Hot rows: transactions queue on row locks.
    assert hot_rows.extras["pg_share_lock"] > 0.2
    assert hot_rows.extras["lock_wait_ms_per_txn"] > 0
    assert select_only.extras.get("pg_share_lock", 0.0) < 0.05
    # Statements per transaction: 1 for select-only, 7 for TPC-B-like (BEGIN … END).
    assert select_only.rounds_per_request == pytest.approx(1.0, abs=0.01)
    assert tpcb.rounds_per_request == pytest.approx(7.0, abs=0.05)
