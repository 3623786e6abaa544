-- A point select and 5 ms off-CPU (an external call) in one transaction: the pool size
-- that keeps PostgreSQL's cores busy is well above the core count.
\set aid random(1, 100000 * :scale)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT pg_sleep(0.005);
END;
