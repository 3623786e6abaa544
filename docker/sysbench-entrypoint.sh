#!/bin/sh
# The load: prepare the sysbench tables once, then run the workload for a long time.
set -eu
TEST="${SYSBENCH_TEST:-oltp_read_write}"
COMMON="--db-driver=mysql --mysql-host=${MYSQL_HOST:-mariadb} --mysql-port=3306 \
 --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest \
 --tables=${SYSBENCH_TABLES:-4} --table-size=${SYSBENCH_TABLE_SIZE:-100000}"
until sysbench $TEST $COMMON --threads=1 --time=1 run >/dev/null 2>&1 \
    || sysbench $TEST $COMMON prepare; do
    echo "waiting for MariaDB"
    sleep 3
done
exec sysbench $TEST $COMMON --threads="${SYSBENCH_THREADS:-64}" \
    --time="${SYSBENCH_SECONDS:-86400}" --report-interval=10 run
