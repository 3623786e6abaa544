"""Durable agent state: the original tuple (so no knob stays changed) and the status file.

The original tuple is written atomically (temp file, fsync, ``os.replace``, fsync of the
directory) *before* the first knob change. While the file exists the server may run a
tuple the agent chose; a clean exit restores it and removes the file; after a crash the
next start finds it and restores it before anything else. A tuple a DBA set by hand
during a climb is adopted into the file, so a restore never reverts the DBA.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.knobs import Engine
from agents.targets.base import Target

logger = logging.getLogger(__name__)

STATE_FORMAT = 1


class StateError(Exception):
    """The state file exists but cannot be used; the message says what to do."""


def atomic_write_text(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class SavedTuple:
    engine: Engine
    values: dict[str, int]
    saved_at: str
    pid: int


class OriginalTupleFile:
    """The state file holding the tuple to put back."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def save(self, engine: Engine, values: Mapping[str, int]) -> None:
        document = {
            "format": STATE_FORMAT,
            "engine": engine.value,
            "original_tuple": {name: int(value) for name, value in values.items()},
            "saved_at": datetime.now(UTC).isoformat(),
            "pid": os.getpid(),
        }
        atomic_write_text(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")
        logger.info("original tuple %s saved to %s", dict(values), self.path)

    def load(self) -> SavedTuple | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(f"cannot read the state file {self.path}: {exc}") from exc
        try:
            document = json.loads(text)
            if document.get("format") != STATE_FORMAT:
                raise StateError(
                    f"state file {self.path} has format {document.get('format')!r}; this agent "
                    f"reads format {STATE_FORMAT}: restore the tuple by hand, then delete it"
                )
            values = document["original_tuple"]
            if not isinstance(values, dict) or not values:
                raise ValueError("original_tuple must be a non-empty table")
            return SavedTuple(
                engine=Engine(document["engine"]),
                values={str(k): int(v) for k, v in values.items()},
                saved_at=str(document.get("saved_at", "")),
                pid=int(document.get("pid", 0)),
            )
        except StateError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StateError(
                f"state file {self.path} is damaged ({exc}); check the server's thread pool "
                "variables by hand, then delete the file"
            ) from exc

    def adopt(self, values: Mapping[str, int]) -> None:
        """Replace some values of the saved tuple (a DBA's manual change)."""
        saved = self.load()
        if saved is None:
            return
        merged = {**saved.values, **{name: int(v) for name, v in values.items()}}
        self.save(saved.engine, merged)

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        _fsync_dir(self.path.parent)


def restore_original(target: Target, state: OriginalTupleFile) -> dict[str, int] | None:
    """Put back the saved tuple (if any) and remove the file once the server has it.

    Returns the values read back, or None when there was nothing to restore. Raises the
    target's errors: the file stays so that a later attempt restores it.
    """
    saved = state.load()
    if saved is None:
        return None
    if saved.engine != target.engine:
        raise StateError(
            f"state file {state.path} is for {saved.engine.value}, the target is "
            f"{target.engine.value}; restore by hand and delete the file"
        )
    read_back = target.apply(saved.values)
    if read_back != saved.values:
        logger.warning("restored %s but the server reads back %s", saved.values, read_back)
    state.clear()
    logger.info("original tuple %s restored (saved at %s)", saved.values, saved.saved_at)
    return read_back


class StatusFile:
    """What ``pooltune-agent status`` shows: rewritten atomically by the running agent."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, status: Mapping[str, Any]) -> None:
        document = {"format": STATE_FORMAT, "updated_at": datetime.now(UTC).isoformat()}
        document.update(status)
        atomic_write_text(
            self.path,
            json.dumps(document, indent=2, sort_keys=True, default=str) + "\n",
            mode=0o644,
        )

    def read(self) -> dict[str, Any] | None:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StateError(f"cannot read the status file {self.path}: {exc}") from exc
        if not isinstance(document, dict):
            raise StateError(f"status file {self.path} is damaged")
        return document
