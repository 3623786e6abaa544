"""A TCP proxy in a thread of its own that can cut or freeze the connection to a server.

Put between the service and PostgreSQL, it plays the two faults a database shows in
production: **cut** (the server is gone: open connections are reset and new ones refused)
and **freeze** (the server hangs: connections are accepted, bytes go in, nothing comes back
and nothing reaches the server). ``restore`` returns to forwarding; what was held during a
freeze is then delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``target``; ``cut``, ``freeze`` and ``restore``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.mode = "forward"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="tcp-proxy", daemon=True
        )
        self._server: asyncio.Server | None = None
        self._flowing: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    def start(self) -> TcpProxy:
        self._thread.start()
        self._run(self._start())
        return self

    async def _start(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        await self._listen()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._writers.add(client_w)
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            self._writers.discard(client_w)
            return
        self._writers.add(server_w)
        await asyncio.gather(
            self._pump(client_r, server_w), self._pump(server_r, client_w), return_exceptions=True
        )
        for writer in (client_w, server_w):
            self._writers.discard(writer)
            writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._flowing is not None
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()
                writer.write(data)
                await writer.drain()
            writer.write_eof()
        except (OSError, RuntimeError):
            pass  # a side reset or closed the connection (or the proxy cut it)

    def cut(self) -> None:
        """The server is gone: reset every connection and refuse new ones."""
        self._run(self._cut())
        self.mode = "cut"

    async def _cut(self) -> None:
        assert self._server is not None and self._flowing is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        self._flowing.set()

    def freeze(self) -> None:
        """The server hangs: accept and read everything, forward nothing either way."""
        assert self._flowing is not None
        self._loop.call_soon_threadsafe(self._flowing.clear)
        self.mode = "freeze"

    def restore(self) -> None:
        """Forward again (after a cut, listen again on the same port)."""
        self._run(self._restore())
        self.mode = "forward"

    async def _restore(self) -> None:
        assert self._server is not None and self._flowing is not None
        if not self._server.is_serving():
            await self._listen()
        self._flowing.set()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run(self._cut())
            self._run(self._cancel_tasks())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    async def _cancel_tasks(self) -> None:
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
