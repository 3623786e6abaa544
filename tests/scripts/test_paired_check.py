"""``scripts.paired_check``: whether a paired sweep's reference held beside every size,
read on stored v4 cases (a disturbed reading, the same case settled, a clean load) and on a
made-up sweep."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agents.sweep.curve import SweepSample, reference_beside
from scripts import paired_check
from scripts.mariadb_dataset.cases import SIZE
from scripts.mariadb_dataset.records import RECORD_FILE, read_record

V4 = Path(__file__).resolve().parents[2] / "datasets" / "mariadb-2core-v4"
V4_CASES = V4 / "cases"
#: The first readings of the cases measured again with a longer discard.
V4_UNSETTLED = V4 / "unsettled"


def _check(case: str, directory: Path = V4_CASES) -> paired_check.Check:
    return paired_check.check(read_record(directory / case / RECORD_FILE).sweeps[SIZE])


def test_a_large_pool_that_sinks_the_default_beside_it_is_flagged() -> None:
    """256 clients on the CPU stall mix: after a visit to 64 groups the default runs at a
    tenth of its level or less. Those reference visits are set aside (read beside them, 64
    came out 80× the default where its own samples ran 4×); the ones after 16 and 32 sink
    less, so the paired ratio at 64 is still above the plain one and the case flagged."""
    result = _check("stall_mix_cpu-c256", V4_UNSETTLED)
    assert result.disturbed
    after, _before = result.beside[64]
    assert after < 0.2
    assert result.plain[64] < result.paired[64] < 2 * result.plain[64]


def test_the_same_load_read_with_a_longer_discard_holds_its_reference() -> None:
    """3 s dropped after each change: the default beside 64 groups keeps its level, and 64
    is no longer a gain even on its own samples (the 4× was the burst after a change)."""
    result = _check("stall_mix_cpu-c256")
    assert not result.disturbed
    assert all(0.85 < level < 1.15 for pair in result.beside.values() for level in pair)
    assert result.plain[64] < 1.0 < _check("stall_mix_cpu-c256", V4_UNSETTLED).plain[64] / 2


def test_a_clean_load_keeps_its_default_level_beside_every_size() -> None:
    result = _check("oltp_point_select-c64")
    assert not result.disturbed
    assert all(0.85 < level < 1.15 for pair in result.beside.values() for level in pair)


def test_the_reference_beside_a_value_is_read_after_and_before_its_visits() -> None:
    """Visits 2, 8, 2, 4, 2 (one kept sample each): the default reads 100, 10 right after
    8, and 100 again; the levels are over the default's mean (70)."""
    values = [2, 8, 2, 4, 2]
    levels = [100.0, 500.0, 10.0, 300.0, 100.0]
    samples = [
        SweepSample(
            value=v,
            repeat=0,
            index=1,
            t_s=float(n + 1),
            duration_s=1.0,
            throughput=x,
            latency_ms=None,
            discarded=False,
            visit=n,
        )
        for n, (v, x) in enumerate(zip(values, levels, strict=True))
    ]
    beside = reference_beside(samples, 2)
    assert beside[8] == pytest.approx((10 / 70, 100 / 70))
    assert beside[4] == pytest.approx((100 / 70, 10 / 70))


def test_the_command_prints_every_case_and_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert paired_check.main([str(V4_UNSETTLED), "stall_mix_cpu-c256"]) == 0
    assert "stall_mix_cpu-c256: DISTURBED" in capsys.readouterr().out
    assert paired_check.main([str(V4_CASES), "stall_mix_cpu-c256", "oltp_point_select-c64"]) == 0
    out = capsys.readouterr().out
    assert "stall_mix_cpu-c256: ok" in out
    assert "oltp_point_select-c64: ok" in out
    assert "0 of 2 paired cases disturbed" in out


def test_the_builder_flags_each_paired_case_as_it_is_measured() -> None:
    """One line per measured case: DISTURBED where the reference sank beside some size, ok
    where it held, nothing for a plain sweep (no reference to pair with)."""
    sweep = read_record(V4_UNSETTLED / "stall_mix_cpu-c256" / RECORD_FILE).sweeps[SIZE]
    assert (paired_check.flag(sweep) or "").startswith("paired check: DISTURBED (")
    clean = read_record(V4_CASES / "oltp_point_select-c64" / RECORD_FILE).sweeps[SIZE]
    assert (paired_check.flag(clean) or "").startswith("paired check: ok (")
    plain = dataclasses.replace(sweep, plan=dataclasses.replace(sweep.plan, reference=None))
    assert paired_check.flag(plain) is None
