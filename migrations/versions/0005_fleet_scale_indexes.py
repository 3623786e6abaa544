"""fleet scale: an index for every list and filter route, and for report retention

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 17:15:00.000000

``GET /v1/hosts?engine=`` and ``GET /v1/reports`` (by host, engine, climb end time) read
newest first and page with LIMIT/OFFSET: a composite index (filter, id) answers both the
page and the count without sorting the table. ``GET /v1/models?name=``, the newest report
of a host (``host_id, finished_at, id``), and ``pooltune-service prune`` (a report is kept
while a host names it as its last: ``hosts.last_report_id``) get theirs.
docs/service.md, "Scale".
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (name, table, columns)
INDEXES = (
    ("ix_hosts_engine_id", "hosts", ["engine", "id"]),
    ("ix_hosts_last_report_id", "hosts", ["last_report_id"]),
    ("ix_reports_host_id_id", "reports", ["host_id", "id"]),
    ("ix_reports_engine_id", "reports", ["engine", "id"]),
    ("ix_reports_finished_at", "reports", ["finished_at"]),
    ("ix_reports_host_id_finished_at_id", "reports", ["host_id", "finished_at", "id"]),
    ("ix_model_versions_name", "model_versions", ["name"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
