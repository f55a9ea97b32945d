# Set-up and the two everyday jobs. A virtual environment keeps the system Python untouched.
# TORCH_SPEC picks the torch build installed before the model extras (any pip requirement:
# "torch==2.13.0", "torch==2.13.0+cpu --index-url ...", a wheel path); the dataset builders
# never import torch.
PYTHON ?= python3
TORCH_SPEC ?= torch==2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONSTRAINTS ?= constraints.txt
PIP_CONSTRAINTS := $(if $(CONSTRAINTS),-c $(CONSTRAINTS),)

.PHONY: setup repro test test-fast bench clean-venv

$(STAMP): pyproject.toml setup.py $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_SPEC)
	$(BIN)/python -m pip install -q $(PIP_CONSTRAINTS) -e '.[pipeline,models,test,ray]'
	touch $(STAMP)

setup: $(STAMP)

# Rebuild every dataset of dvc.yaml from params.yaml (offline with the shipped params).
repro: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

# The suite runs on TEST_WORKERS processes (pytest-xdist; 1: in this process). Each test file
# stays on one worker, in order: some files' later tests read what their earlier ones ran (the
# Ray scale tests reuse the runs they compared), which work stealing would split.
TEST_WORKERS ?= 2
PYTEST_WORKERS := $(if $(filter 1,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile)

test: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(PYTEST_WORKERS)

# The inner loop (under 2 minutes): unit tests and doctests, without the tests marked slow
# (whole-CLI contract runs, servers, models; see SLOW_MODULES in tests/conftest.py). Works on a
# fresh checkout: no `make repro` needed (tests/sample_repo.py builds the sample datasets).
test-fast: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(PYTEST_WORKERS) -m "not slow"

# The CPU figures of docs/benchmarks.md (about 35 minutes on 2 cores; GPU: benchmarks/gpu.sh).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_zp_lke.py --threads 1 --json .bench/zp_lke.json
	$(BIN)/python benchmarks/bench_generate.py --threads 1 --json .bench/generate.json
	for n in 1000000 10000000; do \
	  $(BIN)/python benchmarks/bench_build_facts.py --facts $$n --json .bench/build_facts.jsonl && \
	  $(BIN)/python benchmarks/bench_build_mc.py --facts $$n --json .bench/build_mc.jsonl || exit 1; \
	done
	$(BIN)/python benchmarks/bench_belief_fluctuation.py

clean-venv:
	rm -rf $(VENV)
