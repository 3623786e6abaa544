"""The agent on a live MariaDB under sysbench: oracle sweep vs. the agent from the default.

For each case (sysbench workload × client count) on a fresh pool-of-threads MariaDB: an
interleaved sweep of fixed pool sizes (the oracle), the agent for ``--agent-seconds``
(``--warm``: again, starting from the real service's model), and its final size side by side
with the oracle's. What is measured and how it is scored: docs/lab.md.

    python -m benchmarks.mariadb_live                       # 3 workloads x 2 (about 1 h)
    python -m benchmarks.mariadb_live --quick               # one small case (about 5 min)
    python -m benchmarks.mariadb_live --workloads io_bound --clients 64 --warm   # about 15 min
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
from pathlib import Path
from typing import Any

from benchmarks.live.case import case_key, run_case
from benchmarks.live.cases import WORKLOADS
from benchmarks.live.report import VERDICTS, print_table, print_warm_comparison
from benchmarks.live.scoring import LiveCaseScore, score_case
from benchmarks.live.warm import WARM_SIM_WORKLOADS, warm_service


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        default="read_only,read_write,io_bound",
        help=f"comma-separated, of {', '.join(WORKLOADS)} (point_select: too noisy on 2 cores)",
    )
    parser.add_argument("--clients", default="16,64")
    parser.add_argument("--sizes", default="1,2,4,8,16,32")
    parser.add_argument("--sweep-seconds", type=float, default=12.0)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--agent-seconds", type=float, default=300.0)
    parser.add_argument(
        "--ab-seconds", type=float, default=12.0, help="per leg of the final side-by-side check"
    )
    parser.add_argument("--quick", action="store_true", help="read_only at 16 clients, short")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/pooltune-bench"))
    parser.add_argument("--json", type=Path, default=None, help="write every sample here")
    parser.add_argument(
        "--rescore", type=Path, default=None, help="print the table of a --json file; run nothing"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="after the cold agent, run it again from the real service's recommendation: a "
        "model trained on sim-v1 and the real dataset without the workload (needs PostgreSQL)",
    )
    parser.add_argument(
        "--warm-first", action="store_true", help="run the warm agent before the cold one"
    )
    parser.add_argument("--warm-dataset", default="mariadb-2core-v1")
    parser.add_argument("--warm-sim-workloads", type=int, default=WARM_SIM_WORKLOADS)
    parser.add_argument("--warm-trials", type=int, default=5)
    args = parser.parse_args()
    if args.quick:
        args.workloads, args.clients, args.sizes = "read_only", "16", "1,2,4,8,16"
        args.sweep_seconds, args.agent_seconds = 8.0, 150.0
    return args


def rescore(recorded: dict[str, Any]) -> None:
    """Print the tables of a ``--json`` file again."""
    cold_cases = {k: v for k, v in recorded.items() if not k.endswith("-warm")}
    print_table(
        [
            score_case(key.rpartition("x")[0], int(key.rpartition("x")[2]), case)
            for key, case in cold_cases.items()
        ]
    )
    print(VERDICTS)
    for key, case in cold_cases.items():
        if f"{key}-warm" in recorded:
            print(f"\n{key}: cold vs warm")
            print_warm_comparison(key, case, recorded[f"{key}-warm"])


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through run_case's cleanup (servers, sysbench)


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
        with contextlib.ExitStack() as stack:
            warm = None
            if args.warm:
                warm = stack.enter_context(
                    warm_service(
                        workload,
                        real_dataset=args.warm_dataset,
                        sim_workloads=args.warm_sim_workloads,
                        trials=args.warm_trials,
                        work_dir=args.work_dir / f"warm-{workload}",
                        agents=2 * len(client_counts),  # a cold and a warm agent each
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


if __name__ == "__main__":
    main()
