"""``[target.pgbouncer]``: parsed into the target section, errors name the key."""

from __future__ import annotations

import pytest

from agents.config import ConfigError, parse_config


def test_the_section_is_read() -> None:
    config = parse_config(
        {
            "target": {
                "engine": "pgbouncer",
                "port": 6432,
                "pgbouncer": {"pools": ["app"], "reserve_connections": 3, "postgres_port": 5433},
            }
        },
        env={},
    )
    assert config.target.pgbouncer.pools == ["app"]
    assert config.target.pgbouncer.reserve_connections == 3
    assert config.target.pgbouncer.postgres_port == 5433
    assert config.tuned_knob_names == ["default_pool_size", "reserve_pool_size"]


def test_a_misspelt_key_and_a_zero_reserve_are_refused() -> None:
    with pytest.raises(ConfigError, match="target.pgbouncer.poolz: unknown key"):
        parse_config({"target": {"engine": "pgbouncer", "pgbouncer": {"poolz": []}}}, env={})
    with pytest.raises(ConfigError, match="target.pgbouncer.reserve_connections"):
        parse_config(
            {"target": {"engine": "pgbouncer", "pgbouncer": {"reserve_connections": 0}}}, env={}
        )
