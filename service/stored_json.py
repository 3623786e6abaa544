"""Reading JSON the database holds without trusting it: a damaged row shows as damaged.

Rows are written by this service, by the trainer and by anyone with database access. A
column that does not hold what its reader expects (a list where an object belongs, a tuple
whose values are not integers, a trace that does not decode) must not turn a list of rows, or
the row itself, into a 500. Readers take such values through these functions, which answer a
usable value and note what was wrong; the response carries the notes in ``damaged``.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def row_fields(obj: Any, names: Any) -> dict[str, Any]:
    """The attributes ``names`` of an ORM row (or a dict) as a dict, for a before-validator."""
    if isinstance(obj, dict):
        return dict(obj)
    return {name: getattr(obj, name) for name in names if hasattr(obj, name)}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def note_damage(damaged: list[str], field: str, problem: str, *, row: str) -> None:
    """Record (and log once per read) that ``field`` of ``row`` is damaged."""
    damaged.append(f"{field}: {problem}")
    logger.warning("damaged stored value", extra={"row": row, "field": field, "problem": problem})


def json_object(value: Any, field: str, damaged: list[str], *, row: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else ``{}`` and a note."""
    if isinstance(value, dict):
        return value
    note_damage(damaged, field, f"expected a JSON object, found {_kind(value)}", row=row)
    return {}


def knob_values(value: Any, field: str, damaged: list[str], *, row: str) -> dict[str, int] | None:
    """A stored ``{knob: integer}`` mapping, or None and a note when it is not one."""
    if isinstance(value, dict) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value.values()
    ):
        return value
    note_damage(damaged, field, f"expected {{knob: integer}}, found {_kind(value)}", row=row)
    return None


def tuple_values(value: Any, field: str, damaged: list[str], *, row: str) -> dict[str, int]:
    """The values of a stored knob tuple (``{"engine": ..., "values": {...}}``), or ``{}``."""
    inner = value.get("values") if isinstance(value, dict) else value
    return knob_values(inner, field, damaged, row=row) or {}
