# The two commands the README opens with:
#   make run   — set up and run the service on 127.0.0.1:8000 (SQLite by default, zero setup)
#   make test  — set up the real components (PostgreSQL, MariaDB, sysbench, PgBouncer) and run
#                ruff, mypy and the whole pytest suite
# `make test-fast` skips the slow real-server tests for a quick local loop.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=

export POOLTUNE_TEST_PG_URL ?= postgresql+psycopg://pooltune:pooltune@127.0.0.1:5432/postgres
# Deterministic, single-threaded numerics in tests (LightGBM, OpenBLAS, Optuna).
export OMP_NUM_THREADS ?= 1

.PHONY: run test test-fast lint typecheck system venv clean help

help:
	@echo "make run        set up and start the service on http://$(HOST):$(PORT) (API docs at /docs)"
	@echo "make test       install what the tests need, then ruff, mypy and pytest (CI runs this)"
	@echo "make test-fast  the same without the slow real-server tests"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstall only when the project's dependencies change.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[agent,service,trainer]'
	touch $@

venv: $(VENV)/.installed-dev

# bootstrap: for each engine with bundled datasets (MariaDB: sim-v2 and the real sweeps;
# PgBouncer: pgbouncer-2core-v1 when there) whose database has no promoted model: import
# them, train, register and promote a model (a minute or two); otherwise it does nothing.
run: $(VENV)/.installed-run
	$(BIN)/pooltune-trainer bootstrap
	@echo "pooltune: console at http://$(HOST):$(PORT)/ (sign in with POOLTUNE_ADMIN_TOKEN, in development change-me), API docs at /docs (database: $${POOLTUNE_DATABASE_URL:-sqlite:///./pooltune.db})"
	$(BIN)/pooltune-service serve --host $(HOST) --port $(PORT)

system:
	bash scripts/ensure-system.sh

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy agents service trainer benchmarks scripts lab

test: system lint typecheck
	$(BIN)/pytest -p no:cacheprovider --durations=15 $(PYTEST_ARGS)

test-fast: lint typecheck
	$(BIN)/pytest -p no:cacheprovider -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
