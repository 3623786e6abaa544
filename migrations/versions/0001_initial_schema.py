"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 23:40:56.040601
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "enrollment_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=False),
        sa.Column("max_uses", sa.Integer(), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_enrollment_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_enrollment_tokens_token_hash")),
    )
    op.create_table(
        "hosts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hostname", sa.String(length=253), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("engine_version", sa.String(length=100), nullable=False),
        sa.Column("cpu_count", sa.Integer(), nullable=False),
        sa.Column("memory_bytes", sa.BigInteger(), nullable=False),
        sa.Column("current_tuple", sa.JSON(), nullable=True),
        sa.Column(
            "last_report_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("last_report_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hosts")),
        sa.UniqueConstraint("hostname", "engine", name=op.f("uq_hosts_hostname_engine")),
    )
    op.create_index(op.f("ix_hosts_engine"), "hosts", ["engine"], unique=False)
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("artifact", sa.LargeBinary(), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifact_size", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("training_summary", sa.JSON(), nullable=False),
        sa.Column("is_promoted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("promoted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_versions")),
        sa.UniqueConstraint(
            "engine", "name", "version", name=op.f("uq_model_versions_engine_name_version")
        ),
    )
    op.create_index(
        "uq_model_versions_promoted_engine",
        "model_versions",
        ["engine"],
        unique=True,
        postgresql_where=sa.text("is_promoted"),
        sqlite_where=sa.text("is_promoted"),
    )
    op.create_table(
        "agents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("enrollment_token_id", sa.Integer(), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("token_prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rotated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["enrollment_token_id"],
            ["enrollment_tokens.id"],
            name=op.f("fk_agents_enrollment_token_id_enrollment_tokens"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["host_id"], ["hosts.id"], name=op.f("fk_agents_host_id_hosts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_agents_token_hash")),
    )
    op.create_index(op.f("ix_agents_host_id"), "agents", ["host_id"], unique=False)
    op.create_table(
        "promotion_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_version_id", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("forced", sa.Boolean(), nullable=False),
        sa.Column("replaced_version_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_version_id"],
            ["model_versions.id"],
            name=op.f("fk_promotion_events_model_version_id_model_versions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["replaced_version_id"],
            ["model_versions.id"],
            name=op.f("fk_promotion_events_replaced_version_id_model_versions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_promotion_events")),
    )
    op.create_index(
        op.f("ix_promotion_events_model_version_id"),
        "promotion_events",
        ["model_version_id"],
        unique=False,
    )
    op.create_table(
        "recommendation_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=True),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("model_version_id", sa.Integer(), nullable=True),
        sa.Column("model_version", sa.String(length=200), nullable=True),
        sa.Column("host_facts", sa.JSON(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("start_tuple", sa.JSON(), nullable=False),
        sa.Column("ranges", sa.JSON(), nullable=False),
        sa.Column("fallback_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_recommendation_log_agent_id_agents"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["host_id"],
            ["hosts.id"],
            name=op.f("fk_recommendation_log_host_id_hosts"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["model_version_id"],
            ["model_versions.id"],
            name=op.f("fk_recommendation_log_model_version_id_model_versions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recommendation_log")),
    )
    op.create_index(
        op.f("ix_recommendation_log_created_at"), "recommendation_log", ["created_at"], unique=False
    )
    op.create_index(
        op.f("ix_recommendation_log_engine"), "recommendation_log", ["engine"], unique=False
    )
    op.create_table(
        "reports",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=False),
        sa.Column("payload_sha256", sa.String(length=64), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("converged", sa.Boolean(), nullable=False),
        sa.Column("samples_to_converge", sa.Integer(), nullable=True),
        sa.Column("start_source", sa.String(length=32), nullable=False),
        sa.Column("start_model_version", sa.String(length=200), nullable=True),
        sa.Column("host_facts", sa.JSON(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("start_tuple", sa.JSON(), nullable=False),
        sa.Column("optimal_tuple", sa.JSON(), nullable=False),
        sa.Column("default_tuple", sa.JSON(), nullable=True),
        sa.Column("throughput_start", sa.Float(), nullable=False),
        sa.Column("throughput_optimal", sa.Float(), nullable=False),
        sa.Column("throughput_default", sa.Float(), nullable=True),
        sa.Column("climber", sa.JSON(), nullable=False),
        sa.Column("trace_samples", sa.Integer(), nullable=False),
        sa.Column("trace", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_reports_agent_id_agents"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["host_id"], ["hosts.id"], name=op.f("fk_reports_host_id_hosts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reports")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_reports_idempotency_key")),
    )
    op.create_index(op.f("ix_reports_converged"), "reports", ["converged"], unique=False)
    op.create_index(op.f("ix_reports_engine"), "reports", ["engine"], unique=False)
    op.create_index(
        "ix_reports_host_id_received_at", "reports", ["host_id", "received_at"], unique=False
    )
    op.create_index(op.f("ix_reports_received_at"), "reports", ["received_at"], unique=False)


def downgrade() -> None:

    op.drop_index(op.f("ix_reports_received_at"), table_name="reports")
    op.drop_index("ix_reports_host_id_received_at", table_name="reports")
    op.drop_index(op.f("ix_reports_engine"), table_name="reports")
    op.drop_index(op.f("ix_reports_converged"), table_name="reports")
    op.drop_table("reports")
    op.drop_index(op.f("ix_recommendation_log_engine"), table_name="recommendation_log")
    op.drop_index(op.f("ix_recommendation_log_created_at"), table_name="recommendation_log")
    op.drop_table("recommendation_log")
    op.drop_index(op.f("ix_promotion_events_model_version_id"), table_name="promotion_events")
    op.drop_table("promotion_events")
    op.drop_index(op.f("ix_agents_host_id"), table_name="agents")
    op.drop_table("agents")
    op.drop_index(
        "uq_model_versions_promoted_engine",
        table_name="model_versions",
        postgresql_where=sa.text("is_promoted"),
        sqlite_where=sa.text("is_promoted"),
    )
    op.drop_table("model_versions")
    op.drop_index(op.f("ix_hosts_engine"), table_name="hosts")
    op.drop_table("hosts")
    op.drop_table("enrollment_tokens")
