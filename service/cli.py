"""``pooltune-service``: ``serve`` (wait for the DB, migrate, run uvicorn) and ``migrate``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from service.config import Settings
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
    return parser


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
