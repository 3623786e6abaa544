"""The on-disk spool: climb reports waiting for the service.

One file per report, ``<sequence>-<idempotency key>.json``, written atomically (temp file
+ ``os.replace``) in a versioned envelope::

    {"spool_format": 1, "kind": "climb_report", "idempotency_key": "...",
     "spooled_at": "...", "attempts": 0, "payload": {...ClimbReport...}}

Files are sent oldest first and deleted only after the service acknowledged them (2xx),
so a crash at any point re-sends at worst; the service's idempotency key turns that
into exactly-once storage. The spool is capped in bytes: when a new report does not
fit, the oldest are dropped and counted (``dropped`` in ``spool-meta.json``), never
silently. Files of an unknown format or damaged files are moved to ``rejected/``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from agents.state import atomic_write_text
from agents.wire import ClimbReport

logger = logging.getLogger(__name__)

SPOOL_FORMAT = 1
KIND_CLIMB_REPORT = "climb_report"
_META = "spool-meta.json"


class SpoolError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SpooledReport:
    path: Path
    report: ClimbReport
    attempts: int


class Spool:
    """A directory of reports waiting to be sent, capped at ``max_bytes``."""

    def __init__(self, directory: Path, *, max_bytes: int = 50_000_000) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.rejected_dir = directory / "rejected"

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
        return self._meta()["dropped"]

    def _count_dropped(self, count: int) -> None:
        meta = self._meta()
        meta["dropped"] += count
        atomic_write_text(self.directory / _META, json.dumps(meta) + "\n")

    def files(self) -> list[Path]:
        """Spooled report files, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("*.json") if p.name != _META)

    def __len__(self) -> int:
        return len(self.files())

    def size_bytes(self) -> int:
        total = 0
        for path in self.files():
            with contextlib.suppress(FileNotFoundError):
                total += path.stat().st_size
        return total

    # -- writing ----------------------------------------------------------------------

    def _envelope(self, report: ClimbReport, attempts: int) -> str:
        document = {
            "spool_format": SPOOL_FORMAT,
            "kind": KIND_CLIMB_REPORT,
            "idempotency_key": report.idempotency_key,
            "spooled_at": datetime.now(UTC).isoformat(),
            "attempts": attempts,
            "payload": report.model_dump(mode="json"),
        }
        return json.dumps(document, separators=(",", ":")) + "\n"

    def put(self, report: ClimbReport) -> Path:
        """Store ``report``; the same idempotency key replaces nothing and adds nothing."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        for existing in self.files():
            if existing.name.endswith(f"-{report.idempotency_key}.json"):
                return existing
        text = self._envelope(report, attempts=0)
        if len(text.encode()) > self.max_bytes:
            self._count_dropped(1)
            logger.error(
                "report %s (%d bytes) is larger than the whole spool (%d bytes): dropped",
                report.idempotency_key,
                len(text.encode()),
                self.max_bytes,
            )
            raise SpoolError("report larger than the spool's size cap")
        self._make_room(len(text.encode()))
        path = self.directory / f"{time.time_ns():020d}-{report.idempotency_key}.json"
        atomic_write_text(path, text)
        return path

    def _make_room(self, incoming: int) -> None:
        files = self.files()
        total = self.size_bytes()
        dropped = 0
        while files and total + incoming > self.max_bytes:
            oldest = files.pop(0)
            with contextlib.suppress(FileNotFoundError):
                total -= oldest.stat().st_size
                oldest.unlink()
                dropped += 1
                logger.warning("spool full: dropped the oldest report %s", oldest.name)
        if dropped:
            self._count_dropped(dropped)

    def record_attempt(self, item: SpooledReport) -> None:
        """Count one more failed delivery attempt in the file (atomically)."""
        with contextlib.suppress(FileNotFoundError):
            atomic_write_text(item.path, self._envelope(item.report, item.attempts + 1))

    # -- reading ----------------------------------------------------------------------

    def pending(self) -> Iterator[SpooledReport]:
        """Spooled reports, oldest first; unreadable files are moved to ``rejected/``."""
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
        with contextlib.suppress(FileNotFoundError):
            item.path.unlink()

    def reject(self, path: Path, reason: str) -> None:
        """Move a file the service (or this agent) will never accept out of the queue."""
        self.rejected_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        logger.error("spooled report %s rejected: %s", path.name, reason)
        with contextlib.suppress(FileNotFoundError):
            path.replace(self.rejected_dir / path.name)
