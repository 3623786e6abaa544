"""The real-MariaDB half of ``benchmarks/warm_start.py``.

From ``datasets/mariadb-2core-v1`` (pool-size sweeps measured with ``pooltune-agent sweep``
under sysbench): pick the workload whose sweep shows the clearest optimum (the largest
best / worst ratio of mean throughput among workloads whose best size is not the smallest),
hold it out, and score two starts against its measured curve:

- cold: the engine default (``thread_pool_size`` = cores);
- warm: the trainer's LightGBM model trained on the other workloads of the dataset (a few
  trials), and the nearest-workload mapping the trainer uses as a baseline.

The printed figure is the measured throughput at each start / the sweep's best (the regret
the start leaves for the climber to close). Running the live agent on a fresh MariaDB under
the same sysbench load is ``benchmarks/mariadb_live.py``'s job; ``--live`` is not wired
here yet.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.knobs import Engine

Write = Callable[[str], None]


def real_comparison(name: str, *, write: Write) -> None:
    from trainer import datasets

    write(f"real MariaDB ({name}):")
    try:
        dataset = datasets.load_dataset(name)
    except (datasets.DatasetError, FileNotFoundError) as exc:
        write(f"  no real dataset yet ({exc}); the comparison is skipped")
        return
    from trainer.evaluation import baseline_predictors
    from trainer.examples import Example

    examples: list[Example] = datasets.examples(dataset)
    curves = dataset.size_curves()
    clear: list[tuple[float, str]] = []
    for workload_id, curve in curves.items():
        if curve.sizes.size < 3 or curve.best_size <= curve.sizes[0]:
            continue
        clear.append((curve.peak / max(float(curve.throughput.min()), 1e-9), workload_id))
    if not clear:
        write("  no workload in the sweep shows an optimum above the smallest size; skipped")
        return
    spread, held_out = max(clear)
    curve = curves[held_out]
    case = next((e for e in examples if e.origin.endswith(f":{held_out}")), None)
    if case is None:
        write(f"  {held_out} has no example; skipped")
        return
    # Hold the whole workload out (all its client counts), not just this case.
    held = [e for e in examples if e.group == case.group]
    rest = [e for e in examples if e.group != case.group]
    if not held or not rest:
        write(f"  cannot hold {held_out} out (examples {len(held)} / {len(rest)}); skipped")
        return
    example = case
    cold_size = float(example.host.cpu_count)
    starts: list[tuple[str, float]] = [("cold (default)", cold_size)]
    nearest = baseline_predictors(rest)["nearest"]
    starts.append(("warm: nearest", float(nearest([example])[0])))
    try:
        from trainer.models import SearchConfig, predict_sizes, search_lightgbm

        model = search_lightgbm(
            Engine.MARIADB, rest, SearchConfig(trials=3, seed=0, validation_fraction=0.25)
        ).model
        starts.append(("warm: lightgbm", float(predict_sizes(model, [example])[0][0])))
    except (ValueError, RuntimeError) as exc:
        write(f"  no LightGBM model from {len(rest)} other cases: {exc}")
    write(
        f"  held-out case {held_out}: best size {curve.best_size:.0f} "
        f"(best / worst {spread:.2f}); its workload ({len(held)} cases) held out, warm models "
        f"trained on the {len(rest)} cases of the other workloads"
    )
    for label, size in starts:
        share = float(np.interp(np.log(size), np.log(curve.sizes), curve.throughput)) / curve.peak
        write(f"  {label:15s} size {size:5.0f}: measured throughput / best {share:.3f}")
