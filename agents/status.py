"""The agent's counters and the status document ``pooltune-agent status`` shows
(docs/agent.md, "Status")."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.climber import Climber
from agents.spool import Spool
from agents.state import OriginalTupleFile


@dataclass(slots=True)
class Counters:
    samples: int = 0
    failed_samples: int = 0
    unexpected_errors: int = 0
    knob_changes: int = 0
    manual_changes: int = 0
    server_restarts: int = 0
    rollbacks: int = 0
    climbs: int = 0
    reports: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)

    def count_error(self, kind: str) -> None:
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1


def collector_health(target: object) -> dict[str, dict[str, float | int | str]]:
    """Per-collector successes, failures and last duration, when the target keeps them."""
    collector_set = getattr(target, "collector_stats", None)
    stats = getattr(collector_set, "stats", None)
    if not isinstance(stats, dict):
        return {}
    return {
        name: {
            "successes": entry.successes,
            "failures": entry.failures,
            "last_duration_s": round(entry.last_duration_s, 4),
            "last_error": entry.last_error,
        }
        for name, entry in stats.items()
    }


def status_document(
    *,
    phase: str,
    mode: str,
    approval: Mapping[str, Any] | None,
    climber: Climber | None,
    applied: Mapping[str, int],
    original: OriginalTupleFile,
    last_report: Mapping[str, Any],
    spool: Spool,
    target: object,
    counters: Counters,
) -> dict[str, Any]:
    """What the running agent writes to its status file after every iteration."""
    saved: dict[str, int | None] | str | None = None
    try:
        original_tuple = original.load()
        saved = original_tuple.values if original_tuple else None
    except Exception:  # status must never fail the loop
        saved = "unreadable"
    document: dict[str, Any] = {
        "phase": phase,
        "mode": mode,
        "climber_state": climber.state if climber is not None else None,
        "current_tuple": applied,
        "original_tuple": saved,
        "best_tuple": climber.best_tuple if climber is not None else None,
        "last_report": last_report or None,
        "spooled_reports": len(spool),
        "spool_dropped": spool.dropped,
        "collectors": collector_health(target),
        "counters": dataclasses.asdict(counters),
    }
    if approval is not None:
        # Approve mode: the request ("approval_id" at the top for the console and scripts);
        # recommend mode: what the agent would apply.
        if mode == "recommend":
            document["recommendation"] = dict(approval)
        else:
            document["approval"] = dict(approval)
            document["approval_id"] = approval.get("id")
    return document
