-- Run once by the PostgreSQL image on an empty data directory, in database "bench".
-- The agent's PostgreSQL role: pg_monitor to read every backend's activity and the
-- statistics views. Change the passwords outside a laptop.
CREATE ROLE pooltune LOGIN PASSWORD 'pooltune' IN ROLE pg_monitor;
-- The read share comes from pg_stat_statements (in shared_preload_libraries, see compose).
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
-- pgbench's account (the load), through PgBouncer.
CREATE ROLE app LOGIN PASSWORD 'app';
GRANT CREATE ON SCHEMA public TO app;
