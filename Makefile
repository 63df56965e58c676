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

# The hot synchronous modules compiled in place with mypyc (tools/native.py lists them and
# says why those); a change to any of them compiles them again. `make pure` removes them, and
# ENGINE_PURE_PYTHON=1 runs the sources without removing them.
NATIVE := $(VENV)/.native
NATIVE_SOURCES := $(shell $(PY) tools/native.py sources)

$(NATIVE): $(STAMP) tools/native.py $(NATIVE_SOURCES)
	@$(BIN)/python tools/native.py build || { $(BIN)/python tools/native.py clean; \
	  echo "make native: mypyc could not compile the hot modules (above): the engine runs as pure Python"; }
	@touch $(NATIVE)

install: $(STAMP) $(NATIVE) ## Create .venv, install the engine with its dev tools, compile its hot modules

native: $(NATIVE) ## Compile the hot modules with mypyc, in place (make install does)

pure: ## Remove the compiled modules: the engine runs as pure Python
	$(BIN)/python tools/native.py clean
	rm -f $(NATIVE)

# The main job's settings: where its runs go, what it reads, and the offline model it uses
# (SimulatedModel: 50-250 ms a call, 15% bad replies so some decisions fail and suspend,
# and a tool call in half the turns that offer tools).
STORE ?= engine.db
TICKETS ?= examples/data/tickets.jsonl
DEMO_MODEL ?= simulated:seed=7,faults=0.15,latency=0.05-0.25,tool_rate=0.5
ENGINE := $(BIN)/engine

run: $(NATIVE) ## The main job, offline: route 600 tickets, resume the suspended ones
	@rm -f $(STORE) $(STORE)-wal $(STORE)-shm  # each demo starts from an empty store
	@# Exit status 1 says some runs stopped (suspended), as the faults mean them to: resumed next;
	@# or wait for a person: a refund above 500 EUR waits for approval (`engine answer`).
	$(ENGINE) run ticket_routing --input $(TICKETS) --store $(STORE) --model "$(DEMO_MODEL)" --concurrency 64 || [ $$? -eq 1 ]
	$(ENGINE) resume --all-suspended --store $(STORE) --model simulated:1 || [ $$? -eq 1 ]
	@echo ""
	@echo "The engine command is in $(BIN) ('source $(BIN)/activate' puts it on PATH). Also:"
	@echo "  engine runs                                  every run, its status and cost"
	@echo "  engine runs --status waiting                 refunds above 500 EUR waiting for approval"
	@echo "  engine answer RUN_ID --approve               approve one (or --edit '{...}', --reject WHY)"
	@echo "  engine graph ticket_routing -o graph.md      the routing graph in a Markdown file"

ui: $(STAMP) ## The web inspector on the main job's store: http://127.0.0.1:8700/
	$(ENGINE) ui --store $(STORE) --model simulated:1

quickstart: $(STAMP) ## The shortest example: a few tickets through one decision
	$(BIN)/python examples/quickstart.py

test: $(NATIVE) ## Run the test suite (on the compiled modules, where they compiled)
	$(BIN)/python -m pytest -q

test-pure: $(STAMP) ## Run the test suite on the pure-Python sources (ENGINE_PURE_PYTHON=1)
	ENGINE_PURE_PYTHON=1 $(BIN)/python -m pytest -q

# Two real OpenAI-compatible servers (llama-cpp-python's and llama.cpp's llama-server) with a
# tiny random-weight model, built offline into REALSERVER_DIR (${TMPDIR:-/tmp}/realserver; the
# first build takes minutes, later runs reuse it), started on free ports, stopped at the end.
test-servers: $(STAMP) ## Run tests/realserver against llama-server and llama-cpp-python
	tools/realserver/test_servers.sh $(ARGS)

lint: $(STAMP) ## ruff check, ruff format --check and mypy --strict on engine/
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP) ## Run the benchmarks (medians, side by side; several minutes)
	$(BIN)/python bench/decision_overhead.py
	$(BIN)/python bench/decision_breakdown.py
	$(BIN)/python bench/journal_overhead.py
	$(BIN)/python bench/run_memory.py
	$(BIN)/python bench/soak.py
	$(BIN)/python bench/workers.py  # needs PostgreSQL: ENGINE_TEST_PG_DSN, else 127.0.0.1:5432

clean: ## Remove the virtual environment, the compiled modules and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
	find engine -name '*.so' -delete

.PHONY: help install native pure run ui quickstart test test-pure test-servers lint bench clean
