"""token rotation overlap and hostname-scoped enrolment tokens

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 13:30:00.000000

``agents.previous_token_hash`` / ``previous_token_expires_at``: the token before the last
rotation, accepted for a short overlap (docs/service.md). ``enrollment_tokens.hostname``: a
token scoped to one hostname, the only way to enrol an already enrolled host again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # batch mode: SQLite cannot add a unique constraint with ALTER TABLE.
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("previous_token_hash", sa.String(length=64), nullable=True))
        batch.add_column(
            sa.Column("previous_token_expires_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch.create_unique_constraint(
            batch.f("uq_agents_previous_token_hash"), ["previous_token_hash"]
        )
    with op.batch_alter_table("enrollment_tokens") as batch:
        batch.add_column(sa.Column("hostname", sa.String(length=253), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("enrollment_tokens") as batch:
        batch.drop_column("hostname")
    with op.batch_alter_table("agents") as batch:
        batch.drop_constraint(batch.f("uq_agents_previous_token_hash"), type_="unique")
        batch.drop_column("previous_token_expires_at")
        batch.drop_column("previous_token_hash")
