# Chips: the targets a developer needs. `make help` lists them.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
VENV := .venv/bin

.PHONY: help install web browser flite up down status test test-unit test-e2e test-web test-deploy smoke lint format bench

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: .venv/.chips-synced ## Install uv (when missing) and every package into .venv
	@:

# Synced again only when a lock or a package's pyproject changed since (or .venv is new):
# a second `make up` does not spend seconds asking uv whether anything did.
.venv/.chips-synced: uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml)
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install -q uv
	@$(UV) sync --quiet
	@touch $@

web: ## Build the people's app into web/dist (when its sources changed; npm ci when the lock did)
	@scripts/build_web.sh

browser: ## Install Debian's chromium for the browser tests, when it is missing
	@scripts/ensure_chromium.sh

flite: ## Install Debian's flite, the speech the voice-note tests speak, when it is missing
	@scripts/ensure_flite.sh

up: install web ## Build the app; start every service, and NATS, Postgres, Redis, S3 where none answers
	@$(VENV)/chips-dev up

down: ## Stop what `make up` started
	@$(VENV)/chips-dev down

status: ## What `make up` started and whether it runs (or "nothing running")
	@$(VENV)/chips-dev status

test: install web browser flite ## Run the whole suite: the app's unit tests, then Python unit and end to end
	@cd web && npm test --silent
	@$(VENV)/pytest

test-unit: install flite ## Only the tests that need no infrastructure
	@$(VENV)/pytest libs services

test-e2e: install flite ## Only the end-to-end tests
	@$(VENV)/pytest tests/e2e

test-web: install web browser flite ## Only the people's app: its unit tests, then its browser tests
	@cd web && npm run --silent typecheck && npm test --silent
	@$(VENV)/pytest tests/e2e/test_web_app.py tests/e2e/test_web_agents.py tests/e2e/test_web_voice_notes.py

test-deploy: install ## Build the image and run docker-compose.yml with Podman, as root (installs Podman when missing)
	@scripts/ensure_podman.sh
	@$(VENV)/pytest -m deploy tests/deploy/test_compose_real.py -s -q

smoke: install ## On moved ports, as on a bare machine: up, the README's and the harness guide's steps as written, down, nothing left
	@$(VENV)/python scripts/smoke_bare.py

lint: install ## ruff (format and check), mypy --strict, and no more untyped dicts than ADR 0150 allows
	@$(VENV)/ruff format --check .
	@$(VENV)/ruff check .
	@$(VENV)/mypy libs/*/src services/*/src
	@$(VENV)/python scripts/count_untyped.py --check

format: install ## Format and fix what ruff can
	@$(VENV)/ruff format .
	@$(VENV)/ruff check --fix .

bench: install ## Run the benchmarks in bench/ (they print figures and write bench/results/)
	@for b in bench/*.py; do $(VENV)/python $$b; done
