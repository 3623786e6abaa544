"""Migration 0002 on a real PostgreSQL: reports stored in the old form (sweep samples as
``state="sweep:<knob>"``, the workload group in ``climber.settings``) read as the new form,
import again without a conflict, and come back byte for byte on downgrade."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from agents.knobs import Engine
from agents.wire import ClimbReport, TraceKind
from service.migrate import downgrade, upgrade
from service.reports.models import Report
from service.reports.service import payload_sha256
from service.reports.trace_codec import decode_samples, decode_trace
from tests.fixtures.postgres import scratch_database
from tests.service.factories import climb_report
from trainer import simcorpus
from trainer.importer import import_reports
from trainer.sources import datasets
from trainer.sources.database import read_examples

pytestmark = pytest.mark.postgres


def old_form(report: ClimbReport) -> ClimbReport:
    """``report`` as the previous trainer wrote it: the side channels, not the fields."""
    payload: dict[str, Any] = report.model_dump(mode="json")
    for sample in payload["trace"]:
        if sample.pop("kind", None) == "sweep":
            sample["state"] = f"sweep:{sample.pop('sweep_knob')}"
    climber = payload["climber"]
    settings = climber["settings"]
    climber["settings"] = {
        "dataset": settings["dataset"],
        "workload_id": settings["workload_id"],
        "workload_group": climber.pop("workload_group"),
        "kind": settings["kind"],
    }
    return ClimbReport.model_validate(payload)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> datasets.Dataset:
    workloads, curves = simcorpus.build_corpus(6, seed=3, processes=1)
    directory = tmp_path_factory.mktemp("data") / "sim-mig"
    datasets.write_dataset(
        directory, name="sim-mig", workloads=workloads, curves=curves, command="t", description={}
    )
    return datasets.load_dataset(directory)


@pytest.fixture
def database_at_0001() -> Iterator[str]:
    with scratch_database("pooltune_migration_0002") as url:
        upgrade(url, "0001")
        yield url


def _stored(url: str) -> dict[str, tuple[bytes, dict[str, Any], str]]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with Session(engine) as session:
            rows = session.execute(
                select(Report.idempotency_key, Report.trace, Report.climber, Report.payload_sha256)
            )
            return {key: (trace, climber, digest) for key, trace, climber, digest in rows}
    finally:
        engine.dispose()


def _session(url: str) -> Session:
    return Session(create_engine(url, poolclass=NullPool))


def test_old_form_reports_are_rewritten_and_restored(
    database_at_0001: str, dataset: datasets.Dataset
) -> None:
    url = database_at_0001
    new_reports = list(datasets.reports(dataset))
    old_reports = [old_form(r) for r in new_reports]
    plain = ClimbReport.model_validate(climb_report(idempotency_key="plain-climb-0001"))
    with _session(url) as session, session.begin():
        assert import_reports(session, [*old_reports, plain]) == (7, 0)
    before = _stored(url)
    stored_sample = decode_samples(before[old_reports[0].idempotency_key][0])[0]
    assert stored_sample["state"].startswith("sweep:") and "kind" not in stored_sample
    assert "workload_group" in before[old_reports[0].idempotency_key][1]["settings"]

    upgrade(url)
    after = _stored(url)
    for new in new_reports:
        trace, climber, digest = after[new.idempotency_key]
        assert decode_trace(trace) == new.trace
        assert all(s.kind == TraceKind.SWEEP and s.state == "" for s in decode_trace(trace))
        assert climber == new.climber.model_dump(mode="json")
        assert climber["workload_group"].startswith("sim-mig:")
        assert "workload_group" not in climber["settings"]
        assert digest == payload_sha256(new)
    assert after[plain.idempotency_key] == before[plain.idempotency_key]

    with _session(url) as session, session.begin():
        # The new trainer's import finds every report: same key, same payload.
        assert import_reports(session, new_reports) == (0, 6)
        from_db = {e.origin: e for e in read_examples(session, engine=Engine.MARIADB)}
    from_files = {e.group: e for e in datasets.examples(dataset)}
    dataset_examples = [e for e in from_db.values() if e.group.startswith("sim-mig:")]
    assert len(dataset_examples) == 6
    for example in dataset_examples:
        original = from_files[example.group]
        assert example.curve is not None and original.curve is not None
        assert example.curve.sizes.tolist() == original.curve.sizes.tolist()

    downgrade(url, "0001")
    assert _stored(url) == before


def test_a_sweep_state_naming_a_knob_the_sample_lacks_is_left_alone(
    database_at_0001: str,
) -> None:
    url = database_at_0001
    payload = climb_report(idempotency_key="odd-sweep-0001")
    payload["trace"][0]["state"] = "sweep:thread_pool_stall_limit"
    payload["climber"]["settings"]["workload_group"] = ""
    with _session(url) as session, session.begin():
        import_reports(session, [ClimbReport.model_validate(payload)])
    before = _stored(url)
    upgrade(url)
    assert _stored(url) == before
    downgrade(url, "0001")
    assert _stored(url) == before


def test_migration_0002_runs_on_sqlite(tmp_path: Path, dataset: datasets.Dataset) -> None:
    url = f"sqlite:///{tmp_path / 'pooltune.db'}"
    upgrade(url, "0001")
    report = old_form(next(iter(datasets.reports(dataset))))
    with _session(url) as session, session.begin():
        import_reports(session, [report])
    before = _stored(url)
    upgrade(url)
    ((trace, climber, _),) = _stored(url).values()
    assert {s.kind for s in decode_trace(trace)} == {TraceKind.SWEEP}
    assert climber["workload_group"].startswith("sim-mig:")
    downgrade(url, "0001")
    assert _stored(url) == before
