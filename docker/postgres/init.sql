-- The service's database role: behind PgBouncer in transaction mode the service cannot set
-- statement_timeout per connection (startup options are not passed on), so the role has it.
-- Keep it equal to POOLTUNE_DB_STATEMENT_TIMEOUT_S (5 s by default).
ALTER ROLE pooltune SET statement_timeout = '5s';
