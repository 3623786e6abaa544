"""Trainer benchmark: simulated held-out figures, real leave-one-workload-out, calibration of
ranges and predicted gains, widening out of distribution, inference time.

    .venv/bin/python -m benchmarks.trainer [--trials 20] [--sim sim-v1]
        [--real mariadb-2core-v1,mariadb-2core-v2,mariadb-2core-v4]
        [--weighting weights:0.3] [--compare finetune]
    .venv/bin/python -m benchmarks.trainer --sim '' --real pgbouncer-2core-v1

Trains as ``pooltune-trainer train`` does (trainer.pipeline) on the simulated dataset's
training groups plus every real workload, and prints, per model and baseline, median / p90 /
mean throughput regret on the held-out simulated groups, the share of workloads within 5% of
their best throughput, the range's coverage and the thread economy (predicted / best size);
then the real leave-one-workload-out figures (each real workload group answered by a model
trained on everything else) and what the real sweeps resolve themselves
(trainer.repeatability); the coverage of ranges and predicted gains against nominal; how much
wider ranges get outside the training ranges; the milliseconds per recommendation of a loaded
model. ``--per-case`` adds each real case's best size and each predictor's size and regret
in its fold. ``--compare`` refits with other real weightings on the same search (same
recipe) and prints their real and simulated figures. The last lines are the done-when checks
of issues 16 and 20 that the trainer can measure. "lightgbm (no sync)" is the same model on
the same workloads with the synchronisation time unknown (a server without performance_schema).
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

from agents import knobs  # noqa: E402
from agents.knobs import Engine  # noqa: E402
from service.recommendations.intervals import REAL, SIMULATED, pick  # noqa: E402
from service.recommendations.tuple_model import TupleModel  # noqa: E402
from trainer.artifact import artifact_bytes  # noqa: E402
from trainer.bootstrap import bundled_by_domain  # noqa: E402
from trainer.evaluation import Score, score_tuple_model  # noqa: E402
from trainer.examples import OPTIONAL_MEASUREMENTS, Example, holdout_split  # noqa: E402
from trainer.pipeline import BASELINES, MIN_GROUPS, TrainOutcome, real_verdict, train  # noqa: E402
from trainer.realscore import NEAR_BEST, RealScore, score_real  # noqa: E402
from trainer.refit import fit_calibrated  # noqa: E402
from trainer.repeatability import repeatability, time_dominated_cases  # noqa: E402
from trainer.search import SearchConfig, validation_split  # noqa: E402
from trainer.sources import datasets  # noqa: E402
from trainer.weighting import DEFAULT_REAL_SHARE, DomainWeighting  # noqa: E402

#: Figures of the issue's done-when (issue 16: real and simulated; issue 20: predicted gain).
SIM_P90_MAX = 0.02
SIM_RATIO_MIN = 5.0
REAL_DEFAULT_FACTOR = 0.5
REAL_WITHIN_MIN = 0.8
COVERAGE_TOLERANCE = 0.05
OOD_WIDENING_MIN = 2.0
GAIN_COVERAGE_MIN = 0.8
GAIN_ERROR_MAX = 0.05
INFERENCE_MS_MAX = 1.0


def table(scores: Mapping[str, Score]) -> None:
    print(
        f"{'predictor':<18} {'median':>8} {'p90':>8} {'mean':>8} {'≤5%':>6} {'n':>6} "
        f"{'coverage':>9} {'size/best med':>14} {'p90':>6}"
    )
    for name, s in scores.items():
        coverage = "-" if s.coverage is None else f"{s.coverage:.3f}"
        ratio = s.size_ratio
        within = float(np.mean(s.regrets <= NEAR_BEST)) if len(s.regrets) else float("nan")
        print(
            f"{name:<18} {s.regret.median:8.4f} {s.regret.p90:8.4f} {s.regret.mean:8.4f} "
            f"{within:6.3f} {s.regret.count:6d} {coverage:>9} "
            f"{(ratio.median if ratio else float('nan')):14.2f} "
            f"{(ratio.p90 if ratio else float('nan')):6.2f}"
        )


def per_case(real: RealScore, names: Sequence[str] = ("lightgbm", "default", "nearest")) -> None:
    """Each real case's best size, and each predictor's size and regret in its fold, the
    case the model misses most first: which cases carry the mean, and by how much."""
    names = [n for n in names if n in real.scores]
    model = real.scores[names[0]]
    if len(model.regrets) != len(real.cases):
        print("  (some real cases have no curve: no per-case table)")
        return
    print(f"{'case':<40} {'best':>5} " + " ".join(f"{n[:12]:>12} {'regret':>7}" for n in names))
    for i in np.argsort(-model.regrets, kind="stable"):
        cells = " ".join(
            f"{real.scores[n].predicted[i]:12.0f} {real.scores[n].regrets[i]:7.3f}" for n in names
        )
        print(f"{real.cases[i].split(':')[-1]:<40} {model.best[i]:5.0f} {cells}")


def paired(real: RealScore) -> None:
    """The model against each baseline on the same real cases, with 90% intervals from
    drawing whole workloads (trainer.paired): which differences the cases can tell."""
    print(
        "paired, the model against each baseline (mean regret ratio and difference; 90% "
        "intervals, whole workloads drawn):"
    )
    for name in real.scores:
        comparison = real.versus("lightgbm", name) if name != "lightgbm" else None
        if comparison is not None:
            print(f"  {comparison.text()}")


def parse_weighting(text: str) -> DomainWeighting:
    kind, _, share = text.partition(":")
    return DomainWeighting(kind=kind, real_share=float(share) if share else 0.1)


def load(name: str) -> list[Example]:
    try:
        return datasets.examples(datasets.load_dataset(name))
    except datasets.DatasetError as exc:
        print(f"{name}: not available ({exc})")
        return []


def inference_ms(
    model: TupleModel, examples: Sequence[Example], repeat: int = 3
) -> tuple[float, float]:
    """Milliseconds of one recommendation (tuple, ranges, novelty, predicted gain) by a model
    loaded from its artifact, one profile at a time: (CPU time of this process per call, the
    median wall time per call). On a shared machine the wall time also counts the waits for a
    core; the CPU time is what a recommendation costs."""
    loaded = TupleModel.from_bytes(artifact_bytes(model))
    cases = list(examples[:200])
    for e in cases[:20]:
        loaded.recommend(e.host, e.profile)
    times = []
    cpu_started = time.process_time()
    for _ in range(repeat):
        for e in cases:
            started = time.perf_counter()
            loaded.recommend(e.host, e.profile)
            times.append(time.perf_counter() - started)
    cpu = (time.process_time() - cpu_started) / len(times)
    return cpu * 1000.0, float(np.median(times) * 1000.0)


def compare(
    outcome: TrainOutcome,
    train_set: Sequence[Example],
    test_set: Sequence[Example],
    weightings: Sequence[DomainWeighting],
    config: SearchConfig,
) -> None:
    """Refit the search's recipe with other real weightings; print their figures."""
    print("\nreal weighting (same recipe; simulated held-out and real leave-one-workload-out):")
    print(f"{'weighting':<32} {'sim mean':>9} {'sim p90':>8} {'real mean':>10} {'real ≤5%':>9}")
    rows: list[tuple[DomainWeighting, Score | None, RealScore | None]] = [
        (outcome.search.recipe.weighting, outcome.scores.get("lightgbm"), outcome.real)
    ]
    masked, fit_part, valid_part = validation_split(train_set, config)
    for weighting in weightings:
        recipe = replace(outcome.search.recipe, weighting=weighting)
        fitted = fit_calibrated(
            outcome.model.engine,
            masked,
            recipe,
            validation=(fit_part, valid_part),
            seed=config.seed,
        )
        refit_sim = score_tuple_model("lightgbm", fitted.model, test_set, domain=SIMULATED)
        refit_real = None
        if REAL in fitted.held_out:
            nominal = fitted.model.nominal_coverage
            refit_real = score_real(fitted.held_out[REAL], nominal=nominal)
        rows.append((weighting, refit_sim, refit_real))
    for weighting, sim, real in rows:
        sim_mean = sim.regret.mean if sim else float("nan")
        sim_p90 = sim.regret.p90 if sim else float("nan")
        real_mean = real.scores["lightgbm"].regret.mean if real else float("nan")
        real_within = real.within("lightgbm") if real else float("nan")
        print(
            f"{weighting.label:<32} {sim_mean:9.4f} {sim_p90:8.4f} {real_mean:10.4f} "
            f"{real_within:9.3f}"
        )


