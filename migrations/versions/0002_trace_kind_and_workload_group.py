"""trace sample kind and climber workload group replace string side channels

Rewrites stored reports (no schema change); the downgrade does the reverse:

- a trace sample whose ``state`` is ``"sweep:<knob>"``, for a knob the sample carries,
  becomes ``kind = "sweep"``, ``sweep_knob = <knob>`` and no state;
- ``climber.settings["workload_group"]`` (a string of 1 to 128 characters, no NUL) becomes
  ``climber.workload_group``.

A rewritten report's ``payload_sha256`` is recomputed for its new form, so the same report
uploaded again (a dataset imported twice) is still recognised. See docs/datasets.md.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24 10:00:00
"""

import logging
import zlib
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from alembic import op

from agents.wire import TraceSample
from service.db import UTCDateTime
from service.reports.service import payload_sha256, to_climb_report
from service.reports.trace_codec import decode_samples, encode_samples

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

logger = logging.getLogger("alembic.runtime.migration")

SWEEP_STATE = "sweep:"
BATCH = 500

#: The columns a report is rebuilt from (for its digest), as this revision knows them.
reports = sa.table(
    "reports",
    sa.column("id", sa.BigInteger()),
    sa.column("payload_sha256", sa.String()),
    sa.column("schema_version", sa.Integer()),
    sa.column("idempotency_key", sa.String()),
    sa.column("host_facts", sa.JSON()),
    sa.column("profile", sa.JSON()),
    sa.column("start_tuple", sa.JSON()),
    sa.column("start_source", sa.String()),
    sa.column("start_model_version", sa.String()),
    sa.column("optimal_tuple", sa.JSON()),
    sa.column("default_tuple", sa.JSON()),
    sa.column("throughput_start", sa.Float()),
    sa.column("throughput_optimal", sa.Float()),
    sa.column("throughput_default", sa.Float()),
    sa.column("converged", sa.Boolean()),
    sa.column("samples_to_converge", sa.Integer()),
    sa.column("climber", sa.JSON()),
    sa.column("trace", sa.LargeBinary()),
    sa.column("started_at", UTCDateTime()),
    sa.column("finished_at", UTCDateTime()),
)

Sample = dict[str, Any]
Climber = dict[str, Any]


def _sweep_state_to_kind(sample: Sample) -> Sample:
    state = sample.get("state")
    if not isinstance(state, str) or not state.startswith(SWEEP_STATE):
        return sample
    knob = state[len(SWEEP_STATE) :]
    if not knob or "\x00" in knob or knob not in (sample.get("knobs") or {}):
        return sample  # not a sweep the new contract can state: left as it is
    rewritten = {key: value for key, value in sample.items() if key != "state"}
    return rewritten | {"kind": "sweep", "sweep_knob": knob}


def _kind_to_sweep_state(sample: Sample) -> Sample:
    if sample.get("kind") != "sweep":
        return sample
    rewritten = {key: value for key, value in sample.items() if key not in ("kind", "sweep_knob")}
    rewritten["state"] = f"{SWEEP_STATE}{sample.get('sweep_knob', '')}"
    return rewritten


def _settings_group_to_field(climber: Climber) -> Climber:
    settings = climber.get("settings") or {}
    group = settings.get("workload_group")
    if not isinstance(group, str) or not 1 <= len(group.strip()) <= 128 or "\x00" in group:
        return climber
    moved = {key: value for key, value in settings.items() if key != "workload_group"}
    return climber | {"settings": moved, "workload_group": group.strip()}


def _field_to_settings_group(climber: Climber) -> Climber:
    group = climber.get("workload_group")
    if group is None:
        return climber
    settings: dict[str, Any] = {}
    # Where the dataset importer wrote it (after the workload id), so a re-import by the
    # previous version hashes alike; else at the end.
    for key, value in (climber.get("settings") or {}).items():
        settings[key] = value
        if key == "workload_id":
            settings["workload_group"] = group
    settings.setdefault("workload_group", group)
    rest = {key: value for key, value in climber.items() if key != "workload_group"}
    return rest | {"settings": settings}


def _rewrite(
    rewrite_sample: Callable[[Sample], Sample], rewrite_climber: Callable[[Climber], Climber]
) -> None:
    if op.get_context().as_sql:
        raise RuntimeError("revision 0002 rewrites stored reports: run it online, not with --sql")
    connection = op.get_bind()
    last_id = 0
    while True:
        rows = connection.execute(
            sa.select(reports).where(reports.c.id > last_id).order_by(reports.c.id).limit(BATCH)
        ).all()
        if not rows:
            return
        for row in rows:
            try:
                samples = decode_samples(row.trace)
            except (ValueError, zlib.error) as exc:
                logger.warning("report %s: trace unreadable, left as it is (%s)", row.id, exc)
                continue
            new_samples = [rewrite_sample(sample) for sample in samples]
            new_climber = rewrite_climber(dict(row.climber or {}))
            if new_samples == samples and new_climber == (row.climber or {}):
                continue
            values = row._asdict() | {"trace": encode_samples(new_samples), "climber": new_climber}
            try:
                rebuilt = to_climb_report(
                    SimpleNamespace(**values),
                    [TraceSample.model_validate(sample) for sample in new_samples],
                )
                values["payload_sha256"] = payload_sha256(rebuilt)
            except ValueError as exc:  # a row today's contract refuses keeps its digest
                logger.warning("report %s: payload_sha256 kept (%s)", row.id, exc)
            connection.execute(
                sa.update(reports)
                .where(reports.c.id == row.id)
                .values(
                    trace=values["trace"],
                    climber=values["climber"],
                    payload_sha256=values["payload_sha256"],
                )
            )
        last_id = rows[-1].id


def upgrade() -> None:
    _rewrite(_sweep_state_to_kind, _settings_group_to_field)


def downgrade() -> None:
    _rewrite(_kind_to_sweep_state, _field_to_settings_group)
