"""The real ``pooltune-agent`` on the suite's PgBouncer: its TOML configuration and
environment (passwords through POOLTUNE_DB_PASSWORD and POOLTUNE_PG_PASSWORD), and what
PgBouncer runs, read on its admin console."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.pgbouncer import PgBouncer


def write_config(
    directory: Path,
    bouncer: PgBouncer,
    *,
    pools: Sequence[str] = (),
    bounds: tuple[int, int] = (1, 64),
    climb_max_s: float = 10.0,
    profile_window_s: float = 2.0,
    sample_period_s: float = 0.5,
) -> Path:
    """An agent configuration without secrets (they come from :func:`agent_env`); with
    ``pools``, per-database sizes climbed in turn, else ``default_pool_size`` by SET."""
    cluster = bouncer.cluster
    text = f"""
[agent]
state_dir = "{directory / "state"}"
sample_period_s = {sample_period_s}
profile_window_s = {profile_window_s}
climb_max_s = {climb_max_s}
log_level = "INFO"

[target]
engine = "pgbouncer"
host = "{bouncer.host}"
port = {bouncer.port}
user = "{bouncer.admin_user}"

[target.pgbouncer]
postgres_host = "{cluster.host}"
postgres_port = {cluster.port}
postgres_user = "{cluster.role}"
postgres_database = "{cluster.database}"
pools = {json.dumps(list(pools))}

[climber]
knobs = ["default_pool_size"]

[bounds]
default_pool_size = [{bounds[0]}, {bounds[1]}]
"""
    path = directory / "agent.toml"
    path.write_text(text)
    return path


def agent_env(bouncer: PgBouncer) -> dict[str, str]:
    env = dict(os.environ)
    env["POOLTUNE_DB_PASSWORD"] = bouncer.admin_password
    env["POOLTUNE_PG_PASSWORD"] = bouncer.cluster.password
    env["PYTHONUNBUFFERED"] = "1"
    return env


def state_file(config: Path) -> Path:
    return config.parent / "state" / "original-tuple.json"


def saved_tuple(config: Path) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads(state_file(config).read_text())
    except FileNotFoundError:
        return None
    values: dict[str, Any] = document["original_tuple"]
    return values


def pool_sizes(bouncer: PgBouncer) -> dict[str, int]:
    """The pool size in force per database (SHOW DATABASES)."""
    import psycopg

    with psycopg.connect(bouncer.admin_conninfo(), autocommit=True) as connection:
        cursor = connection.execute(b"SHOW DATABASES")
        assert cursor.description is not None
        names = [column.name for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return {str(row["name"]): int(row["pool_size"]) for row in rows if row["name"] != "pgbouncer"}


def setting(bouncer: PgBouncer, name: str) -> int:
    (value,) = [row[1] for row in bouncer.admin("SHOW CONFIG") if row[0] == name]
    return int(value)


def ini_line(bouncer: PgBouncer, database: str) -> str:
    (line,) = [
        text
        for text in bouncer.config_file.read_text().splitlines()
        if text.startswith(f"{database} ")
    ]
    return line
