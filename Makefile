# karpy developer commands. `make run` and `make test` set up everything they need.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
UV_VERSION := 0.13.9
UV_DIR := .local/tools/uv
UV := $(UV_DIR)/bin/uv
VENV := .venv
VENV_STAMP := $(VENV)/.synced
BIN := $(VENV)/bin
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Installed packages get their bytecode at install time: with PYTHONDONTWRITEBYTECODE set (as in
# many CI images) every command would otherwise recompile scipy, pydantic and friends at start-up.
export UV_COMPILE_BYTECODE := 1

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(UV):
	$(PYTHON) -m venv $(UV_DIR)
	$(UV_DIR)/bin/pip install --quiet uv==$(UV_VERSION)

$(VENV_STAMP): uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --python $(PYTHON)
	@touch $@

.PHONY: install
install: $(VENV_STAMP) ## Install karpy and its development tools into .venv from uv.lock

.PHONY: binaries
binaries: ## Build (or reuse) the local control plane binaries, Karpenter's kwok controller and Prometheus
	@hack/k8s/build.sh >/dev/null
	@nice -n 10 hack/karpenter/build.sh >/dev/null
	@nice -n 10 hack/prometheus/build.sh >/dev/null

.PHONY: lint
lint: $(VENV_STAMP) ## ruff, mypy --strict and the import-layer contracts
	$(BIN)/ruff format --check karpy tests hack
	$(BIN)/ruff check karpy tests hack
	$(BIN)/mypy
	$(BIN)/lint-imports

.PHONY: format
format: $(VENV_STAMP) ## Format and autofix the code
	$(BIN)/ruff format karpy tests hack
	$(BIN)/ruff check --fix karpy tests hack

# Every generated copy of the CRDs: the plain manifests, the karpy chart's crds/ (installed once
# by helm) and the karpy-crd chart's templates/ (upgraded by helm), as Karpenter ships them.
CRD_DIRS := manifests/crds manifests/charts/karpy/crds manifests/charts/karpy-crd/templates

# The documentation's reference pages generated from the code (hack/gendocs.py).
DOCS_REFERENCE := docs/reference

.PHONY: generate
generate: $(VENV_STAMP) ## Regenerate the CRDs (manifests/crds and both charts), the docs' reference pages, the chart's values docs and the benchmark tables
	@for dir in $(CRD_DIRS); do $(BIN)/karpy crds --output-dir $$dir || exit 1; done
	@$(BIN)/python hack/gendocs.py --output $(DOCS_REFERENCE)
	@$(BIN)/python hack/chart_docs.py
	@$(BIN)/python -m tests.bench.report

.PHONY: check-generated
check-generated: $(VENV_STAMP) ## Fail when a generated CRD copy, reference page, chart values doc or benchmark table differs from its source
	@status=0; tmp=$$(mktemp -d); \
	if $(BIN)/karpy crds --output-dir $$tmp >/dev/null; then \
	  for dir in $(CRD_DIRS); do \
	    if ! diff -ru $$dir $$tmp; then echo "$$dir is stale: run make generate" >&2; status=1; fi; \
	  done; \
	else status=1; fi; rm -rf $$tmp; \
	tmp=$$(mktemp -d); \
	if $(BIN)/python hack/gendocs.py --output $$tmp; then \
	  for page in $$tmp/*.md; do \
	    name=$(DOCS_REFERENCE)/$$(basename $$page); \
	    if ! diff -u $$name $$page; then echo "$$name is stale: run make generate" >&2; status=1; fi; \
	  done; \
	else status=1; fi; rm -rf $$tmp; \
	$(BIN)/python hack/chart_docs.py --check || status=1; \
	$(BIN)/python -m tests.bench.report --check || status=1; exit $$status

.PHONY: docs
docs: $(VENV_STAMP) ## Build the documentation site (mkdocs --strict) into .local/site
	$(BIN)/mkdocs build --strict --site-dir .local/site

# Test files run on TEST_WORKERS pytest-xdist workers (one file stays on one worker; each worker
# starts its own control plane when a test needs one). tests/conftest.py orders the files longest
# first (weights in tests/file_order.py) and --no-loadscope-reorder keeps that order, so the long
# e2e files start at once and the short unit files fill in at the end. Four workers on two cores:
# the e2e files mostly wait on controllers' timers (two workers left the cores ~40% idle; 4 run the
# suite in ~24 min against ~39 with 2). TEST_WORKERS=0: in-process.
TEST_WORKERS ?= 4

.PHONY: test
test: $(VENV_STAMP) binaries lint check-generated docs ## Lint, then every test suite (e2e, integration, unit) on four xdist workers
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10 tests/e2e tests/integration tests/unit

.PHONY: bench
bench: $(VENV_STAMP) binaries ## Benchmarks; one JSON line per case, recorded in tests/bench/results.jsonl
	$(BIN)/python -m tests.bench

.PHONY: cluster-up
cluster-up: $(VENV_STAMP) binaries ## Start the local control plane in the background (.local/kubeconfig)
	$(BIN)/python hack/cluster.py up

.PHONY: cluster-down
cluster-down: $(VENV_STAMP) ## Stop every process cluster-up started
	$(BIN)/python hack/cluster.py down

.PHONY: run
run: $(VENV_STAMP) ## Run karpy with the kwok provider on the local control plane (or $KUBECONFIG)
	$(BIN)/python hack/run.py

.PHONY: clean
clean: ## Remove .venv and .local (the control plane binaries stay in the user cache)
	-$(BIN)/python hack/cluster.py down 2>/dev/null
	rm -rf $(VENV) .local
