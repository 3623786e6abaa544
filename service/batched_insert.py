"""Rows of one table written in batches: one multi-row INSERT for many requests.

A request hands its row to :meth:`BatchedInsert.append` and is answered only once the
batch holding it is committed: **a row is acknowledged only after it is durable**, so a
crash loses no acknowledged row (only requests still waiting, which get no answer and may
retry), and a database that is down fails every waiting request with a 503, as an insert of
its own would. The queue is bounded; a batch leaves after ``linger_s`` or as soon as it
holds ``batch_rows``; :meth:`close` writes everything queued before it returns (shutdown).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy import exc as sa_exc

from service.errors import DatabaseUnavailableError

logger = logging.getLogger(__name__)

Row = dict[str, Any]
WriteRows = Callable[[Sequence[Row]], Awaitable[None]]


class BatchedInsert:
    """A bounded queue of rows and the task that writes them, a batch at a time."""

    def __init__(
        self,
        write: WriteRows,
        *,
        name: str,
        linger_s: float,
        batch_rows: int,
        queue_rows: int,
        put_timeout_s: float,
    ) -> None:
        self._write = write
        self.name = name
        self.linger_s = linger_s
        self.batch_rows = batch_rows
        self.put_timeout_s = put_timeout_s
        self._queue: asyncio.Queue[tuple[Row, asyncio.Future[None]]] = asyncio.Queue(queue_rows)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        #: Batches and rows written (for tests and metrics).
        self.batches = 0
        self.rows = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"batched-insert-{self.name}"
            )

    async def append(self, row: Row) -> None:
        """Queue ``row``; return once it is committed (raise what its batch raised)."""
        if self._closing or self._task is None:
            raise DatabaseUnavailableError("the service is shutting down")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait((row, done))
        except asyncio.QueueFull:
            try:
                await asyncio.wait_for(self._queue.put((row, done)), self.put_timeout_s)
            except TimeoutError:
                raise DatabaseUnavailableError(
                    f"{self.name}: {self._queue.maxsize} rows are waiting for the database"
                ) from None
        await done

    async def close(self) -> None:
        """Write every queued row, then stop."""
        self._closing = True
        if self._task is None:
            return
        await self._queue.put(_STOP)
        await self._task
        self._task = None
        # A row whose append was waiting for room when the stop mark went in.
        late = [item for item in _drain(self._queue) if item is not _STOP]
        for start in range(0, len(late), self.batch_rows):
            await self._flush(late[start : start + self.batch_rows])

    async def _next_batch(self) -> tuple[list[tuple[Row, asyncio.Future[None]]], bool]:
        first = await self._queue.get()
        if first is _STOP:
            return [], True
        batch = [first]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.linger_s
        while len(batch) < self.batch_rows:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(self._queue.get(), remaining)
                except TimeoutError:
                    break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    async def _run(self) -> None:
        stop = False
        while not stop:
            batch, stop = await self._next_batch()
            if batch:
                await self._flush(batch)
        # After the stop mark nothing is queued: append() refuses once closing.

    async def _flush(self, batch: list[tuple[Row, asyncio.Future[None]]]) -> None:
        try:
            await self._write([row for row, _ in batch])
        except (sa_exc.DataError, sa_exc.IntegrityError) as exc:
            if len(batch) == 1:
                _settle(batch, exc)
                return
            # One bad row must not fail its neighbours: each row on its own.
            logger.warning(
                "%s: a batch was refused (%s); writing its rows one by one", self.name, exc
            )
            for item in batch:
                await self._flush([item])
            return
        except Exception as exc:
            _settle(batch, exc)
            return
        self.batches += 1
        self.rows += len(batch)
        _settle(batch, None)


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while True:
        try:
            items.append(queue.get_nowait())
        except asyncio.QueueEmpty:
            return items


def _settle(batch: list[tuple[Row, asyncio.Future[None]]], exc: BaseException | None) -> None:
    for _, done in batch:
        if done.done():
            continue
        if exc is None:
            done.set_result(None)
        else:
            done.set_exception(exc)


#: Put on the queue by close(): the writer stops after the rows before it.
_STOP: Any = ({}, None)
