"""The replay of real measured curves in ``benchmarks.climb`` (family "real"): every measured
dataset is replayed, and a replayed size reads like the sweep measured it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from agents.climber import KnobSpace
from agents.knobs import Engine
from agents.sim.model import SIZE_KNOB
from benchmarks.climb.replay import DATASETS, RealCase, Replay, real_cases, replay_families
from benchmarks.climb.scenarios import PAIRED_FAMILY
from benchmarks.climb.worlds import ReplayWorld

REPO = Path(__file__).resolve().parents[3]


def test_every_measured_dataset_is_replayed_under_its_name() -> None:
    cases = real_cases()
    assert DATASETS == ("mariadb-2core-v1", "mariadb-2core-v2", "pgbouncer-2core-v1")
    for name, count in zip(DATASETS, (19, 71, 33), strict=True):
        mine = [key for key in cases if key.startswith(f"{name}:")]
        assert len(mine) == count, name
    assert all(case.workload_id == key for key, case in cases.items())
    families = replay_families()
    assert {families[key] for key in cases if key.startswith("pgbouncer-")} == {"pgbouncer"}
    assert {families[key] for key in cases if key.startswith("mariadb-2core-v4:")} == {"real-v4"}
    mariadb = {families[key] for key in cases if key.startswith("mariadb-")}
    assert mariadb - {"real-v4"} == {"real"}


def test_a_pgbouncer_case_replays_its_pool_size_within_the_servers_bound() -> None:
    """PgBouncer's sweep varied ``default_pool_size``: that knob reads the sweep, the MariaDB
    one does nothing, and the climber may not go past the largest size PostgreSQL took."""
    case = real_cases()["pgbouncer-2core-v1:sleep_20ms-tx-c32"]
    assert case.engine is Engine.PGBOUNCER and case.knob == "default_pool_size"
    low, high = case.sizes[0], case.sizes[-1]
    # Throughput grows with the pool on this curve: 20 ms sleeps, 32 clients.
    assert case.means[-1] > 10 * case.means[0]
    replay = Replay(case, seed=1)
    at_low = np.mean([replay.sample(i, {"default_pool_size": low})[0] for i in range(200)])
    at_high = np.mean([replay.sample(i, {"default_pool_size": high})[0] for i in range(200)])
    assert at_high > 10 * at_low
    # The MariaDB knob is not this engine's: the replay reads the size in force, here none
    # (the cores).
    ignored = np.mean([replay.sample(i, {SIZE_KNOB: high})[0] for i in range(200)])
    at_cores = np.mean([replay.sample(i, {"default_pool_size": case.cores})[0] for i in range(200)])
    assert abs(ignored / at_cores - 1.0) < 0.15
    world = ReplayWorld(case, seed=1)
    assert world.engine is Engine.PGBOUNCER
    assert world.bounds == {"default_pool_size": (1, high)}
    space = KnobSpace.from_engine(world.engine, case.cores, bounds=world.bounds)
    assert space.size.name == "default_pool_size" and space.size.high == high


def test_replayed_cases_carry_their_engines_lock_signal() -> None:
    """PgBouncer's is the share of backends waiting on a lock (its profile's
    ``pg_share_lock``), MariaDB's the row-lock waits per statement: hot rows show it on both
    engines, reads on neither."""
    cases = real_cases()
    assert cases["pgbouncer-2core-v1:hot_rows-tx-c128"].lock_waits > 0.5
    assert cases["pgbouncer-2core-v1:tpcb_like-tx-c32"].lock_waits > 0.2
    assert cases["pgbouncer-2core-v1:select_only-tx-c64"].lock_waits == 0.0
    assert cases["mariadb-2core-v2:hot_row_updates-c16"].lock_waits > 0.5
    assert cases["mariadb-2core-v2:oltp_read_only-c16"].lock_waits < 0.01


def test_a_replayed_size_reads_its_mean_whatever_else_was_asked() -> None:
    case = real_cases()["mariadb-2core-v1:io_bound_read_write-c64"]
    for point, size in enumerate(case.sizes):
        replay = Replay(case, seed=3)
        readings = [replay.sample(i, {SIZE_KNOB: size})[0] for i in range(400)]
        # The drift between visits is multiplied back in; over 400 samples it averages out.
        assert abs(np.mean(readings) / case.means[point] - 1.0) < 0.15, size
    first, second = Replay(case, seed=5), Replay(case, seed=5)
    low, high = case.sizes[0], case.sizes[-1]
    asked_low = [first.sample(i, {SIZE_KNOB: low})[0] for i in range(50)]
    _ = [second.sample(i, {SIZE_KNOB: high})[0] for i in range(50)]
    again_low = [second.sample(i, {SIZE_KNOB: low})[0] for i in range(50)]
    assert asked_low == again_low


def test_between_measured_sizes_the_truth_is_interpolated_in_log_size() -> None:
    case = real_cases()["mariadb-2core-v1:io_bound_read_write-c64"]
    lower, upper = case.sizes[2], case.sizes[3]
    middle = float(np.sqrt(lower * upper))
    expected = 0.5 * (case.means[2] + case.means[3])
    assert abs(case.truth(middle) - expected) < 1e-9 * expected
    assert case.truth(case.sizes[-1] * 4) == case.means[-1]


def test_a_size_between_two_measured_ones_reads_in_between_not_one_or_the_other() -> None:
    """56 lies between 32 (5,200/s) and 64 (8,100/s) on 5 ms sleeps × 64 clients: its
    samples read around its interpolated truth, as a server's would, not as a two-mode mix
    whose median is 64's (a median-reading climber would take 56 for a tie with 64)."""
    case = real_cases()["pgbouncer-2core-v1:sleep_5ms-tx-c64"]
    lower, upper = case.sizes.index(32), case.sizes.index(64)
    assert case.means[upper] > 1.4 * case.means[lower]
    replay = Replay(case, seed=3)
    readings = np.array(
        [replay.sample(i, {"default_pool_size": 56})[0] / replay.drift(i) for i in range(400)]
    )
    truth = case.truth(56)
    assert abs(np.median(readings) / truth - 1.0) < 0.03
    assert abs(np.mean(readings) / truth - 1.0) < 0.02
    # Nothing reads like 64's level: the upper mode of a mix is gone.
    assert np.percentile(readings, 90) < 0.5 * (truth + case.means[upper])


