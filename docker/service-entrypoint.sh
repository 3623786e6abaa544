#!/bin/sh
# The service container: wait for PostgreSQL and migrate (`migrate`), make sure a model is
# promoted (`pooltune-trainer bootstrap`: on an empty database it imports part of the bundled
# sim-v1 and trains a small model, seconds; otherwise it does nothing), then serve (`serve`
# would migrate too; doing it first makes a failed migration exit early).
set -eu
cd "$HOME"  # the model card is written under ./var/cards
pooltune-service migrate
pooltune-trainer bootstrap
exec pooltune-service serve --host 0.0.0.0 --port "${POOLTUNE_PORT:-8000}" --no-migrate
