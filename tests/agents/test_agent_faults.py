"""The agent's fault rules against an in-memory server (docs/agent.md, "Faults"); the same
faults on the real MariaDB are in test_agent_faults_*.py.

Here the disk's refusal is simulated at the write call (``os.fsync`` raising ENOSPC, where a
full disk shows on a real filesystem); the MariaDB tests use a real full or read-only tmpfs.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from agents.loop import AgentLoop, Phase
from agents.server_watch import ServerEvent, ServerWatch
from agents.service_client import Uploader
from agents.spool import Spool
from agents.state import OriginalTupleFile, StatusFile
from agents.targets.base import Snapshot, TargetUnavailable
from tests.agents.fakes import FakeTarget
from tests.agents.reports import make_report
from tests.agents.service_process import ServiceProcess, service_on_scratch_database
from tests.agents.test_approval_mode import CORES, Host
from tests.agents.test_loop import config_for, make_loop, rogue, run_until

SIZE = "thread_pool_size"


def snap(taken_at: float, uptime_s: float) -> Snapshot:
    return Snapshot(taken_at=taken_at, uptime_s=uptime_s, counters={}, gauges={})


@pytest.fixture
def disk_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """``full[0] = True`` makes every write under ``tmp_path / "state"`` and
    ``tmp_path / "spool"`` fail with ENOSPC (the runtime directory stays writable): a new
    file there, or the sync of one written before."""
    full = [False]
    real_fsync, real_mkstemp = os.fsync, tempfile.mkstemp
    full_dirs = (str(tmp_path / "state"), str(tmp_path / "spool"))

    def fsync(fd: int) -> None:
        if full[0] and os.readlink(f"/proc/self/fd/{fd}").startswith(full_dirs):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    def mkstemp(
        suffix: str | None = None, prefix: str | None = None, dir: Path | None = None
    ) -> tuple[int, str]:
        if full[0] and str(dir).startswith(full_dirs):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_mkstemp(suffix=suffix, prefix=prefix, dir=dir)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    yield full


def faulty_loop(tmp_path: Path, target: FakeTarget, wanted: int = 4) -> AgentLoop:
    state_dir = tmp_path / "state"
    config = config_for(state_dir, agent={"runtime_dir": str(tmp_path / "run")})
    factory, _ = rogue({SIZE: wanted})
    return make_loop(tmp_path, target, factory, config)


# -- restarts, clock steps, half-applied changes ------------------------------------------


def test_uptime_going_back_is_a_restart_only_after_a_lost_connection() -> None:
    watch = ServerWatch()
    assert watch.observe(snap(100.0, 5000.0)) is None
    assert watch.observe(snap(102.0, 5002.0)) is None
    # The host's clock set back an hour: MariaDB's Uptime follows it, the connection stays.
    assert watch.observe(snap(104.0, 1404.0)) is ServerEvent.CLOCK_STEP
    assert watch.observe(snap(106.0, 1406.0)) is None
    # And forward two hours.
    assert watch.observe(snap(108.0, 8608.0)) is ServerEvent.CLOCK_STEP
    # A real restart cuts the connection first.
    watch.connection_lost()
    assert watch.observe(snap(120.0, 3.0)) is ServerEvent.RESTART
    assert watch.observe(snap(122.0, 5.0)) is None


def test_a_restart_is_seen_after_a_long_outage_even_when_the_uptime_grew() -> None:
    watch = ServerWatch()
    watch.observe(snap(100.0, 20.0))  # a server started 20 s before
    watch.connection_lost()
    # Down for a while, back for 60 s when the agent reaches it again: uptime 60 > 20,
    # but the server started 70 s later than the one the agent knew.
    assert watch.observe(snap(190.0, 60.0)) is ServerEvent.RESTART


def test_a_slow_sample_after_a_reconnection_is_not_a_restart() -> None:
    watch = ServerWatch()
    watch.observe(snap(100.0, 5000.0))
    watch.connection_lost()
    assert watch.observe(snap(108.0, 5003.0)) is None  # 5 s spent on the queries


def test_half_applied_change_is_the_agents_own_not_a_dba_change(tmp_path: Path) -> None:
    target = FakeTarget()
    real_apply = target.apply
    lost_read_back = [True]

    def apply(values: Mapping[str, int]) -> dict[str, int]:
        read_back = real_apply(values)  # the SET GLOBAL went through ...
        if lost_read_back[0]:
            lost_read_back[0] = False
            raise TargetUnavailable("reading knobs: Lost connection")  # ... the read-back not
        return read_back

    target.apply = apply  # type: ignore[method-assign]
    loop = faulty_loop(tmp_path, target, wanted=5)
    for _ in range(12):
        loop.iterate()
    assert target.knobs[SIZE] == 5
    assert loop.counters.failed_samples == 1
    assert loop.counters.manual_changes == 0
    assert loop.applied == {SIZE: 5}
    saved = OriginalTupleFile(loop.config.state_file).load()
    assert saved is not None and saved.values == {SIZE: 2}  # not the agent's own 5
    loop.shutdown()
    assert target.knobs[SIZE] == 2


def test_server_restart_keeps_the_true_original_and_counts_no_manual_change(
    tmp_path: Path,
) -> None:
    target = FakeTarget()
    target.knobs[SIZE] = 6  # set at runtime before the agent: a restart loses it
    loop = faulty_loop(tmp_path, target, wanted=3)
    run_until(loop, Phase.CLIMBING, limit=20)
    for _ in range(3):
        loop.iterate()
    assert target.knobs[SIZE] == 3
    target.failures = [TargetUnavailable("Lost connection")] * 2
    loop.iterate()
    loop.iterate()
    target.uptime, target.transactions, target.knobs[SIZE] = 1.0, 0.0, 2  # startup values
    loop.iterate()
    assert loop.counters.server_restarts == 1
    assert loop.phase is Phase.PROFILING
    run_until(loop, Phase.CLIMBING, limit=20)
    assert loop.counters.manual_changes == 0
    assert OriginalTupleFile(loop.config.state_file).load().values == {SIZE: 6}  # type: ignore[union-attr]
    loop.shutdown()
    assert target.knobs[SIZE] == 6


# -- the state directory refuses writes -----------------------------------------------------


def test_no_knob_changes_while_the_original_cannot_be_saved(
    tmp_path: Path, disk_full: list[bool]
) -> None:
    target = FakeTarget()
    loop = faulty_loop(tmp_path, target)
    disk_full[0] = True
    for _ in range(12):
        loop.iterate()
    assert loop.phase is Phase.BLOCKED
    assert target.applied == []
    assert not loop.config.state_file.exists()
    # The status says so, from the fallback file, and keeps being rewritten.
    status = StatusFile(loop.config.status_file, fallback=loop.config.status_fallback_file)
    first = status.read()
    assert first is not None and first["phase"] == "blocked"
    assert "No space left on device" in first["state_error"]
    assert "cannot write" in first["status_file_error"]
    loop.iterate()
    assert status.read()["counters"]["samples"] > first["counters"]["samples"]  # type: ignore[index]
    # Space again: the original is saved first, then the agent profiles and climbs.
    disk_full[0] = False
    run_until(loop, Phase.CLIMBING, limit=20)
    for _ in range(3):
        loop.iterate()
    assert target.applied and target.knobs[SIZE] == 4
    assert OriginalTupleFile(loop.config.state_file).load().values == {SIZE: 2}  # type: ignore[union-attr]
    assert not loop.config.status_fallback_file.exists()
    assert status.read()["state_error"] is None  # type: ignore[index]
    loop.shutdown()
    assert target.knobs[SIZE] == 2


def test_a_dba_value_that_cannot_be_adopted_blocks_and_a_stop_keeps_it(
    tmp_path: Path, disk_full: list[bool]
) -> None:
    target = FakeTarget()
    loop = faulty_loop(tmp_path, target)
    run_until(loop, Phase.CLIMBING, limit=20)
    for _ in range(3):
        loop.iterate()
    assert target.knobs[SIZE] == 4
    disk_full[0] = True
    target.knobs[SIZE] = 5  # a DBA's SET GLOBAL, while the disk is full
    changes = len(target.applied)
    for _ in range(8):
        loop.iterate()
    assert loop.counters.manual_changes == 1
    assert loop.phase is Phase.BLOCKED
    assert len(target.applied) == changes  # nothing changed after the DBA
    # The file still says 2; the agent knows better and a clean stop keeps the DBA's 5.
    assert json.loads(loop.config.state_file.read_text())["original_tuple"] == {SIZE: 2}
    loop.shutdown()
    assert target.knobs[SIZE] == 5
    assert not loop.config.state_file.exists()  # a full disk still lets a file go


def test_a_report_the_disk_refuses_waits_in_memory_then_on_disk(
    tmp_path: Path, disk_full: list[bool]
) -> None:
    spool = Spool(tmp_path / "spool")
    old = make_report()
    spool.put(old)
    disk_full[0] = True
    new = make_report()
    assert spool.put(new) is None
    assert spool.held == 1 and len(spool) == 2
    assert spool.put(new) is None and len(spool) == 2  # the same key once
    assert [item.report.idempotency_key for item in spool.pending()] == [
        old.idempotency_key,
        new.idempotency_key,
    ]
    disk_full[0] = False
    pending = list(spool.pending())
    assert spool.held == 0
    assert [item.path is not None for item in pending] == [True, True]
    assert pending[1].report == new


def test_the_cap_counts_reports_held_in_memory(tmp_path: Path, disk_full: list[bool]) -> None:
    one = len(Spool(tmp_path / "probe")._envelope(make_report(trace_samples=20), 0).encode())
    spool = Spool(tmp_path / "spool", max_bytes=int(one * 2.5))
    disk_full[0] = True
    reports = [make_report(trace_samples=20) for _ in range(4)]
    for report in reports:
        spool.put(report)
    assert spool.held == 2
    assert spool.size_bytes() <= spool.max_bytes
    assert spool.dropped == 2
    assert [i.report.idempotency_key for i in spool.pending()] == [
        r.idempotency_key for r in reports[2:]
    ]


def test_spool_order_survives_a_wall_clock_set_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = Spool(tmp_path / "spool")
    first, second = make_report(), make_report()
    spool.put(first)
    real_time_ns = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real_time_ns() - 3600 * 10**9)
    spool.put(second)
    assert [i.report.idempotency_key for i in spool.pending()] == [
        first.idempotency_key,
        second.idempotency_key,
    ]


# -- the wall clock steps ---------------------------------------------------------------------


@pytest.mark.parametrize("step_s", [-3600.0, 3600.0])
def test_a_wall_clock_step_mid_climb_moves_dates_never_decisions(
    tmp_path: Path, step_s: float
) -> None:
    target = FakeTarget()
    offset = [0.0]
    config = config_for(tmp_path, agent={"climb_max_s": 60.0, "runtime_dir": str(tmp_path / "run")})
    factory, _ = rogue({SIZE: 3})
    loop = AgentLoop(
        config,
        target=target,
        climber_factory=factory,
        uploader=Uploader(None, Spool(config.spool_dir)),
        clock=lambda: target.now,
        wall_clock=lambda: target.now + 1.7e9 + offset[0],
    )
    loop.start()
    run_until(loop, Phase.CLIMBING, limit=20)
    climb_started = target.now
    loop.iterate()
    offset[0] = step_s
    # The rogue climber never converges: only climb_max_s (monotonic) ends the climb.
    while loop.phase is Phase.CLIMBING:
        loop.iterate()
        assert target.now - climb_started < 80, "the climb did not end"
    assert target.now - climb_started >= 60.0  # no early end when the clock jumped ahead
    (item,) = loop.uploader.spool.pending()
    report = item.report
    assert not report.converged
    duration = (report.finished_at - report.started_at).total_seconds()
    assert duration == pytest.approx(report.trace[-1].t_s, abs=4.0)
    assert 55.0 < duration < 70.0


def test_status_file_falls_back_and_comes_back(tmp_path: Path) -> None:
    state_dir, run_dir = tmp_path / "state", tmp_path / "run"
    state_dir.mkdir()
    status = StatusFile(state_dir / "status.json", fallback=run_dir / "state.status.json")
    status.write({"phase": "profiling"})
    assert status.read()["phase"] == "profiling"  # type: ignore[index]
    (state_dir / "status.json").unlink()
    state_dir.rmdir()
    state_dir.write_text("not a directory")  # writes under it now fail
    status.write({"phase": "blocked"})
    document = status.read()
    assert document is not None and document["phase"] == "blocked"
    assert "status_file_error" in document
    state_dir.unlink()
    status.write({"phase": "climbing"})
    assert not (run_dir / "state.status.json").exists()
    assert status.read()["phase"] == "climbing"  # type: ignore[index]


def test_the_daemon_reads_the_wall_clock_only_through_time_time() -> None:
    """The subprocess clock tests step ``time.time`` (wall_clock_shim.py): that is faithful
    only while no daemon module reads the wall clock another way."""
    agents_dir = Path(__file__).parents[2] / "agents"
    other_ways = re.compile(r"datetime\.(now|utcnow|today)\(|\butcnow\(\)|\bdate\.today\(")
    offenders = [
        f"{path.relative_to(agents_dir)}:{number}: {line.strip()}"
        for path in sorted(agents_dir.rglob("*.py"))
        # sweep/ and sim/ are not the daemon; the wire contract defines utcnow for the service.
        if path.parent.name not in ("sweep", "sim", "wire")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if other_ways.search(line)
    ]
    assert offenders == [], "read the wall clock through agents.clock or wall_clock"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with service_on_scratch_database(tmp_path / "service.log", prefix="pooltune_gate") as svc:
        yield svc


@pytest.mark.postgres
def test_an_approved_start_the_disk_refuses_waits_blocked_then_applies(
    service: ServiceProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = Host(service, tmp_path)
    loop = host.agent()
    host.run(loop, 40, until=Phase.AWAITING_APPROVAL)
    (request,) = host.approvals()
    refuse = [True]
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # only the original tuple's file is refused
        if refuse[0] and "original-tuple.json" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    approved = service.admin("POST", f"/v1/approvals/{request['id']}/approve", json={})
    assert approved.status_code == 200, approved.text
    host.run(loop, 10, until=Phase.BLOCKED)
    host.run(loop, 5)
    assert loop.phase is Phase.BLOCKED
    assert host.target.knob_changes == 0
    assert loop.status()["approval"]["state"] == "approved"  # not used up: nothing applied
    refuse[0] = False
    host.run(loop, 10, until=Phase.CLIMBING)
    assert loop.phase is Phase.CLIMBING
    assert host.target.knob_changes >= 1
    assert loop.status()["approval"]["state"] == "applied"
    assert OriginalTupleFile(host.original_tuple_file()).load().values == {SIZE: CORES}  # type: ignore[union-attr]
    loop.shutdown()
    assert host.target.knobs[SIZE] == CORES
