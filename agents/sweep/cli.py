"""``pooltune-agent sweep``: measure the server's curve over one knob.

Wired into ``agents/cli.py`` with :func:`add_parser` and :func:`run`; also runnable alone
as ``python -m agents.sweep.cli sweep ...``. The original tuple is saved in the agent's
state file before the first change and restored at the end, on SIGINT/SIGTERM and on
errors; after a ``kill -9``, ``pooltune-agent restore`` (or ``run``) puts it back. Exit
codes are :mod:`agents.console`'s (130: interrupted, the tuple was restored).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

from agents import knobs as knob_catalog
from agents.config import DEFAULT_CONFIG_PATH, AgentConfig, ConfigError, load_config
from agents.console import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_MISCONFIGURED,
    EXIT_OK,
    EXIT_STATE,
    EXIT_UNREACHABLE,
    err,
    fail,
    out,
)
from agents.state import OriginalTupleFile, StateError
from agents.sweep.curve import SweepResult
from agents.sweep.output import format_table, write_csv, write_plot
from agents.sweep.plan import DEFAULT_GRIDS, SweepError, SweepInterrupted, SweepPlan
from agents.sweep.runner import Progress, Sweeper
from agents.targets.base import TargetMisconfigured, TargetUnavailable
from agents.wiring import make_target

logger = logging.getLogger(__name__)

COMMAND = "sweep"


def _fail(code: int, message: str) -> int:
    return fail(code, message, command=f"pooltune-agent {COMMAND}")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def parse_values(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` → (1, 2, 4); refuses empty items, non-integers and duplicates."""
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items):
        raise argparse.ArgumentTypeError(f"--values {text!r}: expected a comma list like 1,2,4")
    try:
        values = tuple(int(item) for item in items)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--values {text!r}: every value must be an integer"
        ) from None
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"--values {text!r}: duplicate values")
    return values


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``sweep`` subcommand to ``pooltune-agent``'s subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        COMMAND,
        help="measure throughput over a grid of one knob's values, then restore the knobs",
        description="Hold each value of a knob for --dwell seconds, in --repeats interleaved "
        "passes over the grid (forwards, backwards, balanced) so drift does not alias onto "
        "the grid; drop the samples right after each change; print the curve, write it to "
        "a CSV (plus a PNG when matplotlib is installed) and restore the original tuple.",
    )
    parser.add_argument(
        "-c",
        "--config",
        type=Path,
        default=Path(os.environ.get("POOLTUNE_AGENT_CONFIG", DEFAULT_CONFIG_PATH)),
        help="agent TOML configuration: the target connection, bounds and state_dir "
        f"(default: $POOLTUNE_AGENT_CONFIG or {DEFAULT_CONFIG_PATH})",
    )
    parser.add_argument(
        "--knob",
        default=None,
        help="the knob to sweep (default: the engine's pool size: thread_pool_size, "
        "default_pool_size)",
    )
    grid = parser.add_mutually_exclusive_group()
    grid.add_argument("--values", type=parse_values, help="comma list of values, e.g. 1,2,4,8")
    grid.add_argument(
        "--grid",
        action="store_true",
        help="use the knob's default grid (the default when --values is not given): "
        + "; ".join(f"{k}: {','.join(map(str, v))}" for k, v in DEFAULT_GRIDS.items()),
    )
    parser.add_argument(
        "--dwell", type=_positive_float, default=6.0, help="seconds per visit (default: 6)"
    )
    parser.add_argument(
        "--repeats", type=_count, default=3, help="interleaved passes over the grid (default: 3)"
    )
    parser.add_argument(
        "--sample-period",
        type=_positive_float,
        default=None,
        help="seconds per sample (default: [agent] sample_period_s)",
    )
    parser.add_argument(
        "--discard",
        type=int,
        default=None,
        help="samples dropped after each change (default: [agent] settle_samples)",
    )
    parser.add_argument(
        "--metric",
        choices=("transactions", "queries"),
        default=None,
        help="throughput measure (default: [target] throughput_metric)",
    )
    parser.add_argument(
        "--order",
        choices=("balanced", "shuffle"),
        default="balanced",
        help="visit order per pass: balanced (forwards, backwards, then the values measured "
        "latest so far first) or a seeded shuffle",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --order shuffle")
    parser.add_argument(
        "--reference",
        type=int,
        default=None,
        metavar="VALUE",
        help="pair the sweep: visit VALUE (added to the grid if missing) before and after "
        "every other visit and read each value as a ratio to it, so a server whose level "
        "moves meanwhile (another load, a phase, caches) does not decide the curve; about "
        'twice as long (docs/agent.md, "The sweep")',
    )
    parser.add_argument(
        "--baseline",
        type=float,
        default=0.0,
        help="seconds of profiling at the current tuple before the first change (default: 0)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="CSV of the curve (default: ./pooltune-sweep-<knob>-<time>.csv); every sample "
        "goes to <stem>-samples.csv and the plot to <stem>.png beside it",
    )
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--enable-latency",
        action="store_true",
        help="install and switch on the query_response_time plugin to measure latency",
    )
    return parser


