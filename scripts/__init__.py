"""Maintenance commands (run from the repository root): dataset builders, system setup."""
