"""Run ``pooltune-agent`` with a wall clock the test can step: a faketime of the harness's own.

``python -m tests.agents.wall_clock_shim run --config …`` replaces ``time.time`` and
``time.time_ns`` with the real clock plus the offset in seconds written in the file named by
``POOLTUNE_TEST_WALL_OFFSET_FILE`` (re-read whenever the file changes; missing or empty: 0),
then runs ``agents.cli``. The monotonic clock is left alone, as a real clock step leaves it.
The agent reads the wall clock only through ``time.time`` (``agents/clock.py``, the loop's
``wall_clock``), and the logging timestamps move with it too.
"""

from __future__ import annotations

import os
import runpy
import sys
import time

OFFSET_FILE_ENV = "POOLTUNE_TEST_WALL_OFFSET_FILE"

_real_time = time.time
_real_time_ns = time.time_ns
#: The offset file's identity (inode, mtime) when it was last read, and its offset.
_cache: dict[str, object] = {"identity": None, "offset_s": 0.0}


def _offset_s() -> float:
    path = os.environ.get(OFFSET_FILE_ENV, "")
    try:
        stat = os.stat(path) if path else None
    except OSError:
        stat = None
    identity = (stat.st_ino, stat.st_mtime_ns) if stat is not None else None
    if identity != _cache["identity"]:
        _cache["identity"] = identity
        try:
            with open(path, encoding="utf-8") as handle:
                _cache["offset_s"] = float(handle.read().strip() or 0.0)
        except (OSError, ValueError):
            _cache["offset_s"] = 0.0
    offset = _cache["offset_s"]
    assert isinstance(offset, float)
    return offset


def _stepped_time() -> float:
    return _real_time() + _offset_s()


def _stepped_time_ns() -> int:
    return _real_time_ns() + int(_offset_s() * 1e9)


def step_wall_clock(offset_file: os.PathLike[str] | str, offset_s: float) -> None:
    """Set the agent's wall clock to the real one plus ``offset_s`` (from the test)."""
    temp = f"{os.fspath(offset_file)}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(f"{offset_s}\n")
    os.replace(temp, offset_file)


def main() -> None:
    time.time = _stepped_time
    time.time_ns = _stepped_time_ns
    sys.argv = ["pooltune-agent", *sys.argv[1:]]
    runpy.run_module("agents.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