def build_plan(config: AgentConfig, args: argparse.Namespace) -> SweepPlan:
    """The plan from the arguments and the config; raises ConfigError / SweepError."""
    engine = config.target.engine
    try:
        knob = knob_catalog.knob(engine, args.knob or knob_catalog.POOL_SIZE_KNOB[engine])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.values is not None:
        values = tuple(args.values)
    elif knob.name in DEFAULT_GRIDS:
        low, high = config.knob_bounds(knob.name)
        values = tuple(v for v in DEFAULT_GRIDS[knob.name] if low <= v <= high)
    else:
        raise ConfigError(f"no default grid for {knob.name}: pass --values")
    if args.reference is not None and args.reference not in values:
        values = tuple(sorted((*values, args.reference)))
    low, high = config.knob_bounds(knob.name)
    outside = [v for v in values if not low <= v <= high]
    if outside:
        raise ConfigError(
            f"{knob.name} values {outside} are outside the bounds [{low}, {high}] "
            "(the config's [bounds], else the server's)"
        )
    return SweepPlan(
        knob=knob.name,
        values=values,
        dwell_s=args.dwell,
        repeats=args.repeats,
        sample_period_s=args.sample_period or config.agent.sample_period_s,
        discard_samples=config.agent.settle_samples if args.discard is None else args.discard,
        metric=args.metric or config.target.throughput_metric,
        order=args.order,
        seed=args.seed,
        baseline_s=max(0.0, args.baseline),
        reference=args.reference,
    )


def _confirm(plan: SweepPlan, config: AgentConfig, assume_yes: bool) -> bool:
    minutes = plan.expected_duration_s / 60
    err(
        f"This changes {plan.knob} on {config.target.host}:{config.target.port} "
        f"over {list(plan.values)} ({plan.repeats} passes, {plan.dwell_s:g}s each: "
        f"about {minutes:.1f} min) and restores it at the end."
    )
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        raise ConfigError("not interactive: pass --yes to confirm the sweep")
    answer = input("Go on? [y/N] ").strip().lower()
    return answer in {"y", "yes"}


def _progress(plan: SweepPlan) -> Any:
    unit = "tps" if plan.metric == "transactions" else "qps"

    def report(progress: Progress) -> None:
        left = int(progress.remaining_s)
        err(
            f"[{progress.visit:>3}/{progress.visits}] pass {progress.repeat + 1} "
            f"{plan.knob}={progress.value}: {progress.visit_mean:.1f} {unit} "
            f"({left // 60}m{left % 60:02d}s left)"
        )

    return report


def _default_out(knob: str) -> Path:
    return Path(f"pooltune-sweep-{knob}-{datetime.now():%Y%m%d-%H%M%S}.csv")


def write_outputs(result: SweepResult, curve_csv: Path, *, plot: bool) -> list[Path]:
    """CSV (always), samples CSV, profile JSON and the PNG when possible."""
    written = list(write_csv(result, curve_csv))
    profile = {
        "knob": result.knob,
        "original_tuple": result.original_tuple,
        "best_value": result.best_value,
        "smallest_within_noise": result.best_within_noise,
        "knee": result.knee,
        "noise_cv": result.noise,
        "profile_over_sweep": result.profile.model_dump(mode="json") if result.profile else None,
        "baseline_profile": (
            result.baseline_profile.model_dump(mode="json") if result.baseline_profile else None
        ),
        "notes": list(result.notes),
    }
    profile_path = curve_csv.with_name(f"{curve_csv.stem}-profile.json")
    profile_path.write_text(json.dumps(profile, indent=2, default=str) + "\n", encoding="utf-8")
    written.append(profile_path)
    if plot:
        png = write_plot(result, curve_csv.with_suffix(".png"))
        if png is None:
            err("note: matplotlib is not installed, no plot (pip install 'pooltune[trainer]')")
        else:
            written.append(png)
    return written


def run(args: argparse.Namespace) -> int:
    """Run ``pooltune-agent sweep`` with parsed ``args``; returns the exit code."""
    try:
        config = load_config(args.config)
        if args.enable_latency:
            config = config.model_copy(
                update={"target": config.target.model_copy(update={"enable_latency": True})}
            )
        plan = build_plan(config, args)
        target = make_target(config, knobs=[plan.knob])
        if not _confirm(plan, config, args.yes):
            err("nothing changed")
            return EXIT_OK
    except (ConfigError, SweepError) as exc:
        return _fail(EXIT_CONFIG, str(exc))
    except (EOFError, KeyboardInterrupt):
        err("\nnothing changed")
        return EXIT_INTERRUPTED

    curve_csv = args.out or _default_out(plan.knob)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.warning("%s: stopping the sweep and restoring", signal.Signals(signum).name)
        stop.set()

    previous = {
        signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        target.connect()
        info = target.check()
        for note in info.notes:
            err(f"note: {note}")
        sweeper = Sweeper(
            target=target,
            plan=plan,
            state=OriginalTupleFile(config.state_file),
            stop=stop,
            on_progress=_progress(plan),
        )
        result = sweeper.run()
    except SweepInterrupted as exc:
        return _fail(EXIT_INTERRUPTED, f"{exc}; the original tuple was restored")
    except SweepError as exc:
        return _fail(EXIT_CONFIG, str(exc))
    except StateError as exc:
        return _fail(EXIT_STATE, str(exc))
    except TargetMisconfigured as exc:
        return _fail(EXIT_MISCONFIGURED, str(exc))
    except TargetUnavailable as exc:
        return _fail(
            EXIT_UNREACHABLE,
            f"{exc} (if a knob was changed and could not be restored, run "
            f"`pooltune-agent restore -c {args.config}`)",
        )
    finally:
        target.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    out(format_table(result))
    for path in write_outputs(result, curve_csv, plot=not args.no_plot):
        out(f"wrote {path}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point: ``python -m agents.sweep.cli sweep --config ... ``."""
    parser = argparse.ArgumentParser(prog="pooltune-agent")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return run(args)


__all__ = ["COMMAND", "add_parser", "build_plan", "main", "run", "write_outputs"]

if __name__ == "__main__":
    sys.exit(main())
