#!/usr/bin/env bash
# Make sure the real components the test suite talks to are installed and running:
# PostgreSQL (with a "pooltune" role the tests log in as), MariaDB's server binaries (the
# tests start their own pool-of-threads instance on their own port and data directory),
# sysbench, PgBouncer and pgbench (the PgBouncer tests start their own cluster and pooler),
# and Chromium with its driver (the console's browser tests drive the system browser
# headless). Everything comes from Debian's packages. Idempotent: on a machine
# that has it all, this only checks.
set -euo pipefail

log() { printf 'ensure-system: %s\n' "$*" >&2; }

need_packages=()
command -v psql >/dev/null 2>&1 && compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null \
  || need_packages+=(postgresql postgresql-client)
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need_packages+=(mariadb-server mariadb-client)
command -v mariadb-install-db >/dev/null 2>&1 || need_packages+=(mariadb-server)
command -v sysbench >/dev/null 2>&1 || need_packages+=(sysbench)
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || need_packages+=(pgbouncer)
[ -x /usr/bin/chromium ] || need_packages+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_packages+=(chromium-driver)
# pgbench and pg_stat_statements ship with Debian's server package (postgresql-<v>); the PgBouncer
# tests start their own cluster with those binaries (lab/postgres.py finds them by glob).
compgen -G '/usr/lib/postgresql/*/bin/pgbench' >/dev/null || need_packages+=(postgresql)
compgen -G '/usr/lib/postgresql/*/lib/pg_stat_statements.so' >/dev/null || need_packages+=(postgresql-contrib)

if [ ${#need_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
    log "missing packages ${need_packages[*]}; install them (as root: apt-get install ${need_packages[*]})"
    exit 1
  fi
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  log "installing from Debian's packages: ${need_packages[*]}"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    "${need_packages[@]}" >/dev/null
fi

# PostgreSQL: start the cluster if it is down (no systemd in containers and CI machines).
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  cluster=$(pg_lsclusters -h 2>/dev/null | awk 'NR==1 {print $1" "$2}')
  if [ -z "$cluster" ]; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -1)
    log "creating PostgreSQL cluster $version main"
    pg_createcluster "$version" main >/dev/null
    cluster="$version main"
  fi
  log "starting PostgreSQL cluster $cluster"
  # shellcheck disable=SC2086
  pg_ctlcluster --skip-systemctl-redirect $cluster start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL does not answer on 127.0.0.1:5432"; exit 1; }

# The role the tests use: may create (and drop) its own databases, password login over TCP.
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }
if ! as_postgres psql -qtAX -c "select 1 from pg_roles where rolname = 'pooltune'" | grep -q 1; then
  log "creating PostgreSQL role pooltune"
  as_postgres psql -qX -c "create role pooltune login createdb password 'pooltune'" >/dev/null
fi
log "ok: PostgreSQL, MariaDB binaries, sysbench, PgBouncer, pgbench and Chromium are ready"
