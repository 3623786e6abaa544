"""Calibration: the real cases as targets, the fit, the coverage check, and the corpora's
reproducibility (sim-v1 regenerates bit for bit; sim-v2 rows regenerate from their manifest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from agents.knobs import Engine
from agents.sim import SimWorkload, agent_profile
from agents.wire import HostFacts
from trainer import simcorpus
from trainer.calibration import simcorpus_v2
from trainer.calibration.build import make_sim_v2, recorded_calibration
from trainer.calibration.coverage import CorpusIndex, case_coverage, shape_error
from trainer.calibration.fit import CaseFit, fit_case, fit_cases
from trainer.calibration.noise import curve_noise
from trainer.calibration.realcases import RealCase, real_cases
from trainer.cli import app
from trainer.regret import Curve
from trainer.sources import datasets

SIZES = np.array([1, 2, 3, 4, 6, 8, 16, 32, 64], dtype=np.float64)
SIM_V2_MANIFEST = datasets.datasets_dir() / "sim-v2" / "MANIFEST.json"

#: A CPU-bound load with contention (a peak at 3–4 on 2 cores) and an IO-bound one (a rise
#: to a plateau), both with a co-located load generator, as on the test host.
CONTENDED = SimWorkload(
    cores=2,
    connections=64,
    cpu_ms=0.1,
    io_ms=0.05,
    think_ms=0.5,
    signalled_fraction=0.3,
    serial_fraction=0.02,
    coherency=0.01,
    client_cpu_ms=0.04,
    group_scheduling=True,
    untimed_cpu_fraction=0.4,
)
IO_BOUND = SimWorkload(
    cores=2,
    connections=32,
    cpu_ms=0.2,
    io_ms=2.0,
    think_ms=1.0,
    signalled_fraction=0.8,
    serial_fraction=0.01,
    coherency=0.001,
    client_cpu_ms=0.05,
    group_scheduling=True,
    untimed_cpu_fraction=0.3,
)


def measured(truth: SimWorkload, seed: int, cv: float = 0.08) -> RealCase:
    """A sweep of ``truth`` as the dataset builder would record it: 3 visits × 3 samples per
    size with lognormal noise, the latency and CPU per size, the profile at size 2."""
    rng = np.random.default_rng(seed)
    point = truth.operating_point(SIZES)
    samples = [tp * rng.lognormal(0.0, cv, 9) for tp in point.throughput]
    host = HostFacts(
        hostname="truth",
        engine=Engine.MARIADB,
        engine_version="sim",
        cpu_count=truth.cores,
        memory_bytes=1 << 30,
    )
    return RealCase(
        workload_id="truth",
        group="test:truth",
        kind="cpu",
        host=host,
        profile=agent_profile(truth, rng, size=2.0, measurement_cv=0.05),
        metric="queries",
        sizes=SIZES,
        samples=tuple(samples),
        visits=tuple(s.reshape(3, 3).mean(axis=1) for s in samples),
        throughput=np.array([s.mean() for s in samples]),
        latency_ms=point.timed_ms * rng.lognormal(0.0, 0.05, SIZES.size),
        server_cpu_cores=point.throughput * point.server_cpu_ms / 1000.0,
        load_cpu_cores=point.throughput * truth.client_cpu_ms / 1000.0,
        host_cores=truth.cores,
    )


@pytest.fixture(scope="module")
def contended_fit() -> tuple[RealCase, CaseFit]:
    case = measured(CONTENDED, seed=7)
    return case, fit_case(case)


def test_real_cases_keep_every_sample_and_the_datasets_noise() -> None:
    dataset = datasets.load_dataset("mariadb-2core-v1")
    cases = real_cases(dataset)
    assert len(cases) == len(dataset.workloads)
    by_id = dataset.workloads.set_index("workload_id")
    for case in cases:
        assert len(case.sizes) == len(case.samples) == len(case.visits) == 9
        assert all(len(v) == 3 for v in case.visits)
        assert np.allclose([s.mean() for s in case.samples], case.throughput)
        # The curve's CV is the dataset's own noise figure (the samples are stored rounded).
        noise = curve_noise(case.samples, case.visits)
        assert noise.cv == pytest.approx(by_id.loc[case.workload_id, "noise_cv"], rel=1e-4)
        if case.metric == "transactions":
            assert case.statements_per_unit == pytest.approx(case.profile.qps / case.profile.tps)
        # A server pinned to 1 of 2 cores shares none: the load fits on the other core.
        assert (case.client_cpu_ms > 0) == (case.cores == case.host_cores)
    io = next(c for c in cases if c.workload_id == "io_bound_read_write-c64")
    assert curve_noise(io.samples, io.visits).stall_rate > 0.05  # it drops to 0–40%


def test_fit_recovers_a_contended_curve_and_its_parameters(
    contended_fit: tuple[RealCase, CaseFit],
) -> None:
    case, fit = contended_fit
    truth = CONTENDED.steady_state(SIZES)[0]
    assert fit.within_noise
    # Closer to the noise-free truth than the noisy measurement is to it.
    fitted_error = np.median(np.abs(np.log(fit.simulated / truth)))
    assert fitted_error <= 0.03
    assert fitted_error < np.median(np.abs(np.log(case.throughput / truth)))
    assert int(SIZES[np.argmax(fit.simulated)]) == int(SIZES[np.argmax(truth)])
    assert fit.parameters["cpu_ms"] == pytest.approx(CONTENDED.cpu_ms, rel=0.2)
    assert fit.parameters["coherency"] == pytest.approx(CONTENDED.coherency, rel=0.4)
    # Measured (the load's CPU over the measured throughput), not fitted.
    assert fit.parameters["client_cpu_ms"] == pytest.approx(CONTENDED.client_cpu_ms, rel=0.05)
    assert "client_cpu_ms" not in fit.free


def test_fit_recovers_an_io_bound_curve_and_its_waits() -> None:
    case = measured(IO_BOUND, seed=11)
    fit = fit_case(case)
    truth = IO_BOUND.steady_state(SIZES)[0]
    assert fit.within_noise
    assert np.median(np.abs(np.log(fit.simulated / truth))) <= 0.03
    assert fit.parameters["io_ms"] == pytest.approx(IO_BOUND.io_ms, rel=0.3)
    assert fit.parameters["signalled_fraction"] == pytest.approx(0.8, abs=0.15)
    assert fit.parameters["cpu_ms"] == pytest.approx(IO_BOUND.cpu_ms, rel=0.2)


def test_fit_is_deterministic_in_worker_processes(
    contended_fit: tuple[RealCase, CaseFit],
) -> None:
    case, fit = contended_fit
    again = fit_cases([case, case], processes=2)
    assert [f.parameters for f in again] == [fit.parameters, fit.parameters]


def test_shape_error_ignores_scale_and_sees_shape() -> None:
    measured_curve = np.array([100.0, 200.0, 300.0, 300.0])
    sizes = np.array([1.0, 2.0, 4.0, 8.0])
    scaled = Curve(sizes, 16 * measured_curve)
    assert shape_error(scaled, sizes, measured_curve) == pytest.approx(0.0, abs=1e-12)
    falling = Curve(sizes, np.array([100.0, 250.0, 200.0, 100.0]))
    assert shape_error(falling, sizes, measured_curve) > 0.1


def _record(workload_id: str) -> dict[str, Any]:
    return next(r for r in recorded_calibration(SIM_V2_MANIFEST) if r["workload_id"] == workload_id)


def test_coverage_finds_the_draws_around_a_case_and_misses_without_them() -> None:
    """A corpus of draws around one real case plus prior draws covers that case; the same
    corpus without the draws around it leaves the case with no neighbours."""
    dataset = datasets.load_dataset("mariadb-2core-v1")
    case = real_cases(dataset, only=["oltp_read_only-c16"])[0]
    example = next(e for e in datasets.examples(dataset) if e.origin.endswith(case.workload_id))
    rows, points = [], []
    for index in range(120):
        row, curve = simcorpus_v2.simulate_workload(5, index, [_record(case.workload_id)], 60)
        rows.append(row)
        points.extend(curve)
    workloads, curves = simcorpus_v2.tables(rows, points)
    corpus = datasets.Dataset(
        name="sim-test", path=Path("."), manifest={}, workloads=workloads, curves=curves
    )
    index = CorpusIndex(datasets.examples(corpus))
    covered = case_coverage(case, example, index)
    assert covered.covered, covered
    assert all(n.group == "sim-test:calibrated:oltp_read_only" for n in covered.close)
    own = {e.group for e in index.examples if e.group.endswith("calibrated:oltp_read_only")}
    alone = case_coverage(case, example, index.without(own))
    assert not alone.covered
    assert alone.nearest_distance > covered.nearest_distance


def test_sim_v1_regenerates_bit_for_bit() -> None:
    """``make-sim-dataset`` (v1) draws each workload from its own seed, so the first 200
    regenerate exactly the stored rows and curve points."""
    count = 200
    workloads, curves = simcorpus.build_corpus(count, seed=1, processes=1)
    stored = datasets.load_dataset("sim-v1")
    expected = stored.workloads.iloc[:count].reset_index(drop=True)
    pd.testing.assert_frame_equal(workloads, expected, check_categorical=False)
    ids = set(workloads["workload_id"])
    stored_curves = stored.curves[stored.curves["workload_id"].isin(ids)].reset_index(drop=True)
    pd.testing.assert_frame_equal(curves, stored_curves, check_categorical=False)


def test_sim_v2_rows_regenerate_from_their_manifest() -> None:
    stored = datasets.load_dataset("sim-v2")
    description = stored.manifest["description"]
    calibration = description["calibration"]
    calibrated = description["calibrated_workloads"]
    assert calibrated == round(len(stored.workloads) * description["calibrated_share"])
    picks = [0, 1, len(calibration) + 2, calibrated - 1, calibrated, len(stored.workloads) - 1]
    rows, points = [], []
    for index in picks:
        row, curve = simcorpus_v2.simulate_workload(
            description["seed"], index, calibration, calibrated
        )
        rows.append(row)
        points.extend(curve)
    workloads, curves = simcorpus_v2.tables(rows, points)
    expected = stored.workloads.iloc[picks].reset_index(drop=True)
    pd.testing.assert_frame_equal(workloads, expected, check_categorical=False)
    ids = set(workloads["workload_id"])
    stored_curves = stored.curves[stored.curves["workload_id"].isin(ids)].reset_index(drop=True)
    pd.testing.assert_frame_equal(curves, stored_curves, check_categorical=False)


def test_make_sim_v2_is_seeded_and_records_its_calibration(tmp_path: Path) -> None:
    first = make_sim_v2(
        tmp_path / "a",
        workloads=30,
        seed=3,
        real="mariadb-2core-v1",
        processes=1,
        calibration=SIM_V2_MANIFEST,
    )
    again = make_sim_v2(
        tmp_path / "b",
        workloads=30,
        seed=3,
        real="mariadb-2core-v1",
        processes=1,
        calibration=SIM_V2_MANIFEST,
    )
    assert first["files"] == again["files"]
    dataset = datasets.load_dataset(tmp_path / "a")
    assert (dataset.workloads["calibrated_from"] != "").sum() == 9
    assert dataset.manifest["description"]["calibration"] == recorded_calibration(SIM_V2_MANIFEST)
    assert "--calibration" in dataset.manifest["command"]
    assert json.loads((tmp_path / "a" / "MANIFEST.json").read_text())["workloads"] == 30
    assert "| oltp_read_only-c16 | cpu |" in (tmp_path / "a" / "README.md").read_text()


def test_make_sim_v2_through_the_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "sim-v2-small"
    arguments = ["--out", str(out), "--workloads", "12", "--seed", "4", "--processes", "1"]
    calibration = ["--calibration", str(SIM_V2_MANIFEST)]
    result = runner.invoke(app, ["make-sim-v2", *arguments, *calibration])
    assert result.exit_code == 0, result.output
    dataset = datasets.load_dataset(out)
    assert len(dataset.workloads) == 12
    assert dataset.manifest["command"].startswith("pooltune-trainer make-sim-v2 --out")
    missing = runner.invoke(
        app, ["make-sim-v2", *arguments, "--calibration", str(tmp_path / "none.json")]
    )
    assert missing.exit_code == 1
    assert "--calibration:" in missing.output
    assert "not a sim-v2 manifest" in " ".join(missing.output.split())
    unknown = runner.invoke(app, ["make-sim-v2", *arguments, "--real", "no-such-dataset"])
    assert unknown.exit_code == 1
    assert "--real: no dataset 'no-such-dataset'" in " ".join(unknown.output.split())
