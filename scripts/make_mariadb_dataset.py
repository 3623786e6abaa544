"""Measure ``datasets/mariadb-<cores>core-<v1|v2|v3|v4>/``: real pool-size sweeps under sysbench.

Starts private MariaDB servers (lab/), runs each case's sysbench load while the agent's
sweep engine measures the pool size, and stores every case the moment it ends under
``<out>/cases/``; a rerun skips the finished cases, so the measurement runs in chunks.
When every case is done the dataset (Parquet tables, MANIFEST, README) is written. How and
why: docs/datasets.md.

    .venv/bin/python -m scripts.make_mariadb_dataset --list                 # states, estimates
    .venv/bin/python -m scripts.make_mariadb_dataset --max-minutes 35       # one chunk
    .venv/bin/python -m scripts.make_mariadb_dataset --assemble [--partial]
    .venv/bin/python -m scripts.make_mariadb_dataset --dataset v1           # v1, as it was
    .venv/bin/python -m scripts.make_mariadb_dataset --quick                # smoke run
    .venv/bin/python -m scripts.make_mariadb_dataset --dataset v4 --out DIR --cases ID --settle 3
        # a case again, 3 s dropped after each change (docs/datasets.md, "Paired 2-s visits")
"""

from __future__ import annotations

import argparse
import logging
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.mariadb import release_of
from scripts.mariadb_dataset.assemble import AssembleError, assemble
from scripts.mariadb_dataset.cases import (
    QUICK_TIMING,
    REPO,
    Case,
    Catalog,
    Timing,
    select_cases,
)
from scripts.mariadb_dataset.catalogs import CATALOGS, LATEST, catalog
from scripts.mariadb_dataset.host import host_facts
from scripts.mariadb_dataset.listing import format_listing
from scripts.mariadb_dataset.readme import results_table
from scripts.mariadb_dataset.records import read_records
from scripts.mariadb_dataset.resume import (
    BUSY_CORES,
    CaseState,
    MachineMismatch,
    case_states,
    check_same_machine,
    counts_as_done,
    noted_differences,
    within_budget,
)
from scripts.mariadb_dataset.runner import measure_cases

logger = logging.getLogger("make_mariadb_dataset")

COMMAND = ".venv/bin/python -m scripts.make_mariadb_dataset"
#: The chunk length ``--list`` plans with when ``--max-minutes`` is not given.
LIST_CHUNK_MINUTES = 36.0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dataset", default=LATEST, choices=sorted(CATALOGS), help="catalog")
    parser.add_argument("--quick", action="store_true", help="smoke run: short timing")
    parser.add_argument(
        "--cases", default="", help="comma list of workload names or case ids (wildcards ok)"
    )
    parser.add_argument("--clients", default="", help="comma list of client counts to run")
    parser.add_argument("--out", type=Path, default=None, help="dataset directory")
    parser.add_argument("--work-dir", type=Path, default=None, help="logs and state (tmp)")
    parser.add_argument(
        "--list", action="store_true", help="show each case's state; measure nothing"
    )
    parser.add_argument(
        "--assemble", action="store_true", help="write the dataset from the finished cases only"
    )
    parser.add_argument(
        "--partial", action="store_true", help="with --assemble: even if cases are missing"
    )
    parser.add_argument(
        "--max-minutes", type=float, default=None, help="stop before the estimate passes this"
    )
    parser.add_argument(
        "--busy-cores",
        type=float,
        default=BUSY_CORES,
        help="other processes' mean CPU (cores) above which a case is busy and measured again",
    )
    parser.add_argument(
        "--accept-busy", action="store_true", help="keep busy cases instead of measuring again"
    )
    parser.add_argument(
        "--allow-other-machine",
        action="store_true",
        help="mix cases from another host, CPU, MariaDB or sysbench version",
    )
    parser.add_argument("--redo", action="store_true", help="measure the selected cases again")
    parser.add_argument(
        "--settle",
        type=float,
        default=None,
        metavar="S",
        help="drop S seconds after each change, each visit longer by as much (needs --out: "
        "such cases are not the catalog's)",
    )
    args = parser.parse_args(argv)
    args.catalog = catalog(args.dataset)
    if args.settle is not None and (args.out is None or args.settle <= 0):
        parser.error("--settle: give seconds > 0, and an --out of their own")
    try:
        args.selected = select_cases(
            args.catalog,
            quick=args.quick,
            patterns=[c.strip() for c in args.cases.split(",") if c.strip()],
            clients=[int(c) for c in args.clients.split(",") if c.strip()],
        )
    except ValueError as exc:
        parser.error(str(exc))
    return args


def run_timing(args: argparse.Namespace) -> Timing:
    """The timing this run measures and judges stored cases with: the catalog's, or the
    smoke run's (paired when the catalog is); with ``--settle``, its longer discard."""
    known: Catalog = args.catalog
    timing = replace(QUICK_TIMING, paired=known.timing.paired) if args.quick else known.timing
    return timing if args.settle is None else timing.settled(args.settle)


def output_dir(args: argparse.Namespace, name: str) -> Path:
    if args.out is not None:
        return Path(args.out)
    if args.quick:
        return Path(tempfile.gettempdir()) / f"pooltune-{name}-quick"
    return REPO / "datasets" / name


