"""Trainer benchmark: held-out figures on sim-v1 and leave-one-workload-out on the real dataset.

    .venv/bin/python -m benchmarks.trainer [--trials 20] [--real mariadb-2core-v1]

Prints, per model and baseline, median / p90 / mean throughput regret, the share of workloads
within 5% of their best throughput, the range's coverage and the thread economy (predicted /
best size), plus the wall time of the 20-trial training. "lightgbm (no sync)" is the same model
on the same workloads with the synchronisation time unknown (a server without
performance_schema).
Examples come straight from the dataset files (the same examples `import-dataset` stores).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from agents.knobs import Engine  # noqa: E402
from trainer import datasets  # noqa: E402
from trainer.evaluation import (  # noqa: E402
    Score,
    baseline_predictors,
    evaluate,
    score_sizes,
    score_tuple_model,
)
from trainer.examples import OPTIONAL_MEASUREMENTS, Example, split_by_group  # noqa: E402
from trainer.models import SearchConfig, SklearnSizeModel, predict_sizes, search_lightgbm  # noqa: E402
from trainer.pipeline import BASELINES  # noqa: E402


def table(scores: Mapping[str, Score]) -> None:
    print(
        f"{'predictor':<18} {'median':>8} {'p90':>8} {'mean':>8} {'≤5%':>6} {'n':>6} "
        f"{'coverage':>9} {'size/best med':>14} {'p90':>6}"
    )
    for name, s in scores.items():
        coverage = "-" if s.coverage is None else f"{s.coverage:.3f}"
        ratio = s.size_ratio
        within = float(np.mean(s.regrets <= 0.05)) if len(s.regrets) else float("nan")
        print(
            f"{name:<18} {s.regret.median:8.4f} {s.regret.p90:8.4f} {s.regret.mean:8.4f} "
            f"{within:6.3f} {s.regret.count:6d} {coverage:>9} "
            f"{(ratio.median if ratio else float('nan')):14.2f} "
            f"{(ratio.p90 if ratio else float('nan')):6.2f}"
        )


def simulated(trials: int, seed: int) -> None:
    dataset = datasets.load_dataset("sim-v1")
    examples = datasets.examples(dataset)
    train, test = split_by_group(examples, test_fraction=0.2, seed=seed)
    print(f"sim-v1: {len(train)} training and {len(test)} held-out workloads, {trials} trials")
    started = time.perf_counter()
    search = search_lightgbm(Engine.MARIADB, train, SearchConfig(trials=trials, seed=seed))
    took = time.perf_counter() - started
    scores = evaluate(
        test=test,
        models={"lightgbm": search.model},
        predictors=baseline_predictors(train)
        | {"sklearn-hgb": SklearnSizeModel(seed=seed).fit(train).predict},
    )
    # The same model for hosts that cannot time synchronisation (performance_schema off).
    unmeasured = [
        replace(e, profile=e.profile.model_copy(update=dict.fromkeys(OPTIONAL_MEASUREMENTS)))
        for e in test
    ]
    scores["lightgbm (no sync)"] = score_tuple_model("lightgbm (no sync)", search.model, unmeasured)
    print(f"training ({trials} trials, search + refit + calibration): {took:.0f} s")
    print(f"best trial: {search.best_params}")
    table(scores)
    model = scores["lightgbm"].regret.mean
    best = min((scores[b] for b in BASELINES), key=lambda s: s.regret.mean)
    print(
        f"mean regret: lightgbm {model:.4f} vs best baseline {best.name} {best.regret.mean:.4f} "
        f"({best.regret.mean / model:.2f}x lower)"
    )


def leave_one_workload_out(name: str, trials: int, seed: int) -> None:
    try:
        dataset = datasets.load_dataset(name)
    except datasets.DatasetError as exc:
        print(f"{name}: not available ({exc})")
        return
    examples = datasets.examples(dataset)
    groups = sorted({e.group for e in examples})
    print(f"\n{name}: leave one workload out over {len(groups)} workloads, {len(examples)} cases")
    predicted: dict[str, list[float]] = {}
    held: list[Example] = []
    for group in groups:
        test = [e for e in examples if e.group == group]
        train = [e for e in examples if e.group != group]
        search = search_lightgbm(
            Engine.MARIADB, train, SearchConfig(trials=trials, seed=seed, validation_fraction=0.25)
        )
        predictors = baseline_predictors(train)
        predicted.setdefault("lightgbm", []).extend(predict_sizes(search.model, test)[0])
        for baseline, predict in predictors.items():
            predicted.setdefault(baseline, []).extend(predict(test))
        held.extend(test)
    scores = {n: score_sizes(n, held, np.array(p)) for n, p in predicted.items()}
    table(scores)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--real", default="mariadb-2core-v1", help="real dataset for LOWO ('' skips it)"
    )
    parser.add_argument("--real-trials", type=int, default=5)
    args = parser.parse_args(argv)
    simulated(args.trials, args.seed)
    if args.real:
        leave_one_workload_out(args.real, args.real_trials, args.seed)


if __name__ == "__main__":
    main()
