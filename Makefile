# The README's commands. Each target creates the virtual environment it needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export DO_NOT_TRACK := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# The local model's llama.cpp is built for any x86-64 CPU with AVX2, never with
# -march=native: a native build on a CPU that advertises AMX (which this kind of VM
# does not let a process use) segfaults at the first call. The wheel is kept in a
# folder named by the version and these flags, built without pip's wheel cache, and
# installed from there only, so a wheel built with other flags is never reused. Each build works in
# a folder of its own, so that two checkouts set up at once on one machine do not write into each
# other's: the first to finish is kept, the other's is dropped.
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON \
	-DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF \
	-DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_KEY := $(shell echo "$(LLAMA_VERSION) $(LLAMA_CMAKE_ARGS)" | sha1sum | cut -c1-12)
WHEELHOUSE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/babelbench/wheels/llama-cpp-python-$(LLAMA_VERSION)-$(LLAMA_KEY)
LLAMA_WHEEL_DONE := $(WHEELHOUSE)/.complete
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt 2>/dev/null | sha1sum | cut -c1-8)-$(LLAMA_KEY)

.PHONY: venv llama-wheel demo test bench serve stack stack-down deploy languages verdict-words docs clean

$(LLAMA_WHEEL_DONE):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "building llama-cpp-python $(LLAMA_VERSION) for portable x86-64 + AVX2 (about 6 minutes, once per machine)"
	mkdir -p $(dir $(WHEELHOUSE))
	partial=$$(mktemp -d $(WHEELHOUSE).partial-XXXXXX) && trap 'rm -rf "$$partial"' EXIT && \
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" FORCE_CMAKE=1 $(BIN)/pip wheel --quiet --no-deps --no-cache-dir \
		--no-binary llama-cpp-python -w "$$partial" "llama-cpp-python==$(LLAMA_VERSION)" && \
	echo "$(LLAMA_CMAKE_ARGS)" > "$$partial/.complete" && \
	{ test -f $(LLAMA_WHEEL_DONE) || { rm -rf $(WHEELHOUSE) && mv -T "$$partial" $(WHEELHOUSE); } || test -f $(LLAMA_WHEEL_DONE); }

llama-wheel: $(LLAMA_WHEEL_DONE)

$(STAMP): pyproject.toml constraints.txt $(LLAMA_WHEEL_DONE)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --force-reinstall --no-deps --no-index --find-links $(WHEELHOUSE) "llama-cpp-python==$(LLAMA_VERSION)"
	$(BIN)/pip install --quiet -c constraints.txt --only-binary llama-cpp-python --find-links $(WHEELHOUSE) -e ".[test,bench,local]"
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

demo: venv  ## run the main job offline on the bundled sample
	$(BIN)/python -m tasks.llm.backends.llamacpp_check
	$(BIN)/babelbench demo

test: venv  ## the import layers (pyproject's import-linter contracts), pyflakes' checks (ruff), then the test suite
	$(BIN)/lint-imports
	$(BIN)/ruff check --quiet .
	$(BIN)/python -m tasks.llm.backends.llamacpp_check
	$(BIN)/pytest

# pyserini is wanted only for the Anserini jar inside its wheel: its own dependencies (nmslib,
# spacy, onnxruntime, ...) are neither needed nor all installable here, so it is not in the bench extra.
bench: venv  ## run every benchmark but pipeline_scale (hours at its sizes: run it alone); each prints JSON lines
	$(BIN)/pip install --quiet --no-deps -c constraints.txt "$$(grep '^pyserini==' constraints.txt)"
	@for b in benchmarks/[!_]*.py; do [ $$b = benchmarks/pipeline_scale.py ] && continue; echo "== $$b"; \
		BABELBENCH_BENCH_PEERS=required $(BIN)/python $$b || exit 1; done

languages: venv  ## regenerate tasks/text/languages.csv from pywikibot, CLDR and Snowball
	$(BIN)/python -m tasks.text.generate_languages

CLDR_MISC := cldr-misc-full@48.2.0
verdict-words: venv  ## regenerate tasks/text/verdict_words.csv from CLDR's yes/no words (npm package $(CLDR_MISC))
	rm -rf .cldr && mkdir -p .cldr && cd .cldr && npm pack --silent $(CLDR_MISC) >/dev/null && tar xzf *.tgz
	$(BIN)/python -m tasks.text.generate_verdict_words --cldr .cldr/package
	rm -rf .cldr

docs: venv  ## regenerate the README's DAG picture and docs/cli.md from the stages and the CLI
	$(BIN)/python -m deployments.docs

serve: venv  ## a Prefect server, a worker and the MLflow UI on loopback; prints their URLs
	DO_NOT_TRACK=1 $(BIN)/python -m deployments.serve

WORKERS ?= 2
stack: venv  ## in the background: PostgreSQL, Prefect and MLflow servers on it, WORKERS workers, the warehouse on a DuckLake
	DO_NOT_TRACK=1 $(BIN)/python -m deployments.stack up --workers $(WORKERS)

stack-down: venv  ## stop what `make stack` started (its databases and files are kept)
	$(BIN)/python -m deployments.stack down

deploy: venv  ## register prefect.yaml's deployments with the server at PREFECT_API_URL
	$(BIN)/python -m deployments.register

clean:
	rm -rf .babelbench .pytest_cache
