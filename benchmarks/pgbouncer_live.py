"""The agent on a live PgBouncer in front of PostgreSQL under pgbench: the oracle sweep vs.
the agent from PgBouncer's default (20).

For each case (pgbench workload × client count) on a fresh PostgreSQL + PgBouncer: an
interleaved sweep of fixed pool sizes (the oracle), the agent for ``--agent-seconds``
(``--warm``: again, starting from the real service's PgBouncer model, trained on the
PgBouncer dataset without the case's workload), and its final size side by side with the
oracle's. Scored as benchmarks/mariadb_live.py scores (docs/lab.md); the last lines are
the done-when checks.

    python -m benchmarks.pgbouncer_live                     # 3 workloads x 2 (about 1 h)
    python -m benchmarks.pgbouncer_live --quick             # one small case (about 3 min)
    python -m benchmarks.pgbouncer_live --workloads sleep_20ms --clients 128 --warm
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
from pathlib import Path
from typing import Any

from agents.knobs import Engine
from benchmarks.live.case import case_key
from benchmarks.live.report import VERDICTS, print_table, print_warm_comparison
from benchmarks.live.scoring import LiveCaseScore, done_when, score_case
from benchmarks.live.warm import warm_service
from benchmarks.pgbouncer.case import run_case
from benchmarks.pgbouncer.cases import WORKLOADS


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        default="select_only,tpcb_like,sleep_20ms",
        help=f"comma-separated, of {', '.join(WORKLOADS)}",
    )
    parser.add_argument("--clients", default="32,128")
    parser.add_argument("--sizes", default="2,4,8,12,20,32,64,128")
    parser.add_argument("--sweep-seconds", type=float, default=12.0)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--agent-seconds", type=float, default=300.0)
    parser.add_argument(
        "--ab-seconds", type=float, default=12.0, help="per leg of the final side-by-side check"
    )
    parser.add_argument("--quick", action="store_true", help="sleep_20ms at 32 clients, short")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/pooltune-bench-pgbouncer"))
    parser.add_argument("--json", type=Path, default=None, help="write every sample here")
    parser.add_argument(
        "--rescore", type=Path, default=None, help="print the table of a --json file; run nothing"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="after the cold agent, run it again from the real service's recommendation: a "
        "PgBouncer model trained on the real dataset without the workload (needs PostgreSQL)",
    )
    parser.add_argument(
        "--warm-first", action="store_true", help="run the warm agent before the cold one"
    )
    parser.add_argument("--warm-dataset", default="pgbouncer-2core-v1")
    parser.add_argument("--warm-trials", type=int, default=5)
    args = parser.parse_args()
    if args.quick:
        args.workloads, args.clients, args.sizes = "sleep_20ms", "32", "4,12,20,32"
        args.sweep_seconds, args.passes, args.agent_seconds = 6.0, 1, 60.0
        args.ab_seconds = 6.0
    return args


def print_done_when(results: list[LiveCaseScore]) -> None:
    for passed, text in done_when(results):
        print(f"[{'ok' if passed else 'NO'}] {text}")


def rescore(recorded: dict[str, Any]) -> None:
    """Print the tables of a ``--json`` file again."""
    cold_cases = {k: v for k, v in recorded.items() if not k.endswith("-warm")}
    results = [
        score_case(key.rpartition("x")[0], int(key.rpartition("x")[2]), case)
        for key, case in cold_cases.items()
    ]
    print_table(results)
    print(VERDICTS)
    for key, case in cold_cases.items():
        if f"{key}-warm" in recorded:
            print(f"\n{key}: cold vs warm")
            print_warm_comparison(key, case, recorded[f"{key}-warm"])
    print_done_when(results)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through run_case's cleanup (servers, pgbench)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    args = parse_args()
    if args.rescore:
        rescore(json.loads(args.rescore.read_text()))
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    sizes = [int(s) for s in args.sizes.split(",")]
    results: list[LiveCaseScore] = []
    raw: dict[str, Any] = {}
    client_counts = [int(c) for c in args.clients.split(",")]
    for workload in args.workloads.split(","):
        if workload not in WORKLOADS:
            raise SystemExit(f"unknown workload {workload!r}; known: {', '.join(WORKLOADS)}")
        with contextlib.ExitStack() as stack:
            warm = None
            if args.warm:
                warm = stack.enter_context(
                    warm_service(
                        workload,
                        real_dataset=args.warm_dataset,
                        sim_workloads=0,
                        trials=args.warm_trials,
                        work_dir=args.work_dir / f"warm-{workload}",
                        agents=2 * len(client_counts),
                        engine=Engine.PGBOUNCER,
                    )
                )
            for clients in client_counts:
                result = run_case(
                    workload,
                    clients,
                    sizes=sizes,
                    sweep_seconds=args.sweep_seconds,
                    passes=args.passes,
                    agent_seconds=args.agent_seconds,
                    ab_seconds=args.ab_seconds,
                    work_dir=args.work_dir,
                    raw=raw,
                    warm=warm,
                    warm_first=args.warm_first,
                )
                results.append(result)
                print_table([result])
                key = case_key(workload, clients)
                if f"{key}-warm" in raw:
                    print_warm_comparison(key, raw[key], raw[f"{key}-warm"])
                if args.json:
                    args.json.write_text(json.dumps(raw, indent=1))
    print()
    print_table(results)
    print(VERDICTS)
    print_done_when(results)


if __name__ == "__main__":
    main()