def dataset_command(args: argparse.Namespace) -> str:
    """The command the MANIFEST names: the measuring command without the chunking flags."""
    options = ["--dataset", args.catalog.version]
    if args.quick:
        options.append("--quick")
    if args.out is not None:
        options += ["--out", str(args.out)]
    if args.allow_other_machine:
        options.append("--allow-other-machine")
    if args.settle is not None:
        options += ["--settle", f"{args.settle:g}"]
    return f"{COMMAND} {shlex.join(options)}"


def chunk_command(arguments: Sequence[str], max_minutes: float) -> str:
    """The command of one chunk: these arguments without ``--list`` and with
    ``--max-minutes``."""
    kept: list[str] = []
    skip = False
    for argument in arguments:
        if skip:
            skip = False
        elif argument == "--max-minutes":
            skip = True
        elif argument != "--list" and not argument.startswith("--max-minutes="):
            kept.append(argument)
    return " ".join([COMMAND, shlex.join([*kept, "--max-minutes", f"{max_minutes:g}"])])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("agents").setLevel(logging.WARNING)
    known: Catalog = args.catalog
    host = host_facts()
    name = known.dataset_name(int(host["cpu_count"]))
    timing = run_timing(args)
    out = output_dir(args, name)
    records = read_records(out)
    for difference in noted_differences(records.values(), host):
        logger.warning("a stored case differs from this host in %s", difference)
    # The whole dataset (every case a later --assemble takes) and this run's selection.
    dataset_cases = args.selected if args.quick else known.cases()
    everything = case_states(
        dataset_cases, records, timing=timing, host=host, busy_cores=args.busy_cores
    )
    selected_ids = {c.workload_id for c in args.selected}
    selected = [s for s in everything if s.case.workload_id in selected_ids]
    arguments = list(argv if argv is not None else sys.argv[1:])
    run_command = COMMAND + (" " + shlex.join(arguments) if arguments else "")

    if args.list:
        sys.stdout.write(
            format_listing(
                selected,
                timing,
                header=f"{name} (catalog {known.version}) in {out}",
                max_minutes=args.max_minutes or LIST_CHUNK_MINUTES,
                accept_busy=args.accept_busy,
                redo=args.redo,
                command=chunk_command(arguments, args.max_minutes or LIST_CHUNK_MINUTES),
            )
            + "\n"
        )
        return 0
    if args.assemble:
        return write(args, out, name=name, states=everything, partial=args.partial)

    try:
        check_same_machine(everything, allow=args.allow_other_machine, accept_busy=args.accept_busy)
    except MachineMismatch as exc:
        logger.error("%s", exc)
        return 2
    chosen = within_budget(
        selected,
        timing,
        max_minutes=args.max_minutes,
        accept_busy=args.accept_busy,
        redo=args.redo,
    )
    logger.info(
        "%s in %s: %d of %d selected cases to measure in this run",
        name,
        out,
        len(chosen),
        len(selected),
    )

    stop = threading.Event()
    if chosen:
        try:
            measure(args, chosen, name=name, out=out, host=host, stop=stop, command=run_command)
        except MachineMismatch as exc:
            logger.error("%s", exc)
            return 2
    everything = case_states(
        dataset_cases, read_records(out), timing=timing, host=host, busy_cores=args.busy_cores
    )
    left = [s for s in everything if not counts_as_done(s, accept_busy=args.accept_busy)]
    if stop.is_set() or left:
        logger.info(
            "%d case(s) of %s not done yet (%s); run the same command again to go on, "
            "`--list` to see them",
            len(left),
            name,
            ", ".join(s.case.workload_id for s in left[:6]) + (" …" if len(left) > 6 else ""),
        )
        return 0 if not stop.is_set() else 1
    return write(args, out, name=name, states=everything, partial=False)


def measure(
    args: argparse.Namespace,
    chosen: list[Case],
    *,
    name: str,
    out: Path,
    host: dict[str, Any],
    stop: threading.Event,
    command: str,
) -> None:
    """Measure ``chosen``; SIGINT and SIGTERM stop the run once the knobs are restored."""

    def on_signal(signum: int, _frame: object) -> None:
        logger.warning("%s: stopping after restoring the knobs", signal.Signals(signum).name)
        stop.set()

    def check_engine(version: str) -> None:
        # The pre-check compared the stored cases with `mariadbd --version`; the running
        # server must be that binary.
        if release_of(version) != host["engine_version"] and not args.allow_other_machine:
            raise MachineMismatch(
                f"the server reports {version}, but `mariadbd --version` says "
                f"{host['engine_version']}: which server is this?"
            )

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="pooltune-dataset-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    logger.info("logs in %s", work_dir)
    try:
        measure_cases(
            chosen,
            dataset=name,
            out=out,
            timing=run_timing(args),
            host=host,
            work_dir=work_dir,
            stop=stop,
            busy_cores=args.busy_cores,
            command=command,
            on_engine_version=check_engine,
        )
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def write(
    args: argparse.Namespace, out: Path, *, name: str, states: list[CaseState], partial: bool
) -> int:
    """Assemble the dataset and print its results table."""
    try:
        manifest, workloads = assemble(
            out,
            name=name,
            catalog=args.catalog,
            timing=run_timing(args),
            states=states,
            command=dataset_command(args),
            busy_cores=args.busy_cores,
            partial=partial,
            accept_busy=args.accept_busy,
            allow_other_machine=args.allow_other_machine,
        )
    except AssembleError as exc:
        logger.error("%s", exc)
        return 2
    sys.stdout.write(
        f"\n{results_table(workloads)}\n\nwrote {out} ({manifest['workloads']} cases)\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
