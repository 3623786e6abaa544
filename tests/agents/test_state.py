"""The original-tuple state file and the restore that uses it."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from agents.knobs import Engine
from agents.state import (
    OriginalTupleFile,
    StateError,
    StatusFile,
    atomic_write_text,
    restore_original,
    restore_original_retrying,
)
from agents.targets.base import TargetUnavailable
from tests.agents.fakes import FakeTarget


def test_save_load_round_trip_with_private_mode(tmp_path: Path) -> None:
    state = OriginalTupleFile(tmp_path / "state" / "original-tuple.json")
    state.save(Engine.MARIADB, {"thread_pool_size": 7, "thread_pool_oversubscribe": 3})
    saved = state.load()
    assert saved is not None
    assert saved.values == {"thread_pool_size": 7, "thread_pool_oversubscribe": 3}
    assert saved.engine is Engine.MARIADB
    assert saved.pid == os.getpid()
    assert stat.S_IMODE(state.path.stat().st_mode) == 0o600
    document = json.loads(state.path.read_text())
    assert document["format"] == 1
    # Atomic write: nothing but the file itself is left in the directory.
    assert [p.name for p in state.path.parent.iterdir()] == ["original-tuple.json"]


def test_atomic_write_leaves_the_old_file_when_writing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "file.json"
    atomic_write_text(path, "old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.json"]


def test_missing_file_means_nothing_to_restore(tmp_path: Path) -> None:
    state = OriginalTupleFile(tmp_path / "none.json")
    assert state.load() is None
    assert restore_original(FakeTarget(), state) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is damaged"),
        ('{"format": 2, "engine": "mariadb", "original_tuple": {}}', "has format 2"),
        ('{"format": 1, "engine": "mariadb", "original_tuple": {}}', "is damaged"),
        ('{"format": 1, "engine": "db2", "original_tuple": {"a": 1}}', "is damaged"),
    ],
)
def test_damaged_or_future_state_files_are_refused(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "original-tuple.json"
    path.write_text(content)
    with pytest.raises(StateError, match=message):
        OriginalTupleFile(path).load()


def test_restore_applies_the_saved_tuple_then_removes_the_file(tmp_path: Path) -> None:
    target = FakeTarget(knobs={"thread_pool_size": 3})
    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {"thread_pool_size": 11})
    assert restore_original(target, state) == {"thread_pool_size": 11}
    assert target.knobs["thread_pool_size"] == 11
    assert not state.exists()


def test_failed_restore_keeps_the_file_for_the_next_attempt(tmp_path: Path) -> None:
    class Unreachable(FakeTarget):
        def apply(self, values: Mapping[str, int]) -> dict[str, int]:
            raise TargetUnavailable("server gone")

    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {"thread_pool_size": 11})
    with pytest.raises(TargetUnavailable):
        restore_original(Unreachable(), state)
    assert state.exists()


def test_restore_retrying_reconnects_until_the_server_answers(tmp_path: Path) -> None:
    class Flaky(FakeTarget):
        refusals = 2

        def apply(self, values: Mapping[str, int]) -> dict[str, int]:
            if self.refusals:
                self.refusals -= 1
                self.connected = False
                raise TargetUnavailable("server restarting")
            return super().apply(values)

    target = Flaky(knobs={"thread_pool_size": 3})
    waits: list[float] = []
    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {"thread_pool_size": 11})
    assert restore_original_retrying(target, state, sleep=waits.append)
    assert target.knobs["thread_pool_size"] == 11 and target.connected
    assert waits == [0.5, 1.0] and not state.exists()


def test_restore_retrying_gives_up_and_keeps_the_file(tmp_path: Path) -> None:
    class Unreachable(FakeTarget):
        def apply(self, values: Mapping[str, int]) -> dict[str, int]:
            raise TargetUnavailable("server gone")

    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {"thread_pool_size": 11})
    waits: list[float] = []
    assert not restore_original_retrying(Unreachable(), state, attempts=3, sleep=waits.append)
    assert waits == [0.5, 1.0, 1.5] and state.exists()


def test_adopt_replaces_only_the_changed_knobs(tmp_path: Path) -> None:
    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {"thread_pool_size": 4, "thread_pool_oversubscribe": 3})
    state.adopt({"thread_pool_size": 9})
    saved = state.load()
    assert saved is not None
    assert saved.values == {"thread_pool_size": 9, "thread_pool_oversubscribe": 3}


def test_the_original_tuple_is_synced_to_disk_the_status_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved original survives a power loss (file and directory synced); the status,
    rewritten every sample, costs the database host's disk no fsync."""
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    OriginalTupleFile(tmp_path / "original-tuple.json").save(
        Engine.MARIADB, {"thread_pool_size": 7}
    )
    assert len(synced) == 2
    status = StatusFile(tmp_path / "status.json")
    for size in range(5):
        status.write({"phase": "climbing", "current_tuple": {"thread_pool_size": size}})
    assert len(synced) == 2
    document = status.read()
    assert document is not None and document["current_tuple"] == {"thread_pool_size": 4}


def test_status_file_round_trip(tmp_path: Path) -> None:
    status = StatusFile(tmp_path / "status.json")
    assert status.read() is None
    status.write({"phase": "holding", "current_tuple": {"thread_pool_size": 4}})
    document = status.read()
    assert document is not None
    assert document["phase"] == "holding"
    assert "updated_at" in document
