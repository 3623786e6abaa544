"""The real-MariaDB half of ``benchmarks/warm_start.py``: cold vs warm starts scored on the
measured curve of the clearest case of ``datasets/mariadb-2core-v1`` (its workload held out of
every model), and with ``--live`` the agent itself cold and warm on a fresh server under the
same load. See docs/lab.md ("Warm start on the real server").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.knobs import Engine

if TYPE_CHECKING:
    from trainer.regret import Curve
    from trainer.sources.datasets import Dataset

Write = Callable[[str], None]


def clearest_case(dataset: Dataset, groups: set[str]) -> tuple[str, Curve, float] | None:
    """(workload id, its pool-size curve, gain of the best size over the default) of the case
    with the clearest optimum among ``groups``, or None when no sweep differs from its
    default beyond noise."""
    workloads = dataset.workloads
    curves = dataset.size_curves()
    candidates = workloads[workloads["group"].isin(groups)]
    if "pinned_to_one_core" in candidates.columns:  # mariadb_live does not pin the server
        candidates = candidates[~candidates["pinned_to_one_core"].fillna(False).astype(bool)]
    if "differs_beyond_noise" in candidates.columns:
        candidates = candidates[candidates["differs_beyond_noise"].fillna(False).astype(bool)]
    best: tuple[str, Curve, float] | None = None
    for row in candidates.itertuples():
        curve = curves.get(str(row.workload_id))
        if curve is None or curve.sizes.size < 3:
            continue
        gain = curve.peak / max(float(curve.at(float(row.cpu_count))), 1e-9)
        if best is None or gain > best[2]:
            best = (str(row.workload_id), curve, gain)
    return best


def real_comparison(
    name: str,
    *,
    write: Write,
    live: bool = False,
    live_seconds: float = 300.0,
    work_dir: Path = Path("/tmp/pooltune-bench"),
) -> None:
    from benchmarks.live.cases import DATASET_GROUPS
    from benchmarks.live.warm import WARM_SIM_WORKLOADS
    from trainer.bootstrap import bundled_by_domain
    from trainer.sources import datasets

    write(f"real MariaDB ({name}):")
    try:
        dataset = datasets.load_dataset(name)
    except (datasets.DatasetError, FileNotFoundError) as exc:
        write(f"  no real dataset yet ({exc}); the comparison is skipped")
        return
    from trainer.evaluation import baseline_predictors
    from trainer.examples import Example

    # A group's first live workload is the one run as the dataset ran it (hot rows: unsynced).
    live_workload_of: dict[str, str] = {}
    for workload, group in DATASET_GROUPS.items():
        live_workload_of.setdefault(group, workload)
    chosen = clearest_case(dataset, set(live_workload_of))
    if chosen is None:
        write(
            "  no sweep of a workload benchmarks/mariadb_live.py can run differs from the "
            "default beyond its noise; skipped"
        )
        return
    held_out, curve, gain = chosen
    examples: list[Example] = datasets.examples(dataset)
    case = next((e for e in examples if e.origin.endswith(f":{held_out}")), None)
    if case is None:
        write(f"  {held_out} has no example; skipped")
        return
    # Hold the whole workload out (all its client counts), not just this case.
    held = [e for e in examples if e.group == case.group]
    rest = [e for e in examples if e.group != case.group]
    if not rest:
        write(f"  cannot hold {held_out} out: no other workload to train on; skipped")
        return
    starts: list[tuple[str, float]] = [("cold (default)", float(case.host.cpu_count))]
    starts.append(("warm: nearest", float(baseline_predictors(rest)["nearest"]([case])[0])))
    from trainer.evaluation import predict_sizes
    from trainer.search import SearchConfig, search_lightgbm

    # The real cases alone, and with the simulated corpus as the service learns (what
    # `make run` bundles plus these cases: the live warm agent's model).
    simulated = [
        example
        for corpus in bundled_by_domain(Engine.MARIADB)[0]
        for example in datasets.examples(datasets.load_dataset(corpus))[:WARM_SIM_WORKLOADS]
    ]
    for label, training in (("lightgbm", rest), ("lightgbm+sim", simulated + rest)):
        try:
            model = search_lightgbm(
                Engine.MARIADB, training, SearchConfig(trials=3, seed=0, validation_fraction=0.25)
            ).model
        except (ValueError, RuntimeError) as exc:
            write(f"  no {label} model from {len(training)} cases: {exc}")
            continue
        starts.append((f"warm: {label}", float(predict_sizes(model, [case])[0][0])))
    write(
        f"  held-out case {held_out}: best size {curve.best_size:.0f}, {gain:.2f}× the "
        f"default's throughput (beyond the sweep's noise); its workload ({len(held)} cases) "
        f"held out, warm models trained on the {len(rest)} cases of the other workloads"
    )
    for label, size in starts:
        share = float(curve.at(size)) / curve.peak
        write(f"  {label:18s} size {size:5.0f}: measured throughput / best {share:.3f}")
    if live:
        row = dataset.workloads.set_index("workload_id").loc[held_out]
        live_comparison(
            live_workload_of[str(row["group"])],
            int(row["clients"]),
            real_dataset=name,
            agent_seconds=live_seconds,
            work_dir=work_dir,
            write=write,
        )


def live_comparison(
    workload: str,
    clients: int,
    *,
    real_dataset: str,
    agent_seconds: float,
    work_dir: Path,
    write: Write,
) -> None:
    """The agent cold and warm on a fresh MariaDB under ``workload`` × ``clients``."""
    from benchmarks.live.case import CasePlan, case_key, run_case
    from benchmarks.live.report import print_warm_comparison
    from benchmarks.live.warm import WARM_SIM_WORKLOADS, warm_service

    write(
        f"  live: {workload} × {clients} clients on a fresh MariaDB (sweep, then the agent "
        f"cold and warm for {agent_seconds:.0f} s each)"
    )
    raw: dict[str, Any] = {}
    with warm_service(
        workload,
        real_dataset=real_dataset,
        sim_workloads=WARM_SIM_WORKLOADS,
        trials=5,
        work_dir=work_dir / f"warm-{workload}",
        agents=2,  # the cold and the warm agent
    ) as warm:
        plan = CasePlan(
            sizes=[1, 2, 4, 8, 16, 32],
            sweep_seconds=12.0,
            passes=2,
            agent_seconds=agent_seconds,
            ab_seconds=12.0,
            work_dir=work_dir,
            warm=warm,
        )
        run_case(workload, clients, plan, raw)
    cold_key, warm_key = case_key(workload, clients), case_key(workload, clients, warm=True)
    print_warm_comparison(cold_key, [raw[cold_key]], [raw[warm_key]])
