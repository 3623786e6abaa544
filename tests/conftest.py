"""Shared fixtures: each real component lives in its own plugin module."""

pytest_plugins = [
    "tests.fixtures.postgres",
    "tests.fixtures.mariadb",
    "tests.fixtures.pgbouncer",
]
