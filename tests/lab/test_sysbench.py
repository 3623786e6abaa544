"""sysbench load through lab/ on the suite's MariaDB."""

from __future__ import annotations

import time

import pytest

from lab.mariadb import MariaDBServer
from lab.sysbench import SysbenchLoad, printable_command

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]


def _load_connections(server: MariaDBServer, database: str) -> int:
    rows = server.sql(
        f"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{database}'"
    )
    return int(str(rows[0][0]))


def test_tables_are_filled_once_per_server_and_shape(mariadb_server: MariaDBServer) -> None:
    SysbenchLoad(mariadb_server, database="lab_once", tables=1, table_size=50).prepare()
    assert ("lab_once", 1, 50) in mariadb_server.prepared_tables
    mariadb_server.sql("DELETE FROM lab_once.sbtest1 WHERE id <= 10")
    # A second load of the same shape finds the tables (sysbench's prepare would fail on
    # them) and leaves the rows alone.
    SysbenchLoad(mariadb_server, database="lab_once", tables=1, table_size=50).prepare()
    ((rows,),) = mariadb_server.sql("SELECT COUNT(*) FROM lab_once.sbtest1")
    assert int(str(rows)) == 40


def test_a_running_load_is_stopped_with_its_connections(mariadb_server: MariaDBServer) -> None:
    load = SysbenchLoad(mariadb_server, database="lab_run", tables=1, table_size=100)
    with load.running("oltp_point_select", threads=3, time_s=120) as process:
        deadline = time.monotonic() + 20
        while _load_connections(mariadb_server, "lab_run") < 3:
            assert process.poll() is None, "sysbench exited"
            assert time.monotonic() < deadline, "sysbench never connected"
            time.sleep(0.2)
        command = printable_command(process)
        assert "--mysql-password=***" in command and mariadb_server.password not in command
    assert process.poll() is not None
    deadline = time.monotonic() + 10
    while _load_connections(mariadb_server, "lab_run") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _load_connections(mariadb_server, "lab_run") == 0
