"""Service settings: one pydantic-settings class, read from ``POOLTUNE_*`` variables."""

from __future__ import annotations

import enum
from functools import lru_cache
from typing import Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Admin tokens that must never reach a shared deployment.
PLACEHOLDER_TOKENS = frozenset(
    {"", "change-me", "changeme", "changethis", "admin", "secret", "token"}
)
MIN_ADMIN_TOKEN_LENGTH = 16


class Environment(enum.StrEnum):
    DEVELOPMENT = "development"
    TEST = "test"
    PRODUCTION = "production"


class Settings(BaseSettings):
    """Validated once at start-up; ``create_app(settings)`` takes an instance for tests."""

    model_config = SettingsConfigDict(env_prefix="POOLTUNE_", extra="ignore", frozen=True)

    environment: Environment = Environment.DEVELOPMENT
    database_url: str = Field(
        default="sqlite:///./pooltune.db",
        description="SQLAlchemy URL; postgresql+psycopg://... in production.",
    )
    admin_token: SecretStr = Field(default=SecretStr("change-me"))
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    db_pool_size: int = Field(default=20, ge=1)
    db_max_overflow: int = Field(default=20, ge=0)
    db_wait_timeout_s: float = Field(
        default=60.0, ge=0.0, description="How long `serve` waits for the database at start-up."
    )
    # Timeouts: a database that is down or frozen costs a request a few seconds and a 503,
    # never a hung worker. See docs/service.md.
    db_connect_timeout_s: int = Field(
        default=3, ge=2, le=600, description="Connecting, handshake included (libpq's minimum: 2)."
    )
    db_statement_timeout_s: float = Field(
        default=5.0,
        gt=0.0,
        le=3600.0,
        description="Server-side statement_timeout; the client also gives up on any answer "
        "that takes longer than this plus db_io_grace_s (a frozen server sends nothing).",
    )
    db_io_grace_s: float = Field(default=1.0, gt=0.0, le=60.0)
    db_pool_timeout_s: float = Field(
        default=3.0, gt=0.0, le=600.0, description="Waiting for a free pooled connection."
    )
    db_retry_after_s: int = Field(
        default=5, ge=1, le=3600, description="Retry-After of a 503 database_unavailable."
    )
    readyz_timeout_s: float = Field(
        default=2.0, gt=0.0, le=60.0, description="/readyz answers 503 past this."
    )
    #: How long an agent's previous token keeps working after a rotation (unless the new one
    #: is used first), so a rotation whose answer was lost can be retried.
    token_rotation_overlap_s: float = Field(default=600.0, ge=0.0, le=7 * 24 * 3600.0)
    enrollment_token_ttl_hours: float = Field(default=24.0, gt=0.0)
    # Fleet scale (docs/service.md, "Scale"): the hot routes' caches and the batched log.
    db_pgbouncer: bool = Field(
        default=False,
        description="The database URL points at PgBouncer in transaction mode: no prepared "
        "statements, no startup options (the role carries statement_timeout).",
    )
    agent_token_cache_s: float = Field(
        default=5.0,
        ge=0.0,
        le=60.0,
        description="How long a replica reuses an agent-token lookup: a revocation or a "
        "rotation made on another replica takes effect within this bound (0: no cache).",
    )
    promotion_check_s: float = Field(
        default=1.0,
        ge=0.0,
        le=60.0,
        description="How long a replica reuses its reading of the promoted model version: a "
        "promotion is served by every replica within this bound (0: read per request).",
    )
    gc_freeze: bool = Field(
        default=False,
        description="Move everything alive after start-up (models, metadata, modules) out of "
        "the garbage collector's reach and collect the young generations less often, so a "
        "full collection does not stall requests; `pooltune-service serve` turns it on "
        '(docs/service.md, "Scale").',
    )
    loop_lag_warn_ms: float = Field(
        default=100.0,
        ge=0.0,
        le=60_000.0,
        description="Log a warning when a worker's event loop was held this long (it is "
        "measured in `pooltune_event_loop_lag_seconds` either way; 0: no warning).",
    )
    recommendation_log_linger_ms: float = Field(
        default=2.0, ge=0.0, le=1000.0, description="A log batch waits this long for company."
    )
    recommendation_log_batch_rows: int = Field(default=256, ge=1, le=10_000)
    recommendation_log_queue_rows: int = Field(
        default=8192,
        ge=1,
        le=1_000_000,
        description="Rows waiting to be written, at most; a request that finds the queue "
        "full waits up to db_pool_timeout_s, then answers 503.",
    )
    reports_retention_days: float | None = Field(
        default=None,
        gt=0.0,
        description="`pooltune-service prune` deletes reports received longer ago than this "
        "(each host's newest report is kept); unset: reports are kept forever.",
    )
    log_level: str = "INFO"
    #: pickle-based model artifacts run code on load. The trainer's artifacts are JSON, so
    #: pickle stays off unless a deployment trusts every writer of the registry.
    allow_pickle_models: bool = False
    #: The console's session cookies are signed with a key derived from this secret and the
    #: admin token (docs/console.md). Unset: one random secret kept in the database.
    console_secret: SecretStr | None = None
    console_session_hours: float = Field(default=12.0, gt=0.0, le=24.0 * 30)
    #: Mark the session cookie Secure even on plain HTTP (TLS ends at a proxy that does not
    #: forward the scheme); behind TLS seen by the service it is Secure anyway.
    console_secure_cookies: bool = False
    #: How long a pending approval waits for an admin before it expires ("do nothing").
    approval_ttl_hours: float = Field(default=24.0, gt=0.0, le=24.0 * 30)

    @model_validator(mode="after")
    def _no_placeholder_secrets(self) -> Self:
        if self.environment is Environment.DEVELOPMENT:
            return self
        token = self.admin_token.get_secret_value()
        if token.strip().lower() in PLACEHOLDER_TOKENS or len(token) < MIN_ADMIN_TOKEN_LENGTH:
            raise ValueError(
                "POOLTUNE_ADMIN_TOKEN is a placeholder or shorter than "
                f"{MIN_ADMIN_TOKEN_LENGTH} characters; set a real secret "
                f"(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`) "
                f"or run with POOLTUNE_ENVIRONMENT=development"
            )
        return self

    @property
    def db_io_timeout_s(self) -> float:
        """The client-side deadline of one exchange with the database."""
        return self.db_statement_timeout_s + self.db_io_grace_s

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
