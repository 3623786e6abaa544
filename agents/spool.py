"""The on-disk spool: climb reports waiting for the service.

One file per report, written atomically in a versioned envelope, sent oldest first and
deleted only after the service acknowledged it; capped in bytes (the oldest are dropped and
counted); unknown or damaged files go to ``rejected/``. A report the disk refuses (full,
read-only) is held in memory, within the same cap, and written as soon as the disk takes it.
Format: docs/agent.md, "Reports, the service client and the spool" and "Faults".
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agents.clock import utc_now
from agents.state import atomic_write_text
from agents.wire import ClimbReport

logger = logging.getLogger(__name__)

SPOOL_FORMAT = 1
KIND_CLIMB_REPORT = "climb_report"
_META = "spool-meta.json"
#: ``<sequence>-<idempotency key>.json``: the sequence orders the files, oldest first.
_SEQUENCE = re.compile(r"^(\d+)-")


class SpoolError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SpooledReport:
    #: None for a report held in memory (the disk refused it).
    path: Path | None
    report: ClimbReport
    attempts: int


class Spool:
    """A directory of reports waiting to be sent, capped at ``max_bytes``."""

    def __init__(self, directory: Path, *, max_bytes: int = 50_000_000) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.rejected_dir = directory / "rejected"
        #: Reports the disk refused, oldest first, with their failed delivery attempts.
        self._held: list[tuple[ClimbReport, int]] = []
        #: Drops not yet counted on disk (the disk refused the count too).
        self._dropped_unsaved = 0
        self._problem: str | None = None

    # -- bookkeeping ------------------------------------------------------------------

    def _meta(self) -> dict[str, int]:
        try:
            document = json.loads((self.directory / _META).read_text())
            return {"dropped": int(document.get("dropped", 0))}
        except (OSError, ValueError, AttributeError):
            return {"dropped": 0}

    @property
    def dropped(self) -> int:
        """Reports dropped to respect the size cap, over the spool's life."""
        return self._meta()["dropped"] + self._dropped_unsaved

    @property
    def held(self) -> int:
        """Reports held in memory because the disk refused them."""
        return len(self._held)

    def _count_dropped(self, count: int) -> None:
        meta = self._meta()
        meta["dropped"] += count + self._dropped_unsaved
        try:
            atomic_write_text(self.directory / _META, json.dumps(meta) + "\n")
        except OSError:
            self._dropped_unsaved += count
        else:
            self._dropped_unsaved = 0

    def files(self) -> list[Path]:
        """Spooled report files, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("*.json") if p.name != _META)

    def __len__(self) -> int:
        return len(self.files()) + len(self._held)

    def size_bytes(self) -> int:
        """Bytes the spool holds, on disk and in memory (what the cap limits)."""
        total = sum(len(self._envelope(report, attempts)) for report, attempts in self._held)
        for path in self.files():
            with contextlib.suppress(FileNotFoundError):
                total += path.stat().st_size
        return total

    def _next_name(self, key: str) -> str:
        """A file name that sorts after every spooled file, whatever the wall clock did."""
        sequence = time.time_ns()
        files = self.files()
        if files:
            last = _SEQUENCE.match(files[-1].name)
            if last is not None:
                sequence = max(sequence, int(last.group(1)) + 1)
        return f"{sequence:020d}-{key}.json"

    # -- writing ----------------------------------------------------------------------

    def _envelope(self, report: ClimbReport, attempts: int) -> str:
        document = {
            "spool_format": SPOOL_FORMAT,
            "kind": KIND_CLIMB_REPORT,
            "idempotency_key": report.idempotency_key,
            "spooled_at": utc_now().isoformat(),
            "attempts": attempts,
            "payload": report.model_dump(mode="json"),
        }
        return json.dumps(document, separators=(",", ":")) + "\n"

    def put(self, report: ClimbReport) -> Path | None:
        """Store ``report``; the same idempotency key replaces nothing and adds nothing.
        Returns its file, or None when the disk refused it and it is held in memory."""
        key = report.idempotency_key
        for existing in self.files():
            if existing.name.endswith(f"-{key}.json"):
                return existing
        if any(held.idempotency_key == key for held, _ in self._held):
            return None
        text = self._envelope(report, attempts=0)
        if len(text.encode()) > self.max_bytes:
            self._count_dropped(1)
            logger.error(
                "report %s (%d bytes) is larger than the whole spool (%d bytes): dropped",
                key,
                len(text.encode()),
                self.max_bytes,
            )
            raise SpoolError("report larger than the spool's size cap")
        self._make_room(len(text.encode()))
        self._held.append((report, 0))
        self._write_held()
        for existing in self.files():
            if existing.name.endswith(f"-{key}.json"):
                return existing
        return None

    def _write_held(self) -> None:
        """Move the reports held in memory to disk, oldest first, while the disk takes them."""
        while self._held:
            report, attempts = self._held[0]
            try:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                path = self.directory / self._next_name(report.idempotency_key)
                atomic_write_text(path, self._envelope(report, attempts))
            except OSError as exc:
                problem = f"{exc.strerror or exc}"
                if problem != self._problem:
                    logger.error(
                        "cannot write to the spool %s (%s): %d report(s) held in memory until "
                        "it can, or until the service takes them (lost if the agent stops)",
                        self.directory,
                        problem,
                        len(self._held),
                    )
                self._problem = problem
                return
            self._held.pop(0)
            if self._problem is not None:
                logger.warning("the spool %s is writable again", self.directory)
                self._problem = None

    def _make_room(self, incoming: int) -> None:
        """Drop the oldest reports until ``incoming`` bytes fit under the cap: those held in
        memory first (the disk may not let go of its files), then the oldest files."""
        total = self.size_bytes()
        dropped = 0
        while self._held and total + incoming > self.max_bytes:
            report, attempts = self._held.pop(0)
            total -= len(self._envelope(report, attempts))
            dropped += 1
            logger.warning("spool full: dropped the oldest report %s", report.idempotency_key)
        for oldest in self.files():
            if total + incoming <= self.max_bytes:
                break
            try:
                size = oldest.stat().st_size
                oldest.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                logger.error("spool full and %s cannot be dropped: %s", oldest.name, exc)
                break
            total -= size
            dropped += 1
            logger.warning("spool full: dropped the oldest report %s", oldest.name)
        if dropped:
            self._count_dropped(dropped)

    def record_attempt(self, item: SpooledReport) -> None:
        """Count one more failed delivery attempt in the file (atomically)."""
        if item.path is None:
            self._held = [
                (report, attempts + 1 if report is item.report else attempts)
                for report, attempts in self._held
            ]
            return
        with contextlib.suppress(FileNotFoundError, OSError):
            atomic_write_text(item.path, self._envelope(item.report, item.attempts + 1))

    # -- reading ----------------------------------------------------------------------

    def pending(self) -> Iterator[SpooledReport]:
        """Spooled reports, oldest first (those still held in memory last); unreadable files
        are moved to ``rejected/``."""
        self._write_held()
        yield from self._pending_files()
        for report, attempts in list(self._held):
            yield SpooledReport(path=None, report=report, attempts=attempts)

    def _pending_files(self) -> Iterator[SpooledReport]:
        for path in self.files():
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
                version = document.get("spool_format")
                if version != SPOOL_FORMAT or document.get("kind") != KIND_CLIMB_REPORT:
                    raise SpoolError(
                        f"unknown spool format {version!r} / kind {document.get('kind')!r}"
                    )
                report = ClimbReport.model_validate(document["payload"])
                attempts = int(document.get("attempts", 0))
            except FileNotFoundError:
                continue
            except (ValueError, KeyError, TypeError, AttributeError, SpoolError) as exc:
                if isinstance(exc, ValidationError):
                    exc_text = f"payload no longer valid: {exc.error_count()} errors"
                else:
                    exc_text = str(exc)
                self.reject(path, exc_text)
                continue
            yield SpooledReport(path=path, report=report, attempts=attempts)

    def remove(self, item: SpooledReport) -> None:
        """The service has ``item``: forget it."""
        if item.path is None:
            self._held = [(r, a) for r, a in self._held if r is not item.report]
            return
        with contextlib.suppress(FileNotFoundError):
            item.path.unlink()

    def reject_item(self, item: SpooledReport, reason: str) -> None:
        """The service will never accept ``item``: out of the queue (to ``rejected/``, or
        dropped and logged when it is held in memory)."""
        if item.path is not None:
            self.reject(item.path, reason)
            return
        logger.error("report %s rejected: %s", item.report.idempotency_key, reason)
        self._held = [(r, a) for r, a in self._held if r is not item.report]

    def reject(self, path: Path, reason: str) -> None:
        """Move a file the service (or this agent) will never accept out of the queue."""
        logger.error("spooled report %s rejected: %s", path.name, reason)
        with contextlib.suppress(FileNotFoundError):
            self.rejected_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.replace(self.rejected_dir / path.name)
