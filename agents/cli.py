"""``pooltune-agent``: the command a DBA runs on the database host.

Exit codes are :mod:`agents.console`'s: 0 success; 1 unexpected error; 2 configuration
error; 3 cannot reach the database; 4 the server cannot be tuned as configured (no thread
pool, missing rights); 5 state file problem; 6 the service refused or could not be reached.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from agents.approval_record import read_record_summary
from agents.config import (
    DEFAULT_CONFIG_PATH,
    AgentConfig,
    ConfigError,
    load_config,
    read_agent_token,
)
from agents.console import (
    EXIT_CONFIG,
    EXIT_MISCONFIGURED,
    EXIT_OK,
    EXIT_SERVICE,
    EXIT_STATE,
    EXIT_UNEXPECTED,
    EXIT_UNREACHABLE,
    fail,
    out,
)
from agents.profile import ProfileError
from agents.profilers import target_profiler
from agents.recommendation import recommend, start_tuple
from agents.service_client import ServiceError, enroll_agent
from agents.spool import Spool
from agents.state import (
    OriginalTupleFile,
    StateError,
    StatusFile,
    atomic_write_text,
    restore_original,
)
from agents.sweep import cli as sweep_cli
from agents.targets.base import TargetMisconfigured, TargetUnavailable
from agents.wiring import assemble_daemon, make_service_client, make_target

logger = logging.getLogger("agents.cli")

ENV_ENROLLMENT_TOKEN = "POOLTUNE_ENROLLMENT_TOKEN"


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("agents").setLevel(level)


# -- commands ---------------------------------------------------------------------------


def cmd_run(config_path: Path, config: AgentConfig, args: argparse.Namespace) -> int:
    stop = threading.Event()
    loop = assemble_daemon(config, stop=stop, config_path=config_path)

    def on_stop(signum: int, _frame: FrameType | None) -> None:
        logger.info(
            "received %s: restoring the original tuple and stopping", signal.Signals(signum).name
        )
        stop.set()

    def on_hup(_signum: int, _frame: FrameType | None) -> None:
        loop.reload_requested.set()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_hup)
    # `kill -USR1` dumps every thread's stack to stderr: for diagnosing a stuck agent.
    faulthandler.register(signal.SIGUSR1, all_threads=True)

    # Start-up: the database may be restarting too; retry until it answers or we stop.
    delay = 1.0
    while True:
        try:
            loop.start()
            break
        except TargetUnavailable as exc:
            if args.once:
                return fail(EXIT_UNREACHABLE, str(exc))
            logger.warning("database not reachable (%s); retrying in %.0fs", exc, delay)
            if stop.wait(delay):
                return EXIT_OK
            delay = min(60.0, delay * 2)
    try:
        loop.run(max_iterations=args.iterations)
    except TargetMisconfigured as exc:
        loop.shutdown()
        return fail(EXIT_MISCONFIGURED, str(exc))
    loop.shutdown()
    return EXIT_OK


def cmd_test(config: AgentConfig) -> int:
    target = make_target(config)
    out(f"configuration: ok (knobs: {', '.join(config.tuned_knob_names)})")
    try:
        target.connect()
    except TargetMisconfigured as exc:
        return fail(EXIT_MISCONFIGURED, str(exc))
    except TargetUnavailable as exc:
        return fail(EXIT_UNREACHABLE, f"cannot connect to the database: {exc}")
    try:
        info = target.check()
        out(f"server: {info.engine.value} {info.version}, thread_handling={info.thread_handling}")
        out(f"connection through extra_port: {'yes' if info.via_extra_port else 'no'}")
        out("rights to change the knobs: ok")
        for note in info.notes:
            out(f"note: {note}")
        tuple_now = target.current_tuple(config.tuned_knob_names)
        out(f"knobs in force: {tuple_now}")
        first = target.read_counters()
        time.sleep(min(1.0, config.agent.sample_period_s))
        second = target.read_counters()
        rates = target_profiler(target).interval(first, second)
        out(
            f"one sample: {rates.qps:.1f} queries/s, {rates.tps:.1f} transactions/s, "
            f"{rates.connections} connections, latency "
            f"{'unknown' if rates.latency_ms is None else f'{rates.latency_ms:.2f} ms'}"
        )
    except TargetMisconfigured as exc:
        return fail(EXIT_MISCONFIGURED, str(exc))
    except (TargetUnavailable, ProfileError) as exc:
        return fail(EXIT_UNREACHABLE, str(exc))
    finally:
        target.close()
    if config.service.url:
        out(
            f"service: {config.service.url} "
            f"({'token present' if read_agent_token(config) else 'NOT ENROLLED'})"
        )
    out("test passed")
    return EXIT_OK


def cmd_dry_run(config: AgentConfig, args: argparse.Namespace) -> int:
    target = make_target(config)
    window = args.window if args.window is not None else config.agent.profile_window_s
    try:
        target.connect()
        info = target.check(read_only=True)
        host = target.host_facts()
        current = target.current_tuple(config.tuned_knob_names)
        snapshots = [target.read_counters()]
        deadline = time.monotonic() + window
        while time.monotonic() < deadline:
            time.sleep(min(config.agent.sample_period_s, max(0.0, deadline - time.monotonic())))
            snapshots.append(target.read_counters())
        profile = target_profiler(target).build_profile(snapshots)
    except TargetMisconfigured as exc:
        return fail(EXIT_MISCONFIGURED, str(exc))
    except (TargetUnavailable, ProfileError) as exc:
        return fail(EXIT_UNREACHABLE, str(exc))
    finally:
        target.close()
    answer = recommend(make_service_client(config), host=host, profile=profile, current=current)
    start = start_tuple(config, answer, current=current, names=config.tuned_knob_names)
    plan = {
        "dry_run": True,
        "server": {"version": info.version, "via_extra_port": info.via_extra_port},
        "host": host.model_dump(mode="json"),
        "profile": profile.model_dump(mode="json"),
        "current_tuple": current,
        "recommendation": answer.model_dump(mode="json"),
        "would_apply": start,
        "bounds": {n: list(config.knob_bounds(n)) for n in config.tuned_knob_names},
        "then": f"climb with {config.climber.name!r} for at most {config.agent.climb_max_s:.0f}s",
    }
    out(json.dumps(plan, indent=2))
    return EXIT_OK


def cmd_restore(config: AgentConfig) -> int:
    state = OriginalTupleFile(config.state_file)
    saved = state.load()
    if saved is None:
        out(f"nothing to restore: {config.state_file} does not exist")
        return EXIT_OK
    target = make_target(config)
    try:
        target.connect()
        restored = restore_original(target, state)
    except TargetMisconfigured as exc:
        return fail(EXIT_MISCONFIGURED, str(exc))
    except TargetUnavailable as exc:
        return fail(EXIT_UNREACHABLE, f"cannot restore now (the state file stays): {exc}")
    finally:
        target.close()
    out(f"restored {restored} (saved at {saved.saved_at})")
    return EXIT_OK


def cmd_status(config: AgentConfig) -> int:
    status = StatusFile(config.status_file, fallback=config.status_fallback_file).read()
    saved = OriginalTupleFile(config.state_file).load()
    spool = Spool(config.spool_dir, max_bytes=config.service.spool_max_bytes)
    document = {
        "status": status,
        "mode": config.agent.mode.value,
        # Also when the agent is stopped: the request it waits on, or its last recommendation.
        "approval_record": read_record_summary(config.approval_file),
        "saved_original_tuple": saved.values if saved else None,
        "spooled_reports": len(spool),
        "spool_dropped": spool.dropped,
    }
    out(json.dumps(document, indent=2, default=str))
    return EXIT_OK


def cmd_enroll(config: AgentConfig, args: argparse.Namespace) -> int:
    url = args.url or config.service.url
    if not url:
        return fail(EXIT_CONFIG, "no service URL: pass --url or set [service] url")
    token = args.token or os.environ.get(ENV_ENROLLMENT_TOKEN, "")
    if not token:
        return fail(EXIT_CONFIG, f"no enrolment token: pass --token or set {ENV_ENROLLMENT_TOKEN}")
    target = make_target(config)
    try:
        target.connect()
        host = target.host_facts()
    except TargetMisconfigured as exc:
        return fail(EXIT_MISCONFIGURED, str(exc))
    except TargetUnavailable as exc:
        return fail(EXIT_UNREACHABLE, f"cannot read the host facts from the database: {exc}")
    finally:
        target.close()
    try:
        credentials = enroll_agent(
            url,
            token,
            host,
            timeout_s=config.service.timeout_s,
            max_attempts=config.service.max_attempts,
        )
    except ServiceError as exc:
        return fail(EXIT_SERVICE, f"enrolment failed: {exc}")
    path = config.token_path
    atomic_write_text(path, credentials.agent_token + "\n", mode=0o600)
    out(
        f"enrolled as agent {credentials.agent_id} (host {credentials.host_id}); "
        f"token stored in {path}"
    )
    return EXIT_OK


# -- entry point ------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pooltune-agent",
        description="Tune a database's thread pool online: profile the workload, start from "
        "the service's recommendation, hill-climb the knobs, report, hold.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-c",
        "--config",
        type=Path,
        default=Path(os.environ.get("POOLTUNE_AGENT_CONFIG", DEFAULT_CONFIG_PATH)),
        help=f"TOML configuration file (default: $POOLTUNE_AGENT_CONFIG or {DEFAULT_CONFIG_PATH})",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    enroll = commands.add_parser(
        "enroll",
        parents=[common],
        help="exchange an enrolment token for an agent token (stored 0600)",
    )
    enroll.add_argument("--url", help="service base URL (default: [service] url)")
    enroll.add_argument("--token", help=f"enrolment token (default: ${ENV_ENROLLMENT_TOKEN})")
    run = commands.add_parser(
        "run", parents=[common], help="run the tuning daemon (SIGHUP reloads)"
    )
    run.add_argument(
        "--once",
        action="store_true",
        help="exit instead of retrying when the database is down at start",
    )
    run.add_argument("--iterations", type=int, default=None, help=argparse.SUPPRESS)
    latency_help = (
        "install and switch on the query_response_time plugin to measure latency "
        "(same as [target] enable_latency = true)"
    )
    run.add_argument("--enable-latency", action="store_true", help=latency_help)
    test = commands.add_parser(
        "test",
        parents=[common],
        help="validate the config, connect, check rights, take one sample; "
        "non-zero exit on failure",
    )
    test.add_argument("--enable-latency", action="store_true", help=latency_help)
    dry = commands.add_parser(
        "dry-run",
        parents=[common],
        help="profile, ask for a recommendation, print the plan; change nothing",
    )
    dry.add_argument("--window", type=float, default=None, help="observation window in seconds")
    commands.add_parser("restore", parents=[common], help="put back the saved original tuple")
    commands.add_parser(
        "status",
        parents=[common],
        help="show the phase, mode, approval request, tuple and last report",
    )
    sweep_cli.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == sweep_cli.COMMAND:
        return sweep_cli.run(args)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        return fail(EXIT_CONFIG, str(exc))
    if getattr(args, "enable_latency", False):
        config = config.model_copy(
            update={"target": config.target.model_copy(update={"enable_latency": True})}
        )
    _setup_logging(config.agent.log_level)
    try:
        if args.command == "run":
            return cmd_run(args.config, config, args)
        if args.command == "test":
            return cmd_test(config)
        if args.command == "dry-run":
            return cmd_dry_run(config, args)
        if args.command == "restore":
            return cmd_restore(config)
        if args.command == "status":
            return cmd_status(config)
        if args.command == "enroll":
            return cmd_enroll(config, args)
    except ConfigError as exc:
        return fail(EXIT_CONFIG, str(exc))
    except StateError as exc:
        return fail(EXIT_STATE, str(exc))
    except TargetMisconfigured as exc:
        return fail(EXIT_MISCONFIGURED, str(exc))
    except Exception as exc:
        logger.exception("unexpected error")
        return fail(EXIT_UNEXPECTED, f"unexpected error: {exc}")
    return fail(EXIT_UNEXPECTED, f"unknown command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
