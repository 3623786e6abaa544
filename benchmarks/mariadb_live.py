"""The agent on a live MariaDB under sysbench: oracle sweep vs. the agent from the default.

For each case (sysbench workload × client count) on a fresh pool-of-threads MariaDB: an
interleaved sweep of fixed pool sizes (the oracle), the agent for ``--agent-seconds``
(``--warm``: again, starting from the real service's model), and its final size side by side
with the oracle's. What is measured and how it is scored: docs/lab.md.

    python -m benchmarks.mariadb_live                       # 3 workloads x 2 (about 1 h)
    python -m benchmarks.mariadb_live --quick               # one small case (about 5 min)
    python -m benchmarks.mariadb_live --workloads io_bound --clients 64 --warm   # about 15 min
    python -m benchmarks.mariadb_live --workloads io_bound --clients 64 --warm --repeats 3
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from agents.knobs import Engine
from benchmarks.live.case import run_case
from benchmarks.live.cases import WORKLOADS
from benchmarks.live.cli import LiveDefaults, live_parser, run_live
from benchmarks.live.warm import WARM_SIM_WORKLOADS
from trainer.bootstrap import bundled_by_domain

DEFAULTS = LiveDefaults(
    workloads="read_only,read_write,io_bound",
    workloads_help=f"comma-separated, of {', '.join(WORKLOADS)} (point_select: too noisy on "
    "2 cores)",
    clients="16,64",
    sizes="1,2,4,8,16,32",
    quick_help="read_only at 16 clients, short",
    work_dir=Path("/tmp/pooltune-bench"),
    warm_help="after the cold agent, run it again from the real service's recommendation: a "
    "model trained on sim-v2 and the real datasets (--warm-dataset) without the workload "
    "(needs PostgreSQL)",
    warm_dataset=",".join(bundled_by_domain(Engine.MARIADB)[1]),
)


def parse_args() -> argparse.Namespace:
    parser = live_parser((__doc__ or "").split("\n\n")[0], DEFAULTS)
    parser.add_argument("--warm-sim-workloads", type=int, default=WARM_SIM_WORKLOADS)
    parser.add_argument(
        "--sync-timing",
        action="store_true",
        help="start every server with performance_schema's synchronisation instruments on, "
        "as the datasets' servers and --warm runs do (without: off, a server's default)",
    )
    args = parser.parse_args()
    if args.quick:
        args.workloads, args.clients, args.sizes = "read_only", "16", "1,2,4,8,16"
        args.sweep_seconds, args.agent_seconds = 8.0, 150.0
    return args


def main() -> None:
    args = parse_args()
    run_live(
        args,
        functools.partial(run_case, sync_timing=args.sync_timing),
        workloads=WORKLOADS,
        engine=Engine.MARIADB,
        sim_workloads=args.warm_sim_workloads,
    )


if __name__ == "__main__":
    main()
