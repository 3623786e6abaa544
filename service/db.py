"""Declarative base, engine construction and the per-request session dependency."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import BigInteger, DateTime, Dialect, Integer, MetaData, create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.pool import NullPool, StaticPool
from sqlalchemy.types import TypeDecorator

from service.config import Settings

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: A 64-bit id on PostgreSQL, SQLite's INTEGER (its only auto-incrementing type) elsewhere.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware timestamps on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; pass a timezone-aware value")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    return datetime.now(UTC)


def build_engine(settings: Settings, *, io_timeout_s: float | None = None) -> Engine:
    """The engine for ``settings.database_url``; SQLite gets foreign keys and a busy timeout.

    On PostgreSQL every wait has a bound (docs/service.md): connecting
    (``db_connect_timeout_s``), a free pooled connection (``db_pool_timeout_s``), each
    statement on the server (``db_statement_timeout_s``) and, because a frozen server or
    network sends nothing at all, each exchange on the client (``io_timeout_s``, by default
    :attr:`Settings.db_io_timeout_s`). ``io_timeout_s`` also marks a probe engine (readiness):
    no pool, so every check connects afresh.
    """
    url = settings.database_url
    if url.startswith("sqlite"):
        kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": 30}}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs["poolclass"] = StaticPool
        elif io_timeout_s is not None:
            kwargs["poolclass"] = NullPool
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        return engine
    from service.db_deadline import deadline_connect_args, use_deadline_connections

    connect_args = deadline_connect_args(settings)
    if io_timeout_s is not None:
        engine = create_engine(url, poolclass=NullPool, connect_args=connect_args)
    else:
        engine = create_engine(
            url,
            connect_args=connect_args,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            pool_pre_ping=True,
            pool_timeout=settings.db_pool_timeout_s,
        )
    use_deadline_connections(engine, io_timeout_s or settings.db_io_timeout_s)
    return engine


def build_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


def get_db_session(request: Request) -> Iterator[Session]:
    """One session per request: services flush, this commits on success, else rolls back."""
    factory: sessionmaker[Session] = request.app.state.sessionmaker
    with factory() as session:
        try:
            yield session
        except BaseException:
            session.rollback()
            raise
        else:
            session.commit()


# scope="function": commit before the response leaves, so a 201 means the row is durable.
SessionDep = Annotated[Session, Depends(get_db_session, scope="function")]


def dialect_name(connection: Session | Connection) -> str:
    """``postgresql`` or ``sqlite``: the database behind a session or a connection."""
    bind = connection if isinstance(connection, Connection) else connection.get_bind()
    name: str = bind.dialect.name
    return name


def insert_ignoring_conflict(
    session: Session | Connection,
    table: Any,
    values: dict[str, Any],
    *,
    conflict_columns: list[str],
) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING id``: the new id, or None on a conflict.

    The database arbitrates concurrent inserts of the same key, so no request ever sees an
    IntegrityError for a benign race (and no transaction is poisoned by one).
    """
    dialect = dialect_name(session)
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        stmt: Any = pg_insert(table).values(**values)
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        stmt = sqlite_insert(table).values(**values)
    else:  # pragma: no cover - only PostgreSQL and SQLite are supported
        raise RuntimeError(f"unsupported database dialect {dialect!r}")
    stmt = stmt.on_conflict_do_nothing(index_elements=conflict_columns).returning(table.c.id)
    return session.execute(stmt).scalar_one_or_none()
