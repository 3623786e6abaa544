"""One pool as a target (PoolView), its part of the state file (PoolEntry) and the restore of
"no own size", on a real PgBouncer and PostgreSQL the suite starts (lab/)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.config import load_config
from agents.knobs import Engine
from agents.loop import AgentLoop
from agents.pgbouncer.rotation import PoolEntry, PoolRotation
from agents.pgbouncer.view import SIZE, PoolView, SharedReads
from agents.profilers import target_profiler
from agents.state import OriginalTupleFile, restore_original
from agents.targets.base import KnobApplyError, Target
from agents.targets.pgbouncer import PgBouncerTarget
from agents.wiring import assemble_daemon
from lab.pgbench import Pgbench, sleep_script
from lab.pgbouncer import DatabaseEntry, PgBouncer
from tests.agents.pgbouncer.agent_setup import agent_env, pool_sizes, write_config
from tests.fixtures.pgbouncer import PgBouncerFactory, client_endpoint, target_settings

pytestmark = pytest.mark.pgbouncer


@pytest.fixture
def bouncer(pgbouncer_factory: PgBouncerFactory) -> PgBouncer:
    """bench follows default_pool_size (20); bench2 has pool_size=12 of its own."""
    return pgbouncer_factory(
        databases=(DatabaseEntry("bench"), DatabaseEntry("bench2", pool_size=12))
    )


@pytest.fixture
def shared(bouncer: PgBouncer) -> Iterator[PgBouncerTarget]:
    target = PgBouncerTarget(target_settings(bouncer, pools=["bench", "bench2"]))
    target.connect()
    target.check()
    try:
        yield target
    finally:
        target.close()


def line_of(bouncer: PgBouncer, database: str) -> str:
    (line,) = [
        text
        for text in bouncer.config_file.read_text().splitlines()
        if text.startswith(f"{database} ")
    ]
    return line


def test_a_pool_view_is_a_target_of_its_own_pool_size(shared: PgBouncerTarget) -> None:
    bench = PoolView(shared, "bench", SharedReads(shared))
    assert isinstance(bench, Target) and bench.engine is Engine.PGBOUNCER
    assert bench.current_tuple([SIZE]) == {SIZE: 20}
    assert bench.own_size() is None
    assert bench.apply({SIZE: 7}) == {SIZE: 7}
    assert shared.pool_sizes() == {"bench": 7, "bench2": 12}
    assert bench.own_size() == 7
    # Only the pool size is tuned per pool.
    with pytest.raises(KnobApplyError, match="only default_pool_size"):
        bench.apply({"reserve_pool_size": 2})
    # The budget still rules: 52 − bench2's 12 leaves bench 40.
    with pytest.raises(KnobApplyError, match="bench 41 \\+ bench2 12 = 53"):
        bench.apply({SIZE: 41})
    assert bench.current_tuple([SIZE]) == {SIZE: 7}


def test_no_own_size_is_saved_as_null_and_restored_by_removing_the_option(
    shared: PgBouncerTarget, bouncer: PgBouncer, tmp_path: Path
) -> None:
    state_path = tmp_path / "original-tuple.json"
    reads = SharedReads(shared)
    bench, bench2 = PoolView(shared, "bench", reads), PoolView(shared, "bench2", reads)
    bench_entry, bench2_entry = PoolEntry(state_path, bench), PoolEntry(state_path, bench2)
    # What the loop does before its first change: save, then apply.
    bench_entry.save(Engine.PGBOUNCER, bench.current_tuple([SIZE]))
    bench.apply({SIZE: 5})
    bench2_entry.save(Engine.PGBOUNCER, bench2.current_tuple([SIZE]))
    bench2.apply({SIZE: 30})
    document = json.loads(state_path.read_text())
    assert document["original_tuple"] == {"pool_size@bench": None, "pool_size@bench2": 12}
    # Each loop sees its own pool's part, under its knob.
    saved = bench_entry.load()
    assert saved is not None and saved.values == {SIZE: None}
    assert line_of(bouncer, "bench").endswith("pool_size=5")

    restored = restore_original(shared, OriginalTupleFile(state_path))
    assert restored == {"pool_size@bench": None, "pool_size@bench2": 12}
    assert "pool_size" not in line_of(bouncer, "bench")
    assert line_of(bouncer, "bench2").endswith("pool_size=12")
    assert shared.pool_sizes() == {"bench": 20, "bench2": 12}
    assert not state_path.exists()
    # A later default change reaches bench again: it follows the default, as before.
    shared.apply({"default_pool_size": 15})
    assert shared.pool_sizes() == {"bench": 15, "bench2": 12}


def test_a_dba_change_is_adopted_in_its_own_form(
    shared: PgBouncerTarget, bouncer: PgBouncer, tmp_path: Path
) -> None:
    state_path = tmp_path / "original-tuple.json"
    bench2 = PoolView(shared, "bench2", SharedReads(shared))
    entry = PoolEntry(state_path, bench2)
    entry.save(Engine.PGBOUNCER, bench2.current_tuple([SIZE]))
    bench2.apply({SIZE: 4})
    # The DBA makes bench2 follow the default again (ini edit + RELOAD).
    bouncer.reconfigure(databases=(DatabaseEntry("bench"), DatabaseEntry("bench2")))
    assert bench2.current_tuple([SIZE]) == {SIZE: 20}
    entry.adopt({SIZE: 20})
    assert json.loads(state_path.read_text())["original_tuple"] == {"pool_size@bench2": None}
    entry.clear()
    assert not state_path.exists()


@pytest.mark.slow
def test_a_pool_views_samples_count_that_pool_only(
    shared: PgBouncerTarget, bouncer: PgBouncer, pgbench: Pgbench
) -> None:
    reads = SharedReads(shared)
    bench, bench2 = PoolView(shared, "bench", reads), PoolView(shared, "bench2", reads)
    profiler = target_profiler(bench)
    pgbench.start(client_endpoint(bouncer, "bench"), sleep_script(5), clients=8, time_s=8)
    time.sleep(2)
    first = (bench.read_counters(), bench2.read_counters())
    time.sleep(3)
    reads.new_round()
    last = (bench.read_counters(), bench2.read_counters())
    busy = profiler.interval(first[0], last[0])
    idle = profiler.interval(first[1], last[1])
    assert busy.tps > 100 and busy.connections == 8
    assert busy.latency_ms is not None and busy.latency_ms >= 5.0
    assert idle.tps == 0.0 and idle.connections == 0


def test_the_daemon_rotates_the_listed_pools_and_a_reload_reaches_each(
    bouncer: PgBouncer, tmp_path: Path
) -> None:
    env = agent_env(bouncer)
    (tmp_path / "one").mkdir()
    plain = assemble_daemon(load_config(write_config(tmp_path / "one", bouncer), env=env))
    assert isinstance(plain, AgentLoop) and isinstance(plain.target, PgBouncerTarget)

    path = write_config(tmp_path, bouncer, pools=["bench", "bench2"], bounds=(2, 64))
    rotation = assemble_daemon(load_config(path, env=env), config_path=path)
    assert isinstance(rotation, PoolRotation)
    assert set(rotation.loops) == {"bench", "bench2"}
    assert all(isinstance(loop.target, PoolView) for loop in rotation.loops.values())
    rotation.start()
    try:
        rotation.iterate()
        # bench's turn first, bounded by what bench2's 12 leaves it: 52 − 12 = 40.
        assert rotation.active == "bench"
        assert rotation.loops["bench"].config.knob_bounds(SIZE) == (2, 40)
        assert rotation.status()["phase"] == "profiling bench"
        path.write_text(path.read_text().replace("[2, 64]", "[3, 30]"))
        rotation._reload()
        assert rotation.loops["bench"].config.knob_bounds(SIZE) == (3, 30)
        assert rotation.loops["bench2"].config.knob_bounds(SIZE) == (3, 30)
    finally:
        rotation.shutdown()
    assert rotation.status()["phase"] == "stopped"
    assert pool_sizes(bouncer) == {"bench": 20, "bench2": 12}
