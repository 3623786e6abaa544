"""Regenerate ``datasets/pgbouncer-<cores>core-v1/``: real pool-size sweeps of PgBouncer in
front of PostgreSQL under pgbench.

Starts a private PostgreSQL and PgBouncers (lab/), runs each case's pgbench load while the
agent's sweep engine measures ``default_pool_size``, and writes each case as soon as it is
measured (``cases/<case>.json``), then the dataset's tables, manifest and README from every
case so far. A rerun skips the cases already measured; cases of another machine, other
versions or another timing are refused, never mixed. How and why: docs/datasets.md. The
full run takes about 100 minutes on a quiet machine; ``--quick`` two short cases.

    .venv/bin/python -m scripts.make_pgbouncer_dataset [--quick] [--cases sleep_5ms --out DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.sweep import format_table
from scripts.pgbouncer_dataset.cases import (
    FULL_TIMING,
    QUICK_TIMING,
    REPO,
    Case,
    Timing,
    select_cases,
)
from scripts.pgbouncer_dataset.measure import DatasetLab, measure_case, start_lab
from scripts.pgbouncer_dataset.readme import readme, results_table
from scripts.pgbouncer_dataset.store import CaseStore, MixError, machine
from scripts.pgbouncer_dataset.tables import build_tables, case_rows
from trainer.sources.datasets import write_dataset

logger = logging.getLogger("make_pgbouncer_dataset")

COMMAND = ".venv/bin/python -m scripts.make_pgbouncer_dataset"


def _names(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two short cases (~1 minute)")
    parser.add_argument("--cases", default="", help="comma list of workload names to run")
    parser.add_argument("--modes", default="", help="comma list of pool modes to run")
    parser.add_argument("--clients", default="", help="comma list of client counts to run")
    parser.add_argument("--out", type=Path, default=None, help="dataset directory")
    parser.add_argument("--work-dir", type=Path, default=None, help="state files (tmp)")
    parser.add_argument(
        "--tables-only",
        action="store_true",
        help="rebuild the tables, manifest and README from the stored cases and measure "
        "nothing (no server started; the cases keep the machine they were measured on)",
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        help="seconds to wait before each case for other processes to use under a quarter "
        "of a core (default 0: measure it, do not wait)",
    )
    args = parser.parse_args(argv)
    try:
        args.selected = select_cases(
            quick=args.quick,
            workloads=_names(args.cases),
            modes=_names(args.modes),
            clients=[int(c) for c in _names(args.clients)],
        )
    except ValueError as exc:
        parser.error(str(exc))
    return args


def timing_record(timing: Timing) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in timing.__dict__.items()}


def write(
    out: Path,
    store: CaseStore,
    *,
    name: str,
    order: Sequence[Case],
    host: dict[str, Any],
    timing: dict[str, Any],
    command: str,
) -> None:
    """The tables, manifest and README from every stored case (the plan's order first);
    ``timing`` as :func:`timing_record` gives it."""
    documents = store.done()
    rank = {case.case_id: index for index, case in enumerate(order)}
    ordered = sorted(
        documents.values(), key=lambda d: (rank.get(d["case_id"], 10**6), d["case_id"])
    )
    workloads, curves = build_tables(ordered)
    description: dict[str, Any] = {
        "machine": host,
        "engine_version": str(workloads["engine_version"].iloc[0]),
        "timing": timing,
        "cases": [d["case_id"] for d in ordered],
        "other_cpu_cores_mean": float(workloads["other_cpu_cores"].mean()),
    }
    manifest = write_dataset(
        out,
        name=name,
        workloads=workloads,
        curves=curves,
        command=command,
        description=description,
    )
    (out / "README.md").write_text(readme(manifest, workloads=workloads, description=description))
    sys.stdout.write(f"\n{results_table(workloads)}\n\nwrote {out} ({len(ordered)} cases)\n")


def measure_missing(
    cases: Sequence[Case],
    *,
    store: CaseStore,
    host: dict[str, Any],
    timing: Timing,
    stop: threading.Event,
    work_dir: Path,
    wait_quiet_s: float,
    on_case: Any,
) -> int:
    """Measure ``cases`` in order, storing each when done; a failed case is logged and
    skipped. Returns how many were measured."""
    lab: DatasetLab | None = None
    measured = 0
    started = time.monotonic()
    try:
        for number, case in enumerate(cases, start=1):
            if stop.is_set():
                break
            if lab is None:
                lab = start_lab(work_dir)
            logger.info(
                "case %d/%d: %s, %.0f min elapsed",
                number,
                len(cases),
                case.case_id,
                (time.monotonic() - started) / 60,
            )
            try:
                result = measure_case(lab, case, timing, stop=stop, wait_quiet_s=wait_quiet_s)
            except KeyboardInterrupt:
                break
            except Exception:
                if stop.is_set():
                    break
                logger.exception("case %s failed; going on", case.case_id)
                continue
            store.write(
                case.case_id,
                {"machine": host, "timing": timing_record(timing)} | case_rows(result, host),
            )
            measured += 1
            sys.stdout.write(f"\n== {case.case_id}\n{format_table(result.sweep)}\n")
            sys.stdout.flush()
            on_case()
    finally:
        if lab is not None:
            lab.close()
    return measured


def rebuild_tables(out: Path, store: CaseStore, *, name: str, order: Sequence[Case]) -> int:
    """``--tables-only``: the files from the stored cases, with the machine, timing and
    command they were measured with."""
    try:
        documents = store.done()
    except MixError as exc:
        logger.error("%s", exc)
        return 2
    if not documents:
        logger.error("%s holds no measured case", store.directory)
        return 1
    first = next(iter(documents.values()))
    manifest = out / "MANIFEST.json"
    command = json.loads(manifest.read_text())["command"] if manifest.exists() else COMMAND
    write(
        out,
        store,
        name=name,
        order=order,
        host=first["machine"],
        timing=first["timing"],
        command=command,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("agents").setLevel(logging.WARNING)
    name = f"pgbouncer-{os.cpu_count() or 1}core-v1"
    timing = QUICK_TIMING if args.quick else FULL_TIMING
    out: Path = args.out or (
        Path(tempfile.gettempdir()) / f"pooltune-{name}-quick"
        if args.quick
        else REPO / "datasets" / name
    )
    store = CaseStore(out / "cases")
    if args.tables_only:
        return rebuild_tables(out, store, name=name, order=args.selected)
    host = machine()
    try:
        store.check_compatible(host, timing_record(timing))
        done = store.done()
    except MixError as exc:
        logger.error("%s", exc)
        return 2
    cases: list[Case] = args.selected
    todo = [case for case in cases if case.case_id not in done]
    logger.info(
        "%d of %d cases already measured in %s; %d to measure, about %.0f minutes (+ setup)",
        len(cases) - len(todo),
        len(cases),
        out,
        len(todo),
        sum(timing.case_seconds(c) for c in todo) / 60,
    )
    arguments = list(argv if argv is not None else sys.argv[1:])
    command = COMMAND + (" " + shlex.join(arguments) if arguments else "")

    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        logger.warning("%s: stopping after restoring the pool size", signal.Signals(signum).name)
        stop.set()

    previous = {
        signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)
    }

    def rewrite() -> None:
        write(
            out,
            store,
            name=name,
            order=cases,
            host=host,
            timing=timing_record(timing),
            command=command,
        )

    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="pooltune-pgb-dataset-"))
    try:
        measure_missing(
            todo,
            store=store,
            host=host,
            timing=timing,
            stop=stop,
            work_dir=work_dir,
            wait_quiet_s=args.wait_quiet,
            on_case=rewrite,
        )
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not store.done():
        logger.error("nothing measured")
        return 1
    if not todo:
        rewrite()
    if stop.is_set():
        logger.warning("interrupted: %s holds the cases measured so far", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
