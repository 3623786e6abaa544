"""The database of the hot routes (recommendations, reports, agent-token checks).

The hot routes are ``async``: no worker thread per request. Their database work is written
once, as plain synchronous SQLAlchemy Core on a :class:`~sqlalchemy.engine.Connection`, and
:class:`HotDB` runs it:

- on PostgreSQL, on the asyncio engine (psycopg 3's ``AsyncConnection``) through
  ``AsyncConnection.run_sync`` — greenlets, not threads — in autocommit, so a single
  statement is a single round trip (no ``BEGIN`` / ``COMMIT``);
- on SQLite (``make run``), on the synchronous engine in a worker thread, in a transaction;
- in the API tests, on the request session they substitute (:func:`get_hot_db`), inside
  the test's transaction.

Work run here must therefore be correct statement by statement: each statement is atomic
by itself (the report ingest is one statement with CTEs on PostgreSQL). Why and what it
costs: docs/service.md, "Scale".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypeVar

from fastapi import Depends, Request
from sqlalchemy import Table, insert, make_url
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from service.batched_insert import BatchedInsert
from service.config import Settings

T = TypeVar("T")


class HotDB(Protocol):
    """Runs Core work against the database and commits it."""

    async def run(self, work: Callable[[Connection], T]) -> T: ...

    async def append(self, table: Table, row: dict[str, Any]) -> None:
        """Insert ``row``; return once it is committed (possibly batched with others)."""
        ...


@dataclass(frozen=True, slots=True)
class BatchSettings:
    linger_s: float
    batch_rows: int
    queue_rows: int
    put_timeout_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> BatchSettings:
        return cls(
            linger_s=settings.recommendation_log_linger_ms / 1000,
            batch_rows=settings.recommendation_log_batch_rows,
            queue_rows=settings.recommendation_log_queue_rows,
            put_timeout_s=settings.db_pool_timeout_s,
        )


class _Batching:
    """Appends go through one :class:`BatchedInsert` per table."""

    def __init__(self, batch: BatchSettings) -> None:
        self._batch = batch
        self._batchers: dict[str, BatchedInsert] = {}

    async def run(self, work: Callable[[Connection], T]) -> T:
        raise NotImplementedError

    def batcher(self, table: Table) -> BatchedInsert:
        batcher = self._batchers.get(table.name)
        if batcher is None:

            async def write(rows: Sequence[dict[str, Any]]) -> None:
                await self.run(lambda connection: connection.execute(insert(table), list(rows)))

            batcher = BatchedInsert(
                write,
                name=table.name,
                linger_s=self._batch.linger_s,
                batch_rows=self._batch.batch_rows,
                queue_rows=self._batch.queue_rows,
                put_timeout_s=self._batch.put_timeout_s,
            )
            batcher.start()
            self._batchers[table.name] = batcher
        return batcher

    async def append(self, table: Table, row: dict[str, Any]) -> None:
        await self.batcher(table).append(row)

    async def close(self) -> None:
        """Write every queued row (shutdown)."""
        for batcher in self._batchers.values():
            await batcher.close()


def _libpq_conninfo(database_url: str) -> str:
    """``postgresql+psycopg://u:p@h/db?x=y`` as the URI libpq reads."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def build_async_engine(settings: Settings) -> AsyncEngine:
    """The asyncio engine on ``settings.database_url`` (PostgreSQL): the same bounds as the
    synchronous engine (connect, pool wait, statement, client-side exchange deadline).

    No pre-ping (it would double the round trips of a one-statement request): a connection
    found dead fails its request with a 503, and SQLAlchemy then recycles every older
    connection of the pool (connections are also recycled after 5 minutes).
    """
    from service.db_deadline import async_deadline_creator, deadline_connect_args

    creator = async_deadline_creator(
        _libpq_conninfo(settings.database_url),
        {**deadline_connect_args(settings), "autocommit": True},
        settings.db_io_timeout_s,
    )
    return create_async_engine(
        settings.database_url,
        async_creator=creator,
        # Pool and overflow kept as one pool: an overflow connection is closed when it is
        # returned, and under steady concurrency above the pool size that churn (a TCP and
        # SCRAM handshake per request) cost more CPU than the requests themselves.
        pool_size=settings.db_pool_size + settings.db_max_overflow,
        max_overflow=0,
        pool_timeout=settings.db_pool_timeout_s,
        pool_recycle=300,
        isolation_level="AUTOCOMMIT",
    )


class AsyncEngineHotDB(_Batching):
    """PostgreSQL: the work runs on a pooled asyncio connection, in autocommit."""

    def __init__(self, engine: AsyncEngine, batch: BatchSettings) -> None:
        super().__init__(batch)
        self.engine = engine

    async def run(self, work: Callable[[Connection], T]) -> T:
        async with self.engine.connect() as connection:
            return await connection.run_sync(work)


class ThreadedHotDB(_Batching):
    """SQLite (and any synchronous engine): the work runs in a worker thread, in a
    transaction committed when it returns."""

    def __init__(self, engine: Engine, batch: BatchSettings) -> None:
        super().__init__(batch)
        self.engine = engine

    def _run(self, work: Callable[[Connection], T]) -> T:
        with self.engine.begin() as connection:
            return work(connection)

    async def run(self, work: Callable[[Connection], T]) -> T:
        return await run_in_threadpool(self._run, work)


class SessionHotDB:
    """The work runs on a session's connection, in its transaction (the API tests)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    async def run(self, work: Callable[[Connection], T]) -> T:
        result = work(self.session.connection())
        # Core writes bypass the identity map: the session re-reads what it holds.
        self.session.expire_all()
        return result

    async def append(self, table: Table, row: dict[str, Any]) -> None:
        self.session.execute(insert(table), [row])


async def get_hot_db(request: Request) -> HotDB:
    """The app's :class:`HotDB` (a dependency the tests replace with a SessionHotDB)."""
    hot_db: HotDB = request.app.state.hot_db
    return hot_db


HotDBDep = Annotated[HotDB, Depends(get_hot_db)]
