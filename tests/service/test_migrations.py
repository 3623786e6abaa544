from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from sqlalchemy.pool import NullPool

from service.migrate import downgrade, upgrade
from service.models import Base
from tests.fixtures.postgres import scratch_database

pytestmark = pytest.mark.postgres

TABLES = {
    "agents",
    "approvals",
    "console_secrets",
    "console_sessions",
    "enrollment_tokens",
    "hosts",
    "model_versions",
    "promotion_events",
    "recommendation_log",
    "reports",
}


def _tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _schema_drift(url: str) -> list[object]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade_round_trip_on_postgresql() -> None:
    with scratch_database("pooltune_migrations") as url:
        upgrade(url)
        assert _tables(url) == TABLES
        downgrade(url, "base")
        assert _tables(url) == set()
        upgrade(url)
        assert _tables(url) == TABLES


def test_migrations_match_the_models(pg_database_url: str) -> None:
    """Autogenerate finds nothing to do: every model change has its revision."""
    assert _schema_drift(pg_database_url) == []


def test_migrations_also_run_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pooltune.db'}"
    upgrade(url)
    assert _tables(url) == TABLES
    assert _schema_drift(url) == []
    downgrade(url, "base")
    assert _tables(url) == set()
