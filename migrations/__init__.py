"""Alembic migrations for the service's schema (shipped in the wheel)."""
