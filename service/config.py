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
    db_wait_timeout_s: float = Field(default=60.0, ge=0.0)
    enrollment_token_ttl_hours: float = Field(default=24.0, gt=0.0)
    log_level: str = "INFO"
    #: pickle-based model artifacts run code on load. The trainer's artifacts are JSON, so
    #: pickle stays off unless a deployment trusts every writer of the registry.
    allow_pickle_models: bool = False

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
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