def _paired_cases() -> dict[str, RealCase]:
    return {k: c for k, c in real_cases().items() if c.family == PAIRED_FAMILY}


def test_v4s_finished_cases_replay_with_the_labels_the_dataset_gives_them(
    tmp_path: Path,
) -> None:
    """The cases of ``mariadb-2core-v4`` still being measured replay from their folders, in
    a family of their own, only those that count (busy ones are measured again), each
    labelled exactly as the dataset's assembly labels it."""
    folder = REPO / "datasets" / "mariadb-2core-v4" / "cases"
    done = {
        path.parent.name
        for path in folder.glob("*/case.json")
        if json.loads(path.read_text())["status"] == "done"
    }
    cases = _paired_cases()
    assert {key.split(":", 1)[1] for key in cases} == done and len(done) >= 39
    shutil.copytree(folder, tmp_path / "cases")
    subprocess.run(
        [sys.executable, "-m", "scripts.make_mariadb_dataset", "--dataset", "v4", "--assemble"]
        + ["--partial", "--allow-other-machine", "--out", str(tmp_path)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    workloads = pd.read_parquet(tmp_path / "workloads.parquet").set_index("workload_id")
    for key, case in cases.items():
        row = workloads.loc[key.split(":", 1)[1]]
        assert case.tied_size == row["best_thread_pool_size"], key
        assert case.differs == bool(row["differs_beyond_noise"]), key
        assert case.cores == row["cpu_count"] and case.clients == row["clients"], key


def test_a_v4_size_reads_its_paired_mean_and_drifts_at_the_sweeps_pace() -> None:
    """io_bound_read_write × 16 stalls for seconds (per-second CV near 1): over many samples
    a size still reads the mean the paired sweep gave it, and the drift moves from pass to
    pass at the pass's length (~36 s of 2-s samples), not v1's 64 s."""
    case = _paired_cases()["mariadb-2core-v4:io_bound_read_write-c16"]
    assert 14 <= case.visit_samples <= 24
    # The paired reading with its sunk references set aside: 6 at 1.9× the default (6.2×
    # read beside the references that stalls and large pools sank).
    assert case.means[case.sizes.index(6)] > 1.5 * case.means[case.sizes.index(2)]
    for size in (2, 6):
        point = case.sizes.index(size)
        readings = [
            Replay(case, seed=s).sample(i, {SIZE_KNOB: size})[0]
            for s in range(8)
            for i in range(100)
        ]
        assert abs(np.mean(readings) / case.means[point] - 1.0) < 0.2, size
    # Stalls are replayed: some 2-s samples of the best size read under half its mean.
    best = case.sizes.index(6)
    replay = Replay(case, seed=2)
    low = [replay.sample(i, {SIZE_KNOB: 6})[0] < 0.5 * case.means[best] for i in range(300)]
    assert 0.02 < np.mean(low) < 0.6


def test_a_stall_the_sweep_saw_reaches_the_climber_with_the_sample_it_sank() -> None:
    """Where the sweep kept the pool's stall flag per sample, a replayed 2-s sample is
    flagged when either second it draws was, at the measured size nearer the one asked
    (the lag sample: at either size); where it did not, the flag is unknown, as from a
    target that cannot tell."""
    level = (100.0,) * 4
    sunk = (10.0, 100.0, 100.0, 100.0)  # ascending: the stalled second reads lowest
    case = RealCase(
        workload_id="test:stalls",
        cores=2,
        clients=16,
        sizes=(2, 8),
        samples=(level, sunk),
        means=(100.0, 77.5),
        cpu_cores=(1.0, 1.0),
        latency_ms=(1.0, 1.0),
        drift=(1.0,),
        differs=True,
        tied_size=2,
        stalls=((False,) * 4, (True, False, False, False)),
    )
    replay = Replay(case, seed=1)
    for index in range(200):
        at_8 = replay.stalled(index, {SIZE_KNOB: 8})
        throughput = replay.sample(index, {SIZE_KNOB: 8})[0]
        assert at_8 == (throughput < 100.0)  # flagged exactly when a sunk second was drawn
        assert replay.stalled(index, {SIZE_KNOB: 7}) == at_8  # 7 is nearer 8
        assert replay.stalled(index, {SIZE_KNOB: 3}) is False
    flags = [replay.stalled(i, {SIZE_KNOB: 8}) for i in range(200)]
    assert 0.2 < np.mean(flags) < 0.7  # 1 − (3/4)² of the 2-s samples
    world, twin = ReplayWorld(case, seed=1), ReplayWorld(case, seed=1)
    seen = [world.observe(i, {SIZE_KNOB: 8}).stalled for i in range(50)]
    assert seen == [twin.observe(i, {SIZE_KNOB: 8}).stalled for i in range(50)]
    assert any(seen) and not all(seen)
    # The lag sample blends both sizes: a stall at the size left still shows.
    lag = [world.observe(i, {SIZE_KNOB: 2 if i % 2 else 8}).stalled for i in range(50, 90)]
    stayed = [twin.observe(i, {SIZE_KNOB: 8}).stalled for i in range(50, 90)]
    assert lag[1::2] == stayed[1::2] and any(stayed[1::2])
    unknown = RealCase(**{**_fields(case), "stalls": ()})
    assert ReplayWorld(unknown, seed=1).observe(0, {SIZE_KNOB: 8}).stalled is None


def _fields(case: RealCase) -> dict[str, object]:
    return {name: getattr(case, name) for name in RealCase.__dataclass_fields__}
