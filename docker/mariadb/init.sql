-- Run once by the MariaDB image on an empty data directory.
-- The agent's account: SET GLOBAL on the thread pool variables, read the status and the
-- information_schema THREAD_POOL_* tables. Change the password outside a laptop.
CREATE USER IF NOT EXISTS 'pooltune'@'%' IDENTIFIED BY 'pooltune';
GRANT SUPER, PROCESS, SLAVE MONITOR ON *.* TO 'pooltune'@'%';
-- sysbench's schema and account.
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER IF NOT EXISTS 'sbtest'@'%' IDENTIFIED BY 'sbtest';
GRANT ALL PRIVILEGES ON sbtest.* TO 'sbtest'@'%';
