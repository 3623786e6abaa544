"""The PgBouncer live benchmark's parts: its cases and one case on a fresh lab."""
