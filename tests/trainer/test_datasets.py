from pathlib import Path

import pandas as pd
import pytest

from agents.wire import ClimbReport
from trainer import simcorpus
from trainer.regret import regret
from trainer.sources import datasets
from trainer.sources.database import trace_curves


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workloads, curves = simcorpus.build_corpus(24, seed=5, processes=1)
    directory = tmp_path_factory.mktemp("data") / "sim-tiny"
    datasets.write_dataset(
        directory,
        name="sim-tiny",
        workloads=workloads,
        curves=curves,
        command="pooltune-trainer make-sim-dataset --workloads 24 --seed 5",
        description={"seed": 5},
    )
    return directory


def test_corpus_is_seeded_and_regenerable() -> None:
    first, first_curves = simcorpus.build_corpus(5, seed=9, processes=1)
    again, again_curves = simcorpus.build_corpus(5, seed=9, processes=1)
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(first_curves, again_curves)
    other, _ = simcorpus.build_corpus(5, seed=10, processes=1)
    assert not first["qps"].equals(other["qps"])


def test_loader_verifies_hashes_and_reads_examples(small_dataset: Path) -> None:
    dataset = datasets.load_dataset(small_dataset)
    assert dataset.name == "sim-tiny" and len(dataset.workloads) == 24
    examples = datasets.examples(dataset)
    assert len(examples) == 24
    for example in examples:
        assert example.curve is not None
        # The stored optimum is within 1% of the peak of its own curve, by definition.
        assert regret(example.curve, example.optimal_size) <= 0.01 + 1e-6
        assert example.group.startswith("sim-tiny:")


def test_loader_refuses_a_changed_file(small_dataset: Path, tmp_path: Path) -> None:
    copy = tmp_path / "sim-tiny"
    copy.mkdir()
    for file in small_dataset.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    with (copy / "curves.parquet").open("ab") as stream:
        stream.write(b"tampered")
    with pytest.raises(
        datasets.DatasetError, match="curves.parquet has changed since the manifest"
    ):
        datasets.load_dataset(copy)


def test_loader_refuses_missing_columns_and_unknown_names(tmp_path: Path) -> None:
    workloads, curves = simcorpus.build_corpus(3, seed=1, processes=1)
    with pytest.raises(datasets.DatasetError, match="missing columns"):
        datasets.write_dataset(
            tmp_path / "bad",
            name="bad",
            workloads=workloads.drop(columns=["qps"]),
            curves=curves,
            command="x",
            description={},
        )
    with pytest.raises(datasets.DatasetError, match="no dataset 'nope'"):
        datasets.load_dataset("nope")


def test_dataset_reports_carry_the_curve_as_a_sweep_trace(small_dataset: Path) -> None:
    dataset = datasets.load_dataset(small_dataset)
    reports = list(datasets.reports(dataset))
    assert len({r.idempotency_key for r in reports}) == 24
    example_by_key = {e.origin.split(":")[-1]: e for e in datasets.examples(dataset)}
    for report in reports:
        again = ClimbReport.model_validate_json(report.model_dump_json())
        assert again == report
        curve = _curve_of(report)
        expected = example_by_key[report.climber.settings["workload_id"]].curve
        assert expected is not None and curve is not None
        assert curve.sizes.tolist() == expected.sizes.tolist()
        assert curve.throughput == pytest.approx(expected.throughput)


def _curve_of(report: ClimbReport):  # type: ignore[no-untyped-def]
    from service.reports.trace_codec import encode_trace

    return trace_curves(encode_trace(report.trace), "thread_pool_size").get("thread_pool_size")


def test_a_dataset_older_than_a_profile_field_loads_it_as_unknown(
    small_dataset: Path, tmp_path: Path
) -> None:
    """A dataset measured before the agent timed synchronisation waits has no such column:
    its examples load with the field unknown, as from an agent without performance_schema."""
    import json
    import shutil

    older = tmp_path / "sim-older"
    shutil.copytree(small_dataset, older)
    table = older / "workloads.parquet"
    pd.read_parquet(table).drop(columns=["sync_ms_per_request"]).to_parquet(table, index=False)
    manifest = json.loads((older / "MANIFEST.json").read_text())
    manifest["files"]["workloads.parquet"] = {
        "sha256": datasets.sha256_file(table),
        "bytes": table.stat().st_size,
    }
    (older / "MANIFEST.json").write_text(json.dumps(manifest))

    assert "sync_ms_per_request" in datasets.LATER_PROFILE_COLUMNS
    examples = datasets.examples(datasets.load_dataset(older))
    assert len(examples) == 24
    assert all(e.profile.sync_ms_per_request is None for e in examples)


def test_the_simulated_corpus_measures_synchronisation(small_dataset: Path) -> None:
    examples = datasets.examples(datasets.load_dataset(small_dataset))
    times = [e.profile.sync_ms_per_request for e in examples]
    assert all(t is not None and t >= 0 for t in times)
    assert any(t for t in times)


def test_a_partial_sample_spans_the_groups_and_grows_as_a_superset() -> None:
    """sim-v2 lists its calibrated draws first: the first rows would be a handful of groups."""
    dataset = datasets.load_dataset("sim-v2")
    first_rows = dataset.workloads.head(300)["group"].nunique()
    small = datasets.sample(dataset, 300)
    larger = datasets.sample(dataset, 600)
    assert len(small.workloads) == 300
    assert small.workloads["group"].nunique() > 3 * first_rows
    assert set(small.workloads["workload_id"]) <= set(larger.workloads["workload_id"])
    assert set(small.curves["workload_id"]) == set(small.workloads["workload_id"])
    assert datasets.sample(dataset, None) is dataset
