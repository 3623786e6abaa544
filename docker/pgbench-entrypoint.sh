#!/bin/sh
# The PgBouncer pair's load: fill pgbench's tables once (straight on PostgreSQL), then run
# the script through PgBouncer for a long time (-M simple: transaction pooling).
set -eu
export PGPASSWORD="${PGBENCH_PASSWORD:-app}"
SCALE="${PGBENCH_SCALE:-4}"
until pgbench -h pg-app -U app -n -T 1 -c 1 -S bench >/dev/null 2>&1 \
    || pgbench -i -q -s "$SCALE" -h pg-app -U app bench; do
    echo "waiting for PostgreSQL"
    sleep 3
done
exec pgbench -h pgbouncer -p 6432 -U app -n -M simple \
    -c "${PGBENCH_CLIENTS:-64}" -j 2 -T "${PGBENCH_SECONDS:-86400}" -P 10 \
    -f "${PGBENCH_SCRIPT:-/etc/pgbench/sleep.sql}" bench
