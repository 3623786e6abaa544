"""Scratch databases on a real PostgreSQL server, for the tests and the benchmarks.

The server is the one ``POOLTUNE_BENCH_PG_URL`` (benchmarks), else ``POOLTUNE_TEST_PG_URL``
names: a maintenance database where the user may ``CREATE DATABASE``. Each database gets a
unique name and is dropped with ``FORCE`` afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

PG_URL_ENV = "POOLTUNE_TEST_PG_URL"
BENCH_PG_URL_ENV = "POOLTUNE_BENCH_PG_URL"
DEFAULT_PG_URL = "postgresql+psycopg://pooltune:pooltune@127.0.0.1:5432/postgres"


class DatabaseServerUnavailable(RuntimeError):
    """The PostgreSQL server of ``POOLTUNE_TEST_PG_URL`` cannot be reached or refused."""


def server_url() -> URL:
    """The maintenance database URL used to create and drop scratch databases."""
    return make_url(
        os.environ.get(BENCH_PG_URL_ENV) or os.environ.get(PG_URL_ENV) or DEFAULT_PG_URL
    )


def _admin_engine() -> Engine:
    return create_engine(server_url(), isolation_level="AUTOCOMMIT", poolclass=NullPool)


def create_database(prefix: str = "pooltune_scratch") -> str:
    """Create a uniquely named database; its SQLAlchemy URL (with the password)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"{prefix}_{worker}_{uuid.uuid4().hex[:10]}"
    engine = _admin_engine()
    try:
        with engine.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        where = server_url().render_as_string(hide_password=True)
        raise DatabaseServerUnavailable(
            f"PostgreSQL is not reachable at {where} ({exc.orig}): start it, or point "
            f"{PG_URL_ENV} at a server where this user may CREATE DATABASE"
        ) from exc
    finally:
        engine.dispose()
    return server_url().set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    """Drop the database of ``url``, closing whatever is still connected to it."""
    engine = _admin_engine()
    try:
        with engine.connect() as connection:
            name = make_url(url).database
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


@contextmanager
def scratch_database(
    prefix: str = "pooltune_scratch", *, create: Callable[[str], str] = create_database
) -> Iterator[str]:
    """An empty database for the ``with`` block (made by ``create``), dropped afterwards."""
    url = create(prefix)
    try:
        yield url
    finally:
        drop_database(url)
