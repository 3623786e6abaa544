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
from pathlib import Path

from agents.knobs import Engine
from benchmarks.live.cli import LiveDefaults, live_parser, run_live
from benchmarks.live.scoring import LiveCaseScore, done_when
from benchmarks.pgbouncer.case import run_case
from benchmarks.pgbouncer.cases import WORKLOADS
from trainer.bootstrap import bundled_by_domain

DEFAULTS = LiveDefaults(
    workloads="select_only,tpcb_like,sleep_20ms",
    workloads_help=f"comma-separated, of {', '.join(WORKLOADS)}",
    clients="32,128",
    sizes="2,4,8,12,20,32,64,128",
    quick_help="sleep_20ms at 32 clients, short",
    work_dir=Path("/tmp/pooltune-bench-pgbouncer"),
    warm_help="after the cold agent, run it again from the real service's recommendation: a "
    "PgBouncer model trained on the real dataset without the workload (needs PostgreSQL)",
    warm_dataset=",".join(bundled_by_domain(Engine.PGBOUNCER)[1]),
)


def parse_args() -> argparse.Namespace:
    args = live_parser((__doc__ or "").split("\n\n")[0], DEFAULTS).parse_args()
    if args.quick:
        args.workloads, args.clients, args.sizes = "sleep_20ms", "32", "4,12,20,32"
        args.sweep_seconds, args.passes, args.agent_seconds = 6.0, 1, 60.0
        args.ab_seconds = 6.0
    return args


def print_done_when(results: list[LiveCaseScore]) -> None:
    for passed, text in done_when(results):
        print(f"[{'ok' if passed else 'NO'}] {text}")


def main() -> None:
    run_live(
        parse_args(),
        run_case,
        workloads=WORKLOADS,
        engine=Engine.PGBOUNCER,
        sim_workloads=0,
        after=print_done_when,
    )


if __name__ == "__main__":
    main()
