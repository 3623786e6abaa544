"""The loop closed, small: simulated hosts climb cold and upload through the real service
(uvicorn on 127.0.0.1, its own PostgreSQL database), the real trainer CLI trains with two
Optuna trials and promotes through the gate, and a second fleet of other workloads starts
from the service's recommendations — closer to its optima than the first fleet started."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import fleet
from benchmarks.warm_start import draw_workloads

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

#: The trainer needs 30 workload groups (hosts) at least; 200 samples (6.7 min) let the
#: slowest cold climb (a light host walking down from 16 against its interleaved reference)
#: converge and report.
COLD_HOSTS, WARM_HOSTS, SAMPLES = 32, 8, 200


def test_second_fleet_starts_closer_to_its_optima(tmp_path: Path) -> None:
    with fleet.live_service(log_path=tmp_path / "service.log") as service:
        cold_hosts = fleet.build_fleet(
            draw_workloads(COLD_HOSTS, seed=11),
            service=service,
            state_root=tmp_path / "cold",
            prefix="cold",
            cold=True,
            seed=11,
        )
        cold = fleet.run_and_score(cold_hosts, samples=SAMPLES)
        assert all(r.reported and r.start_source == "current" for r in cold)

        # The fleet's 32 reports alone are too few to beat the rule of thumb; like a real
        # deployment, the service also learns from a (small) simulated corpus.
        fleet.make_sim_corpus(tmp_path / "corpus", workloads=300, seed=13)
        fleet.import_dataset(service, str(tmp_path / "corpus"))
        training = fleet.train_and_promote(service, trials=2, seed=0, card_dir=tmp_path / "cards")
        assert training.returncode == 0, training.output
        assert training.promoted, training.output

        warm_hosts = fleet.build_fleet(
            draw_workloads(WARM_HOSTS, seed=12),
            service=service,
            state_root=tmp_path / "warm",
            prefix="warm",
            cold=False,
            seed=12,
        )
        warm = fleet.run_and_score(warm_hosts, samples=SAMPLES)
    assert all(r.start_source == "model" for r in warm)
    # The size trace starts at the applied start and covers every climbing sample.
    for r in warm:
        runs = [run.split("x") for run in r.size_trace.split()]
        assert int(runs[0][0]) == r.start_size, r.size_trace
        assert sum(int(count) for _, count in runs) <= SAMPLES
    cold_start = float(np.median([r.first_tuple_share for r in cold]))
    warm_start = float(np.median([r.first_tuple_share for r in warm]))
    assert warm_start > cold_start, (warm_start, cold_start)
