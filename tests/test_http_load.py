"""benchmarks/http_load.py: a pooled connection the server closed while idle is not used
again, and a request whose reused connection dies before any answer is sent once more."""

from __future__ import annotations

import asyncio

from benchmarks.http_load import Call, ConnectionPool

CALL = Call("POST /x", "/x", "Bearer t", b"{}")
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


async def _server(
    *, close_after_answer: bool, drop_unanswered: int
) -> tuple[asyncio.Server, list[int]]:
    """Answers each request; closes the connection after its answer if asked (a keep-alive
    timeout), and closes the first ``drop_unanswered`` connections' second request unanswered."""
    served: list[int] = []
    dropped = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal dropped
        answered = 0
        while True:
            head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
            if not head:
                break
            await reader.readexactly(2)
            if answered and dropped < drop_unanswered:
                dropped += 1
                break
            writer.write(ANSWER)
            await writer.drain()
            served.append(1)
            answered += 1
            if close_after_answer:
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, served


def _run(close_after_answer: bool, drop_unanswered: int) -> tuple[list[int], int, int]:
    async def scenario() -> tuple[list[int], int, int]:
        server, served = await _server(
            close_after_answer=close_after_answer, drop_unanswered=drop_unanswered
        )
        port = server.sockets[0].getsockname()[1]
        pool = ConnectionPool(port, limit=4)
        statuses = []
        for _ in range(3):
            statuses.append((await pool.call(CALL)).status)
            await asyncio.sleep(0.05)  # the server's close reaches the idle connection
        pool.close()
        server.close()
        await server.wait_closed()
        return served, statuses.count(200), pool.resent

    return asyncio.run(scenario())


def test_a_connection_closed_while_idle_is_not_reused() -> None:
    served, ok, resent = _run(close_after_answer=True, drop_unanswered=0)
    assert (len(served), ok, resent) == (3, 3, 0)


def test_a_reused_connection_dying_unanswered_is_sent_again_once_and_counted() -> None:
    served, ok, resent = _run(close_after_answer=False, drop_unanswered=1)
    assert (len(served), ok, resent) == (3, 3, 1)
