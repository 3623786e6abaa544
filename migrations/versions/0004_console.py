"""console: approvals, console sessions and secret, predicted gain, page indexes

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 13:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "approvals",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=32), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("current_tuple", sa.JSON(), nullable=True),
        sa.Column("recommended_tuple", sa.JSON(), nullable=False),
        sa.Column("ranges", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("model_version", sa.String(length=200), nullable=True),
        sa.Column("predicted_gain", sa.Float(), nullable=True),
        sa.Column("predicted_gain_low", sa.Float(), nullable=True),
        sa.Column("predicted_gain_high", sa.Float(), nullable=True),
        sa.Column("approved_tuple", sa.JSON(), nullable=True),
        sa.Column("edited", sa.Boolean(), nullable=False),
        sa.Column("ttl_s", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_approvals_agent_id_agents"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["host_id"], ["hosts.id"], name=op.f("fk_approvals_host_id_hosts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approvals")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_approvals_idempotency_key")),
    )
    op.create_index("ix_approvals_host_id_id", "approvals", ["host_id", "id"], unique=False)
    op.create_index("ix_approvals_state_id", "approvals", ["state", "id"], unique=False)
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_sessions")),
    )
    op.create_index(
        op.f("ix_console_sessions_expires_at"), "console_sessions", ["expires_at"], unique=False
    )
    op.create_table(
        "console_secrets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_secrets")),
        sa.UniqueConstraint("name", name=op.f("uq_console_secrets_name")),
    )
    with op.batch_alter_table("recommendation_log") as batch:
        batch.add_column(sa.Column("predicted_gain", sa.Float(), nullable=True))
        batch.add_column(sa.Column("predicted_gain_low", sa.Float(), nullable=True))
        batch.add_column(sa.Column("predicted_gain_high", sa.Float(), nullable=True))
    op.create_index(
        "ix_recommendation_log_host_id_id", "recommendation_log", ["host_id", "id"], unique=False
    )
    op.create_index("ix_hosts_last_report_at", "hosts", ["last_report_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_hosts_last_report_at", table_name="hosts")
    op.drop_index("ix_recommendation_log_host_id_id", table_name="recommendation_log")
    with op.batch_alter_table("recommendation_log") as batch:
        batch.drop_column("predicted_gain_high")
        batch.drop_column("predicted_gain_low")
        batch.drop_column("predicted_gain")
    op.drop_table("console_secrets")
    op.drop_index(op.f("ix_console_sessions_expires_at"), table_name="console_sessions")
    op.drop_table("console_sessions")
    op.drop_index("ix_approvals_state_id", table_name="approvals")
    op.drop_index("ix_approvals_host_id_id", table_name="approvals")
    op.drop_table("approvals")
