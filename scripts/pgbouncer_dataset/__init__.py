"""The PgBouncer dataset's parts: cases, the lab it measures on, the case store, tables, README."""
