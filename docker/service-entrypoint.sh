#!/bin/sh
# The service container: wait for PostgreSQL and migrate (`migrate`), then serve
# (`serve` would migrate too; doing it first makes a failed migration exit early).
set -eu
pooltune-service migrate
exec pooltune-service serve --host 0.0.0.0 --port "${POOLTUNE_PORT:-8000}" --no-migrate
