from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.config import Settings


@pytest.mark.parametrize("token", ["change-me", "changethis", "short"])
@pytest.mark.parametrize("environment", ["production", "test"])
def test_placeholder_admin_tokens_are_refused_outside_development(
    token: str, environment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POOLTUNE_ENVIRONMENT", environment)
    monkeypatch.setenv("POOLTUNE_ADMIN_TOKEN", token)
    with pytest.raises(ValidationError, match="POOLTUNE_ADMIN_TOKEN"):
        Settings()


def test_development_accepts_the_placeholder_and_defaults_to_sqlite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("POOLTUNE_ENVIRONMENT", "POOLTUNE_ADMIN_TOKEN", "POOLTUNE_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.database_url.startswith("sqlite:///")
    assert settings.admin_token.get_secret_value() == "change-me"


def test_settings_come_from_prefixed_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POOLTUNE_ENVIRONMENT", "production")
    monkeypatch.setenv("POOLTUNE_ADMIN_TOKEN", "a-real-secret-of-some-length")
    monkeypatch.setenv("POOLTUNE_MAX_BODY_BYTES", "65536")
    settings = Settings()
    assert settings.max_body_bytes == 65536
    assert "a-real-secret" not in repr(settings)
