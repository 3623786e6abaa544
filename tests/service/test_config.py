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


def test_a_serving_process_freezes_its_start_up_heap() -> None:
    import gc

    from service.app import GC_YOUNG_THRESHOLD, quiet_garbage_collector

    threshold = gc.get_threshold()
    try:
        quiet_garbage_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *threshold[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert Settings().gc_freeze is False  # tests build many apps: never frozen by default
