"""``pooltune-service``: ``serve`` (wait for the DB, migrate, run uvicorn), ``migrate`` and
``prune`` (report retention)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from service.config import Settings, get_settings
from service.logging_setup import configure_logging
from service.migrate import DatabaseUnavailableError, upgrade, wait_for_database

logger = logging.getLogger("service.cli")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pooltune-service",
        description="The pooltune central service. Settings come from POOLTUNE_* variables "
        "(POOLTUNE_DATABASE_URL, POOLTUNE_ADMIN_TOKEN, POOLTUNE_ENVIRONMENT, ...).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="wait for the database, migrate, serve HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument(
        "--no-migrate", action="store_true", help="skip `alembic upgrade head` at start-up"
    )
    migrate = commands.add_parser("migrate", help="wait for the database and upgrade the schema")
    migrate.add_argument("--revision", default="head")
    prune = commands.add_parser(
        "prune",
        help="delete reports received longer ago than the retention (each host's newest is "
        "kept); run it daily from cron or a timer",
    )
    prune.add_argument(
        "--days",
        type=float,
        default=None,
        help="retention in days (default: POOLTUNE_REPORTS_RETENTION_DAYS)",
    )
    return parser


def _prune(settings: Settings, days: float | None) -> int:
    from datetime import timedelta

    from service.db import build_engine, build_sessionmaker, utcnow
    from service.reports.service import prune_reports

    retention = days if days is not None else settings.reports_retention_days
    if retention is None or retention <= 0:
        sys.stderr.write(
            "pooltune-service prune: no retention: set POOLTUNE_REPORTS_RETENTION_DAYS or "
            "pass --days (a positive number)\n"
        )
        return 2
    engine = build_engine(settings)
    try:
        cutoff = utcnow() - timedelta(days=retention)
        deleted = prune_reports(build_sessionmaker(engine), older_than=cutoff)
    finally:
        engine.dispose()
    logger.info("reports pruned", extra={"deleted": deleted, "received_before": cutoff})
    sys.stdout.write(f"deleted {deleted} reports received before {cutoff.isoformat()}\n")
    return 0


def _prepare_database(settings: Settings, revision: str) -> None:
    wait_for_database(settings.database_url, timeout_s=settings.db_wait_timeout_s)
    upgrade(settings.database_url, revision)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        sys.stderr.write(f"pooltune-service: invalid settings:\n{exc}\n")
        return 2
    configure_logging(settings.log_level)
    try:
        if args.command == "prune":
            return _prune(settings, args.days)
        if args.command == "migrate":
            _prepare_database(settings, args.revision)
            logger.info("schema is at the requested revision", extra={"revision": args.revision})
            return 0
        if not args.no_migrate:
            _prepare_database(settings, "head")
    except DatabaseUnavailableError as exc:
        logger.error("database unavailable", extra={"error": str(exc)})
        return 1

    import uvicorn

    # A serving process quiets its garbage collector after start-up (service.app); the
    # workers read it from the environment. An explicit POOLTUNE_GC_FREEZE wins.
    os.environ.setdefault("POOLTUNE_GC_FREEZE", "true")
    get_settings.cache_clear()
    logger.info(
        "serving",
        extra={
            "host": args.host,
            "port": args.port,
            "docs": f"http://{args.host}:{args.port}/docs",
        },
    )
    uvicorn.run(
        "service.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_config=None,
        access_log=False,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
