# The README's commands. Each target creates the virtual environment it needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt 2>/dev/null | sha1sum | cut -c1-12)
export DO_NOT_TRACK := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv demo test bench serve deploy clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test,bench,local]"
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

demo: venv  ## run the main job offline on the bundled sample
	$(BIN)/babelbench demo

test: venv  ## run the test suite
	$(BIN)/pytest

bench: venv  ## run every benchmark; each prints one JSON line
	@for b in benchmarks/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

serve: venv  ## a Prefect server on loopback, to see flow runs and run deployments
	$(BIN)/prefect server start --host 127.0.0.1

deploy: venv  ## register prefect.yaml's deployments with the server at PREFECT_API_URL
	$(BIN)/python -m deployments.register

clean:
	rm -rf .babelbench .pytest_cache