def sweep_repeatability(names: Sequence[str]) -> None:
    """Print what each real dataset's sweeps resolve: the size the other visits choose and
    the default, both scored on the visit left out (trainer.repeatability)."""
    print("the sweeps' own repeatability (best of the other visits vs the default, on each")
    print("visit left out: mean regret, share within 5%; the first is about what the sweeps'")
    print("noise leaves to any predictor on a fresh measurement):")
    for name in names:
        dataset = datasets.load_dataset(name)
        found = repeatability(dataset)
        if found is None:
            print(f"  {name}: no case with two visits and the default in its grid")
            continue
        print(
            f"  {name} ({found.cases} cases, {found.visits} visits): other visits "
            f"{found.chosen:.4f} ({found.chosen_within:.2f}), default {found.default:.4f} "
            f"({found.default_within:.2f}); ratio {found.ratio:.2f}"
        )
        if found.paired is not None:
            print(f"    {found.paired.text()}")
        dominated, total = time_dominated_cases(dataset)
        print(
            f"    a size's visits differ by more than the whole curve in {len(dominated)} of "
            f"{total} cases (time-dominated sweeps)"
        )


def check(ok: bool, text: str) -> None:
    print(f"[{'ok' if ok else 'NO'}] {text}")


def done_when(
    outcome: TrainOutcome,
    real: RealScore | None,
    real_name: str,
    real_examples: Sequence[Example],
    ms: float,
    ood: dict[str, float],
    engine: Engine,
) -> None:
    print("\ndone when (issue 16; issue 20's predicted gain; the trainer's share of them):")
    scores = outcome.scores
    if "lightgbm" in scores:
        model = scores["lightgbm"]
        best = min((scores[b] for b in BASELINES if b in scores), key=lambda s: s.regret.mean)
        ratio = best.regret.mean / max(model.regret.mean, 1e-12)
        check(
            model.regret.median == 0.0,
            f"simulated held-out median regret 0: {model.regret.median:.4f}",
        )
        check(
            model.regret.p90 <= SIM_P90_MAX,
            f"simulated held-out p90 ≤ {SIM_P90_MAX}: {model.regret.p90:.4f}",
        )
        check(
            ratio >= SIM_RATIO_MIN,
            f"simulated mean regret ≥ {SIM_RATIO_MIN:g}× lower than the best baseline "
            f"({best.name} {best.regret.mean:.4f}): {ratio:.1f}×",
        )
        nominal = model.nominal_coverage or 0.0
        coverage = model.coverage or 0.0
        check(
            abs(coverage - nominal) <= COVERAGE_TOLERANCE,
            f"simulated range coverage within {COVERAGE_TOLERANCE} of nominal {nominal:.2f}: "
            f"{coverage:.3f}",
        )
    if real is not None:
        verdict, reason, _, _ = real_verdict(outcome.metrics, real_examples)
        check(bool(verdict), f"promotion gate, real part: {reason}")
    if real is not None and engine is Engine.PGBOUNCER:
        lgbm = real.scores["lightgbm"].regret.mean
        default, rule = real.scores["default"].regret.mean, real.scores["2cores+disk"].regret.mean
        check(
            lgbm <= default / 2,
            f"PgBouncer real LOWO mean regret ≤ half the default's (20: {default:.4f}): {lgbm:.4f}",
        )
        check(lgbm < rule, f"below 2 × cores + disks ({rule:.4f}): {lgbm:.4f}")
    elif real is not None:
        lgbm = real.scores["lightgbm"].regret.mean
        default = real.scores["default"].regret.mean
        note = f"(on {real_name}; the done-when asks it of the v2 catalog: v2 and v4)"
        versus = real.versus("lightgbm", "default")
        interval = (
            ""
            if versus is None
            else f", ratio {versus.ratio:.2f} (90%: {versus.ratio_low:.2f}–{versus.ratio_high:.2f})"
        )
        check(
            lgbm <= REAL_DEFAULT_FACTOR * default,
            f"real LOWO mean regret ≤ {REAL_DEFAULT_FACTOR}× the default's ({default:.4f}): "
            f"{lgbm:.4f}{interval} {note}",
        )
        for baseline in ("nearest", "heuristic"):
            other = real.scores[baseline].regret.mean
            check(lgbm < other, f"real LOWO mean regret below {baseline}'s {other:.4f}: {lgbm:.4f}")
        within = real.within("lightgbm")
        check(
            within >= REAL_WITHIN_MIN,
            f"real LOWO share within 5% of best ≥ {REAL_WITHIN_MIN}: {within:.3f}",
        )
        check(
            abs(real.coverage - real.nominal) <= COVERAGE_TOLERANCE,
            f"real LOWO range coverage within {COVERAGE_TOLERANCE} of nominal {real.nominal:.2f}: "
            f"{real.coverage:.3f}",
        )
    labels = sorted({key.split("_width_ratio")[0] for key in ood if key.endswith("_width_ratio")})
    for label in labels:
        ratio = ood.get(f"{label}_width_ratio", float("nan"))
        flagged = ood.get(f"{label}_flagged", float("nan"))
        check(
            ratio >= OOD_WIDENING_MIN and flagged >= 1.0,
            f"out of distribution ({label}): range ≥ {OOD_WIDENING_MIN:g}× as wide in log size "
            f"and flagged: {ratio:.2f}×, flagged {flagged:.3f}",
        )
    gains = outcome.metrics.get("predicted_gain", {})
    if SIMULATED in gains:
        g = gains[SIMULATED]
        check(
            g["coverage"] >= GAIN_COVERAGE_MIN,
            f"predicted gain, simulated: ≥ {GAIN_COVERAGE_MIN} of true gains inside the "
            f"interval: {g['coverage']:.3f}",
        )
        check(
            g["median_abs_error"] <= GAIN_ERROR_MAX,
            f"predicted gain, simulated: median abs error ≤ {GAIN_ERROR_MAX}: "
            f"{g['median_abs_error']:.4f}",
        )
    if REAL in gains:
        g = gains[REAL]
        print(
            f"[--] predicted gain, real (reported as measured): {g['coverage']:.3f} inside, "
            f"median abs error {g['median_abs_error']:.4f} over {g['count']} workloads"
        )
    check(
        ms <= INFERENCE_MS_MAX,
        f"inference ≤ {INFERENCE_MS_MAX:g} ms per recommendation: {ms:.3f} ms CPU",
    )
    print(
        "[--] not measured here: calibration of the simulator to real curves "
        "(benchmarks.calibration), live warm vs cold runs (benchmarks.mariadb_live --warm)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sim", default="sim-v1", help="simulated dataset ('' none)")
    parser.add_argument(
        "--real",
        default=",".join(bundled_by_domain(Engine.MARIADB)[1]),
        help="real dataset(s), comma-separated ('' none; default: what MariaDB's bootstrap "
        "learns from)",
    )
    parser.add_argument(
        "--weighting", default=f"weights:{DEFAULT_REAL_SHARE:g}", help="kind:real_share"
    )
    parser.add_argument(
        "--compare", default="finetune", help="other weightings to refit, e.g. finetune,weights:1"
    )
    parser.add_argument("--sim-limit", type=int, default=None, help="use N simulated workloads")
    parser.add_argument(
        "--per-case", action="store_true", help="print each real case's sizes and regrets"
    )
    args = parser.parse_args(argv)

    simulated = load(args.sim)[: args.sim_limit] if args.sim else []
    real_names = [n for n in args.real.split(",") if n]
    real_examples = [e for name in real_names for e in load(name)]
    examples = simulated + real_examples
    config = SearchConfig(
        trials=args.trials, seed=args.seed, weighting=parse_weighting(args.weighting)
    )
    train_set, test_set = holdout_split(examples, test_fraction=0.2, seed=args.seed)
    print(
        f"{args.sim}: {sum(not e.is_real for e in train_set)} training and {len(test_set)} "
        f"held-out workloads; real: {len(real_examples)} cases of "
        f"{len({e.group for e in real_examples})} workloads ({', '.join(real_names) or 'none'}); "
        f"{args.trials} trials; weighting {config.weighting.label}"
    )
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    started = time.perf_counter()
    engine = examples[0].engine
    min_groups = min(MIN_GROUPS, len({e.group for e in examples}))
    outcome = train(
        examples, engine=engine, config=config, test_fraction=0.2, min_groups=min_groups
    )
    took = time.perf_counter() - started
    model = outcome.model
    print(f"training (search + calibration + real cross-validation + refit): {took:.0f} s")
    print(f"best trial: {outcome.search.best_params}")
    scores = dict(outcome.scores)
    if test_set:
        unmeasured = [
            replace(e, profile=e.profile.model_copy(update=dict.fromkeys(OPTIONAL_MEASUREMENTS)))
            for e in test_set
        ]
        scores["lightgbm (no sync)"] = score_tuple_model(
            "lightgbm (no sync)", model, unmeasured, domain=SIMULATED
        )
        print("\nsimulated held-out workloads:")
        table(scores)
        lgbm = scores["lightgbm"].regret.mean
        best = min((scores[b] for b in BASELINES if b in scores), key=lambda s: s.regret.mean)
        print(
            f"mean regret: lightgbm {lgbm:.4f} vs best baseline {best.name} "
            f"{best.regret.mean:.4f} ({best.regret.mean / max(lgbm, 1e-12):.2f}x lower)"
        )
    real = outcome.real
    if real is not None:
        print(
            f"\nreal workloads, leave one workload out ({real.groups} workloads, "
            f"{real.scores['lightgbm'].regret.count} cases; each fold trained on the simulated "
            "training groups and the other real workloads):"
        )
        table(real.scores)
        paired(real)
        if args.per_case:
            per_case(real)
        sweep_repeatability(real_names)
    print(f"\nranges (coverage of the best pool size; nominal {model.nominal_coverage:.2f}):")
    if "lightgbm" in scores:
        print(f"  simulated held-out: {scores['lightgbm'].coverage:.3f}")
    if real is not None:
        print(
            "  real LOWO (each workload judged with a calibration of the others): "
            f"{real.coverage:.3f}"
        )
    size = knobs.POOL_SIZE_KNOB[engine]
    served = pick(model.knob_models[size].calibration, model.domain)
    print(f"  the model serves the {model.domain} calibration: {served}")
    ood = outcome.metrics.get("out_of_distribution", {})
    print("\nout of distribution (held-out profiles moved outside the training ranges):")
    for key, value in ood.items():
        print(f"  {key}: {value:.3f}")
    print("\npredicted gain over the engine default (coverage of true gains; median abs error):")
    for domain, g in outcome.metrics.get("predicted_gain", {}).items():
        print(
            f"  {domain}: {g['coverage']:.3f} inside (nominal {model.nominal_coverage:.2f}), "
            f"error {g['median_abs_error']:.4f}, {g['count']} workloads ({g['moved']} moved)"
        )
    if not outcome.metrics.get("predicted_gain"):
        print("  (the model has no throughput curve)")
    ms, wall_ms = inference_ms(model, test_set or real_examples)
    print(
        f"\ninference (model loaded from its artifact, one profile at a time): {ms:.3f} ms CPU "
        f"per recommendation, {wall_ms:.3f} ms wall (median; load {os.getloadavg()[0]:.1f})"
    )
    others = [parse_weighting(w) for w in args.compare.split(",") if w]
    if others and real_examples:
        compare(outcome, train_set, test_set, others, config)
    done_when(outcome, real, ",".join(real_names), real_examples, ms, ood, engine)


if __name__ == "__main__":
    main()
