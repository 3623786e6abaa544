"""Durable agent state: the original tuple (so no knob stays changed) and the status file.

The original tuple is written atomically (temp file, fsync, ``os.replace``, fsync of the
directory) *before* the first knob change. While the file exists the server may run a
tuple the agent chose; a clean exit restores it and removes the file; after a crash the
next start finds it and restores it before anything else. A tuple a DBA set by hand
during a climb is adopted into the file, so a restore never reverts the DBA.

When the state directory is full or read-only, the agent changes nothing whose original it
cannot persist (:meth:`OriginalTupleFile.ensure_saved`), and the status goes to a fallback
file in the runtime directory; docs/agent.md, "Faults".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.clock import utc_now
from agents.knobs import Engine
from agents.targets.base import RestoringTarget, Target, TargetInfo, TargetUnavailable

logger = logging.getLogger(__name__)

STATE_FORMAT = 1


class StateError(Exception):
    """The state file exists but cannot be used; the message says what to do."""


def atomic_write_text(path: Path, text: str, *, mode: int = 0o600, durable: bool = True) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never half;
    ``durable``: on disk before this returns (file and directory synced), so a power loss
    cannot take it back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    if durable:
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
    #: ``None``: the knob had no value of its own (see :class:`RestoringTarget`).
    values: dict[str, int | None]
    saved_at: str
    pid: int


class OriginalTupleFile:
    """The state file holding the tuple to put back.

    A DBA's value that could not be adopted into the file (the disk refused) is held in
    memory and wins over the file in :meth:`load`, so a clean stop does not revert the DBA.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Why the original cannot be persisted now (None: it can); for the status.
        self.problem: str | None = None
        self._unsaved: SavedTuple | None = None

    def exists(self) -> bool:
        return self._unsaved is not None or self._on_disk()

    def _on_disk(self) -> bool:
        """Whether the file holds an original tuple to put back."""
        return self.path.exists()

    def ensure_saved(self, engine: Engine, in_force: Mapping[str, int]) -> bool:
        """Before a change: True when the file holds the tuple to put back (``in_force`` is
        saved when there is none yet); False when the disk refuses, the reason logged once
        and kept in :attr:`problem`: the caller must then change nothing."""
        if self._unsaved is None and self._on_disk():
            return True
        unsaved = self._unsaved
        try:
            if unsaved is not None:
                self.save(unsaved.engine, unsaved.values)
            else:
                self.save(engine, in_force)
        except OSError as exc:
            self._refused(exc)
            return False
        self._unsaved = None
        if self.problem is not None:
            logger.warning("the original tuple is saved again in %s: knobs may change", self.path)
            self.problem = None
        return True

    def _refused(self, exc: OSError) -> None:
        problem = (
            f"cannot save the original tuple to {self.path} ({exc.strerror or exc}): no knob "
            "is changed until it can be saved"
        )
        if problem != self.problem:
            logger.error("%s", problem)
        self.problem = problem

    def save(self, engine: Engine, values: Mapping[str, int | None]) -> None:
        document = {
            "format": STATE_FORMAT,
            "engine": engine.value,
            "original_tuple": {name: _int_or_none(value) for name, value in values.items()},
            "saved_at": utc_now().isoformat(),
            "pid": os.getpid(),
        }
        atomic_write_text(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")
        logger.info("original tuple %s saved to %s", dict(values), self.path)

    def load(self) -> SavedTuple | None:
        if self._unsaved is not None:
            return self._unsaved
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
                values={str(k): _int_or_none(v) for k, v in values.items()},
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

    def adopt(self, values: Mapping[str, int | None]) -> bool:
        """Replace some values of the saved tuple (a DBA's manual change); False when the
        disk refused: the merged tuple is then held in memory (a clean stop restores it)
        and :meth:`ensure_saved` refuses every change until it is on disk."""
        saved = self.load()
        if saved is None:
            return True
        merged = {**saved.values, **{name: _int_or_none(v) for name, v in values.items()}}
        try:
            self.save(saved.engine, merged)
        except OSError as exc:
            self._unsaved = SavedTuple(
                engine=saved.engine, values=merged, saved_at=utc_now().isoformat(), pid=os.getpid()
            )
            self._refused(exc)
            return False
        self._unsaved = None
        return True

    def clear(self) -> None:
        """Forget the saved tuple (it is in force again). A file the disk will not let go
        of is logged: it holds what is in force now, so a later restore changes nothing
        unless someone changed a knob meanwhile."""
        self._unsaved = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            logger.error(
                "the original tuple is back in force but %s cannot be removed (%s): delete it "
                "by hand, or the next start puts that tuple back again",
                self.path,
                exc.strerror or exc,
            )
            return
        _fsync_dir(self.path.parent)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def put_back(target: Target, values: Mapping[str, int | None]) -> Mapping[str, int | None]:
    """Apply a saved tuple: through :meth:`RestoringTarget.restore` when the target has it,
    else :meth:`Target.apply` (which takes no ``None``)."""
    if isinstance(target, RestoringTarget):
        return target.restore(values)
    unset = sorted(name for name, value in values.items() if value is None)
    if unset:
        raise StateError(
            f"the state file has no value for {', '.join(unset)}, which a "
            f"{target.engine.value} target cannot put back: restore them by hand"
        )
    return target.apply({name: value for name, value in values.items() if value is not None})


def restore_original(target: Target, state: OriginalTupleFile) -> Mapping[str, int | None] | None:
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
    read_back = put_back(target, saved.values)
    if read_back != saved.values:
        logger.warning("restored %s but the server reads back %s", saved.values, read_back)
    state.clear()
    logger.info("original tuple %s restored (saved at %s)", saved.values, saved.saved_at)
    return read_back


def take_over(target: Target, state: OriginalTupleFile, *, what: str) -> TargetInfo:
    """Connect, put back the ``what`` a crashed run left changed, then check the server
    (raises :class:`TargetMisconfigured` when it cannot be tuned) and log its notes: how an
    agent starts on a server, whatever it tunes."""
    target.connect()
    restored = restore_original(target, state)
    if restored is not None:
        logger.warning("restored the original %s %s left by an earlier run", what, restored)
    info = target.check()
    for note in info.notes:
        logger.warning("%s", note)
    return info


def restore_original_retrying(
    target: Target,
    state: OriginalTupleFile,
    *,
    attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """:func:`restore_original`, reconnecting and retrying while the database is
    unreachable; False (logged) when it never was, and the state file stays for the next
    start or ``pooltune-agent restore``."""
    for attempt in range(1, attempts + 1):
        try:
            restored = restore_original(target, state)
        except TargetUnavailable as exc:
            logger.warning("restore attempt %d failed: %s", attempt, exc)
            sleep(min(5.0, 0.5 * attempt))
            with contextlib.suppress(TargetUnavailable):
                target.connect()
            continue
        if restored is not None:
            logger.info("original tuple restored: %s", restored)
        return True
    logger.error(
        "could not restore the original tuple; it stays in %s and the next start "
        "restores it (or run `pooltune-agent restore`)",
        state.path,
    )
    return False


class StatusFile:
    """What ``pooltune-agent status`` shows: rewritten atomically by the running agent.

    When ``path`` cannot be written (the state directory is full or read-only) the status
    goes to ``fallback`` (in the runtime directory) with ``status_file_error`` saying why;
    :meth:`read` prefers the fallback while it exists, and a successful write of ``path``
    removes it. It is rewritten every sample and not synced to disk: two fsyncs every
    2 s would load the database host's disk (on an IO-bound server, the very resource
    being tuned), and a power loss costs at most the last status, which the agent rewrites
    when it starts again.
    """

    def __init__(self, path: Path, *, fallback: Path | None = None) -> None:
        self.path = path
        self.fallback = fallback
        self._problem: str | None = None

    def write(self, status: Mapping[str, Any]) -> None:
        """Write ``status``; never raises (a status must not stop the agent): problems are
        logged once, when they start and when they end."""
        document: dict[str, Any] = {"format": STATE_FORMAT, "updated_at": utc_now().isoformat()}
        document.update(status)
        try:
            atomic_write_text(self.path, _status_text(document), mode=0o644, durable=False)
        except OSError as exc:
            self._write_fallback(document, f"cannot write {self.path}: {exc.strerror or exc}")
            return
        if self._problem is not None:
            logger.warning("status file %s written again", self.path)
            self._problem = None
        if self.fallback is not None:
            with contextlib.suppress(FileNotFoundError, OSError):
                self.fallback.unlink()

    def _write_fallback(self, document: dict[str, Any], problem: str) -> None:
        document["status_file_error"] = problem
        where = "nowhere else (no runtime directory)"
        if self.fallback is not None:
            try:
                atomic_write_text(self.fallback, _status_text(document), mode=0o644, durable=False)
                where = f"to {self.fallback} instead"
            except OSError as exc:
                where = f"nor to {self.fallback} ({exc.strerror or exc})"
        message = f"{problem}; the status goes {where}"
        if message != self._problem:
            logger.warning("%s", message)
        self._problem = message

    def read(self) -> dict[str, Any] | None:
        """The running agent's status: the fallback while it exists, else ``path``."""
        for path in (self.fallback, self.path):
            if path is None:
                continue
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                raise StateError(f"cannot read the status file {path}: {exc}") from exc
            if not isinstance(document, dict):
                raise StateError(f"status file {path} is damaged")
            return document
        return None


def _status_text(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"
