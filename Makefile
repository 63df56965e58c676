# Every target creates and uses the local virtual environment in .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help

help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the engine with its dev tools

run: $(STAMP) ## Run the main job offline (no API key needed)
	$(BIN)/python examples/quickstart.py

test: $(STAMP) ## Run the test suite
	$(BIN)/python -m pytest -q

lint: $(STAMP) ## ruff check, ruff format --check and mypy --strict on engine/
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP) ## Run the benchmarks (medians, side by side)
	$(BIN)/python bench/decision_overhead.py
	$(BIN)/python bench/journal_overhead.py

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

.PHONY: help install run test lint bench clean
