"""The dataset catalogs: v2 spreads the optima as issue 16 asks; v1 is still the catalog
the committed ``mariadb-2core-v1`` was measured with."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest

from scripts.mariadb_dataset.cases import (
    FULL_TIMING,
    OVERSUBSCRIBE_GRID,
    REPO,
    SERVER_OPTIONS,
    STALL_GRID,
    Case,
    Timing,
    paired_reference,
    select_cases,
)
from scripts.mariadb_dataset.catalog_v3 import LONG_TIMING
from scripts.mariadb_dataset.catalog_v4 import SETTLED
from scripts.mariadb_dataset.catalogs import CATALOGS, catalog
from scripts.mariadb_dataset.records import read_records
from scripts.mariadb_dataset.resume import case_states, chunks, estimate_seconds

V2 = catalog("v2")
V1_DIR = REPO / "datasets" / "mariadb-2core-v1"
V4_DIR = REPO / "datasets" / "mariadb-2core-v4"


def _option(case: Case, name: str) -> str | None:
    for arg in case.workload.extra_args:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


def test_v2_has_at_least_60_cases_over_20_workloads_and_groups() -> None:
    cases = V2.cases()
    assert len(cases) >= 60
    assert len({c.workload.name for c in cases}) >= 20
    # Leave-one-workload-out holds out groups: pinned variants share their load's group.
    assert len({c.workload.group_name for c in cases}) >= 20
    ids = [c.workload_id for c in cases]
    assert len(ids) == len(set(ids))


def test_v2_oltp_mixes_run_from_4_to_256_clients() -> None:
    cases = V2.cases()
    oltp = {"oltp_read_only", "oltp_read_write", "oltp_write_only", "oltp_point_select"}
    oltp |= {"oltp_update_index"}
    assert oltp <= {c.workload.test for c in cases}
    for name in ("oltp_read_only", "oltp_read_write", "oltp_point_select"):
        clients = {c.clients for c in cases if c.workload.name == name}
        assert min(clients) == 4 and max(clients) == 256, name


def test_v2_has_every_required_kind_of_load() -> None:
    cases = V2.cases()
    kinds = {c.workload.kind for c in cases}
    assert {"cpu", "lock", "wait", "stall", "commit", "io", "mixed", "phased"} <= kinds
    # Hot rows and secondary-index contention: writes on tables of a few rows.
    lock = [c for c in cases if c.workload.kind == "lock"]
    assert any(c.workload.table_size <= 10 for c in lock)
    assert any(c.workload.test == "oltp_update_index" for c in lock)
    # Off-CPU waits of several lengths.
    sleeps = {_option(c, "sleep-ms") for c in cases if c.workload.kind == "wait"}
    assert len({int(s) for s in sleeps if s is not None and int(s) > 0}) >= 3
    # CPU-heavy statements: more BENCHMARK work per event than the wait loads.
    rounds = [int(r) for c in cases if (r := _option(c, "cpu-rounds")) is not None]
    assert max(rounds) >= 4 * min(rounds)


def test_v2_io_loads_run_on_servers_that_wait_for_the_disk() -> None:
    cases = V2.cases()
    commit_servers = {c.workload.server for c in cases if c.workload.kind == "commit"}
    for name in commit_servers:
        options = SERVER_OPTIONS[name]
        assert "--innodb-flush-log-at-trx-commit=1" in options and "--sync-binlog=1" in options
    io = [c for c in cases if c.workload.kind == "io"]
    assert io
    for case in io:
        pools = [o for o in SERVER_OPTIONS[case.workload.server] if "buffer-pool-size" in o]
        assert pools[-1].endswith("=8M")
        assert case.workload.tables * case.workload.table_size >= 100_000


def test_v2_pins_the_server_to_one_core_within_the_group_of_the_load() -> None:
    cases = V2.cases()
    pinned = [c for c in cases if c.workload.pinned]
    unpinned_groups = {c.workload.group_name for c in cases if not c.workload.pinned}
    assert len(pinned) >= 4
    assert {c.workload.group_name for c in pinned} <= unpinned_groups


def test_v2_sweeps_the_secondary_knobs_where_groups_stall() -> None:
    cases = V2.cases()
    secondary = [c for c in cases if c.secondary]
    assert len(secondary) >= 8
    # Every long-among-short case (CPU statements that stall groups, long sleeps) sweeps
    # oversubscribe and the stall limit, at several client counts.
    stall = [c for c in cases if c.workload.kind == "stall"]
    assert stall and all(c.secondary for c in stall)
    assert {_option(c, "long-kind") for c in stall} == {"cpu", "sleep"}
    assert FULL_TIMING.oversubscribe_grid == OVERSUBSCRIBE_GRID
    assert FULL_TIMING.stall_grid == STALL_GRID
    assert 30 in FULL_TIMING.stall_grid or 10 in FULL_TIMING.stall_grid


def test_every_sysbench_script_of_every_catalog_exists() -> None:
    builtin = Path("/usr/share/sysbench")
    for version, known in CATALOGS.items():
        for case in known.cases():
            test = Path(case.workload.test)
            if test.is_absolute():
                assert test.exists(), (version, test)
                assert test.is_relative_to(REPO / "scripts" / "sysbench")
            else:
                assert (builtin / f"{test}.lua").exists(), (version, test)


def test_v1_is_the_catalog_the_committed_v1_dataset_was_measured_with() -> None:
    manifest = json.loads((V1_DIR / "MANIFEST.json").read_text())
    workloads = pd.read_parquet(V1_DIR / "workloads.parquet")
    cases = catalog("v1").cases()
    assert [c.workload_id for c in cases] == manifest["description"]["cases"]
    assert FULL_TIMING.as_dict() == manifest["description"]["timing"]
    commands = dict(zip(workloads["workload_id"], workloads["sysbench_command"], strict=True))
    for case in cases:
        args = shlex.split(commands[case.workload_id])
        assert Path(args[1]).name.removesuffix(".lua") == Path(case.workload.test).stem
        assert f"--threads={case.clients}" in args
        assert f"--tables={case.workload.tables}" in args
        assert f"--table-size={case.workload.table_size}" in args
        assert f"--mysql-db={case.workload.database}" in args
        assert all(arg in args for arg in case.workload.extra_args)
    secondary = set(workloads.loc[workloads["best_thread_pool_stall_limit"].notna(), "workload_id"])
    assert {c.workload_id for c in cases if c.secondary} == secondary
    servers = manifest["description"]["servers"]
    for name, command_line in servers.items():
        assert command_line[-len(SERVER_OPTIONS[name]) :] == list(SERVER_OPTIONS[name])


def test_cases_are_selected_by_workload_case_id_or_wildcard() -> None:
    assert {c.workload_id for c in select_cases(V2, patterns=["hot_rows-c64"])} == {"hot_rows-c64"}
    stall = select_cases(V2, patterns=["stall_mix_*"], clients=[64])
    assert {c.workload_id for c in stall} == {"stall_mix_cpu-c64", "stall_mix_sleep-c64"}
    assert len(select_cases(V2, patterns=["wait_10ms"])) == 3
    with pytest.raises(ValueError, match="no case matches.*oltp_read_only"):
        select_cases(V2, patterns=["no_such_load"])
    quick = select_cases(V2, quick=True)
    assert quick and any(c.secondary for c in quick)


def test_chunks_keep_the_order_and_stay_within_the_budget() -> None:
    cases = V2.cases()
    plan = chunks(cases, FULL_TIMING, max_minutes=36)
    assert [c for chunk in plan for c in chunk] == cases
    assert all(estimate_seconds(chunk, FULL_TIMING) <= 36 * 60 for chunk in plan)
    # Each chunk is full: its successor's first case would not have fitted.
    for chunk, following in zip(plan, plan[1:], strict=False):
        assert estimate_seconds([*chunk, following[0]], FULL_TIMING) > 36 * 60
    total = estimate_seconds(cases, FULL_TIMING) / 60
    assert 150 < total < 260, total


def test_the_estimate_counts_setup_once_per_server_and_table_shape() -> None:
    cases = select_cases(V2, patterns=["read_io_*"])
    one_run = estimate_seconds(cases, FULL_TIMING)
    separately = sum(estimate_seconds([c], FULL_TIMING) for c in cases)
    measuring = sum(FULL_TIMING.case_seconds(c) for c in cases)
    assert measuring < one_run < separately


def test_v3_measures_v2s_cases_longer_and_v2_keeps_its_timing() -> None:
    v3 = catalog("v3")
    assert [c.workload_id for c in v3.cases()] == [c.workload_id for c in V2.cases()]
    # v2's stored cases were measured at the full timing: a change would re-measure them.
    assert V2.timing == FULL_TIMING
    long, full = v3.timing, FULL_TIMING

    def kept(timing: Timing) -> float:
        return (timing.dwell_s / timing.sample_period_s - timing.discard_samples) * timing.repeats

    assert kept(long) >= 3 * kept(full)
    assert (long.size_grid, long.stall_grid) == (full.size_grid, full.stall_grid)
    case = v3.cases()[0]
    assert estimate_seconds([case], long) > 1.8 * estimate_seconds([case], full)


def test_the_load_outlasts_a_sweep_slower_than_its_estimate() -> None:
    # v3's wait_10ms-c256 swept for 448 s against an estimate of 383 s: a load that ends
    # first fails the case.
    for case in catalog("v3").cases():
        assert LONG_TIMING.load_seconds(case) >= 448 / 383 * LONG_TIMING.case_seconds(case)


def test_v4_pairs_v2s_pool_size_sweeps_in_short_visits_one_workload_after_another() -> None:
    v4 = catalog("v4")
    cases = v4.cases()
    assert sorted(c.workload_id for c in cases) == sorted(c.workload_id for c in V2.cases())
    workloads = {c.workload.name for c in cases}
    # A chunk from the start spreads over every workload before any repeats one.
    assert len({c.workload.name for c in cases[: len(workloads)]}) == len(workloads)
    assert not any(c.secondary for c in cases)
    timing = v4.timing
    assert timing.paired and not FULL_TIMING.paired
    # The other catalogs' stored cases keep their definition (no ``paired`` key).
    assert "paired" not in FULL_TIMING.as_dict() and timing.as_dict()["paired"] is True
    case = cases[0]
    sizes = timing.sizes(case)
    assert paired_reference() in sizes  # the reference: the engine default of the host
    assert timing.size_visits(case) == timing.repeats * 2 * (len(sizes) - 1) + 1
    # 2-s visits, one 1-s sample kept of each, 20 of every size: about 12 minutes a case.
    assert timing.dwell_s / timing.sample_period_s - timing.discard_samples == 1
    assert timing.repeats == 20
    assert 10 * 60 < timing.case_seconds(case) < 15 * 60


def test_every_committed_v4_case_is_the_one_its_catalog_defines() -> None:
    """The settled cases were measured with their longer discard, the rest at the
    catalog's timing: a rerun of the builder measures none of them again."""
    v4 = catalog("v4")
    records = read_records(V4_DIR)
    host = next(iter(records.values())).host
    states = case_states(v4.cases(), records, timing=v4.timing, host=host)
    assert {s.case.workload_id: s.state for s in states if s.state != "done"} == {}
    by_id = {s.case.workload_id: s for s in states}
    for workload_id, seconds in SETTLED.items():
        own = v4.timing.settled(seconds)
        assert own.discard_samples > v4.timing.discard_samples
        stored = by_id[workload_id].record
        assert stored is not None and stored.definition["timing"] == own.as_dict()
