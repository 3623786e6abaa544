"""The command line both live benchmarks share (benchmarks.mariadb_live and
benchmarks.pgbouncer_live): the options, ``--rescore``, and the run over workloads × client
counts, one warm service per workload. Each engine supplies its defaults and its case."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.knobs import Engine
from benchmarks.live.case import CasePlan, case_key, recorded_runs
from benchmarks.live.report import VERDICTS, print_table, print_warm_comparison
from benchmarks.live.scoring import LiveCaseScore, score_case
from benchmarks.live.warm import WarmService, warm_service

#: An engine's live case: (workload, clients, plan, raw samples) → its score.
RunCase = Callable[[str, int, CasePlan, dict[str, Any]], LiveCaseScore]
#: What an engine prints after the final table (e.g. its done-when checks).
AfterTable = Callable[[list[LiveCaseScore]], None]


@dataclass(frozen=True)
class LiveDefaults:
    """One engine's defaults and help texts for :func:`live_parser`."""

    workloads: str
    workloads_help: str
    clients: str
    sizes: str
    quick_help: str
    work_dir: Path
    warm_help: str
    warm_dataset: str


def live_parser(description: str, defaults: LiveDefaults) -> argparse.ArgumentParser:
    """The options of a live benchmark; the engine adds its own and applies ``--quick``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workloads", default=defaults.workloads, help=defaults.workloads_help)
    parser.add_argument("--clients", default=defaults.clients)
    parser.add_argument("--sizes", default=defaults.sizes)
    parser.add_argument("--sweep-seconds", type=float, default=12.0)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--agent-seconds", type=float, default=300.0)
    parser.add_argument(
        "--ab-seconds", type=float, default=12.0, help="per leg of the final side-by-side check"
    )
    parser.add_argument("--quick", action="store_true", help=defaults.quick_help)
    parser.add_argument("--work-dir", type=Path, default=defaults.work_dir)
    parser.add_argument("--json", type=Path, default=None, help="write every sample here")
    parser.add_argument(
        "--rescore", type=Path, default=None, help="print the table of a --json file; run nothing"
    )
    parser.add_argument("--warm", action="store_true", help=defaults.warm_help)
    parser.add_argument(
        "--warm-first", action="store_true", help="run the warm agent before the cold one"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="with --warm: cold and warm runs each per case, in pairs whose order alternates "
        "(cold-warm, warm-cold, …), one sweep for all",
    )
    parser.add_argument(
        "--warm-dataset",
        default=defaults.warm_dataset,
        help="comma-separated real datasets the warm model learns from, without the workload",
    )
    parser.add_argument("--warm-trials", type=int, default=5)
    parser.add_argument(
        "--control",
        action="store_true",
        help="before the first agent run, hold the default size as long as an agent runs, "
        "with no agent: the server's own drift, scored as the agent's safety (column alone)",
    )
    return parser


def rescore(recorded: dict[str, Any], *, after: AfterTable | None = None) -> None:
    """Print the tables of a ``--json`` file again."""
    cold_cases = {k: v for k, v in recorded.items() if "-" not in k}  # a case's first run
    results = [
        score_case(key.rpartition("x")[0], int(key.rpartition("x")[2]), case)
        for key, case in cold_cases.items()
    ]
    print_table(results)
    print(VERDICTS)
    for key in cold_cases:
        _print_warm(recorded, key)
    if after is not None:
        after(results)


def _print_warm(raw: dict[str, Any], key: str) -> None:
    """Cold vs warm for case ``key``, when it has warm runs."""
    warm = recorded_runs(raw, key, warm=True)
    if warm:
        print(f"\n{key}: cold vs warm")
        print_warm_comparison(key, recorded_runs(raw, key, warm=False), warm)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through run_case's cleanup (servers, load generator)


def run_live(
    args: argparse.Namespace,
    run_case: RunCase,
    *,
    workloads: Collection[str],
    engine: Engine,
    sim_workloads: int,
    after: AfterTable | None = None,
) -> None:
    """``--rescore``, or every case of ``args`` through ``run_case``: a table per case, then
    all of them (and ``after``). With ``--warm``, each workload gets a warm service with a
    ``sim_workloads``-strong sim share, shared by its cold and warm agents (``--repeats``
    of each per case)."""
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be at least 1, not {args.repeats}")
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    if args.rescore:
        rescore(json.loads(args.rescore.read_text()), after=after)
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    sizes = [int(s) for s in args.sizes.split(",")]
    results: list[LiveCaseScore] = []
    raw: dict[str, Any] = {}
    client_counts = [int(c) for c in args.clients.split(",")]
    for workload in args.workloads.split(","):
        if workload not in workloads:
            raise SystemExit(f"unknown workload {workload!r}; known: {', '.join(workloads)}")
        with contextlib.ExitStack() as stack:
            warm: WarmService | None = None
            if args.warm:
                warm = stack.enter_context(
                    warm_service(
                        workload,
                        real_dataset=args.warm_dataset,
                        sim_workloads=sim_workloads,
                        trials=args.warm_trials,
                        work_dir=args.work_dir / f"warm-{workload}",
                        # a cold and a warm agent per repeat of each case
                        agents=2 * args.repeats * len(client_counts),
                        engine=engine,
                    )
                )
            plan = CasePlan(
                sizes=sizes,
                sweep_seconds=args.sweep_seconds,
                passes=args.passes,
                agent_seconds=args.agent_seconds,
                ab_seconds=args.ab_seconds,
                work_dir=args.work_dir,
                warm=warm,
                warm_first=args.warm_first,
                repeats=args.repeats,
                control=args.control,
            )
            for clients in client_counts:
                result = run_case(workload, clients, plan, raw)
                results.append(result)
                print_table([result])
                _print_warm(raw, case_key(workload, clients))
                if args.json:
                    args.json.write_text(json.dumps(raw, indent=1))
    print()
    print_table(results)
    print(VERDICTS)
    if after is not None:
        after(results)
