"""Schema upgrades and the start-up wait for the database."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, pool, text
from sqlalchemy.exc import OperationalError

logger = logging.getLogger(__name__)

# The `migrations` package sits beside `service` both in the repository and in the installed
# wheel; found by path, not by import, so a stray `migrations` directory on sys.path (a
# namespace package) cannot shadow it.
MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(database_url: str) -> Config:
    """An Alembic config aimed at ``database_url`` (passed as an attribute, never interpolated)."""
    config = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    logger.info("alembic upgrade", extra={"revision": revision})
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    logger.info("alembic downgrade", extra={"revision": revision})
    command.downgrade(alembic_config(database_url), revision)


class DatabaseUnavailableError(RuntimeError):
    pass


def wait_for_database(database_url: str, *, timeout_s: float, interval_s: float = 1.0) -> None:
    """Retry ``SELECT 1`` until it answers or ``timeout_s`` passes (the DB may start after us)."""
    engine = create_engine(database_url, poolclass=pool.NullPool)
    deadline = time.monotonic() + timeout_s
    attempt = 0
    try:
        while True:
            attempt += 1
            try:
                with engine.connect() as connection:
                    connection.execute(text("SELECT 1"))
                return
            except OperationalError as exc:
                if time.monotonic() >= deadline:
                    raise DatabaseUnavailableError(
                        f"the database did not answer within {timeout_s:.0f} s "
                        f"({attempt} attempts): {exc.orig}"
                    ) from exc
                logger.warning(
                    "database not ready, retrying",
                    extra={"attempt": attempt, "error": str(exc.orig)},
                )
                time.sleep(interval_s)
    finally:
        engine.dispose()
