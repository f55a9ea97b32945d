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

.PHONY: setup repro test test-fast bench llama-server clean-venv

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
# Ray scale tests reuse the runs they compared), which work stealing would split. The units
# (a file, or one test of a file whose tests share nothing) and their order, longest first,
# are tests/conftest.py's; xdist's own reordering by test count is off. Three workers on two
# cores: a third of the suite waits (servers, timeouts, kills) and the third worker fills it;
# quiet, 2026-11-27: 767 s with 3, 877 s with 4 (Ray's tests starve), 1041 s with 2 before the
# order (docs/benchmarks.md, test suite). Each worker gives torch its share of the cores.
# test-fast waits on nothing and runs on as many workers as cores (101 s on 2, 116 s on 3).
TEST_WORKERS ?= 3
FAST_WORKERS ?= 2
workers = $(if $(filter 1,$(1)),-p no:xdist,-n $(1) --dist loadfile --no-loadscope-reorder)

# The first `make test` on a machine also builds llama.cpp's server (`llama-server` below, once:
# a stamp in the environment remembers it), which the llama.cpp tests need; where the build
# fails they skip and say why. LLAMA=0 leaves the build out.
LLAMA ?= 1

test: $(STAMP)
	$(if $(filter 1,$(LLAMA)),$(MAKE) --no-print-directory llama-server || echo "llama.cpp's server was not built: tests/planted/test_llamacpp.py will skip (LLAMA=0 leaves the build out)" >&2)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(call workers,$(TEST_WORKERS))

# The inner loop (under 2 minutes): unit tests and doctests, without the tests marked slow
# (whole-CLI contract runs, servers, models; see SLOW_MODULES in tests/conftest.py). Works on a
# fresh checkout: no `make repro` needed (tests/sample_repo.py builds the sample datasets).
test-fast: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(call workers,$(FAST_WORKERS)) -m "not slow"

# The CPU figures of docs/benchmarks.md (about 35 minutes on 2 cores; GPU: benchmarks/gpu.sh).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_zp_lke.py --threads 1 --json .bench/zp_lke.json
	$(BIN)/python benchmarks/bench_generate.py --threads 1 --json .bench/generate.json
	for n in 1000000 10000000; do \
	  $(BIN)/python benchmarks/bench_build_facts.py --facts $$n --json .bench/build_facts.jsonl && \
	  $(BIN)/python benchmarks/bench_build_mc.py --facts $$n --json .bench/build_mc.jsonl || exit 1; \
	done
	$(BIN)/python benchmarks/bench_belief_fluctuation.py
	$(BIN)/python benchmarks/bench_kernels.py --layers 4 --width 512 --json .bench/kernels.json

# llama.cpp's OpenAI-compatible server for tests/planted/test_llamacpp.py (skipped without it):
# llama-cpp-python[server] at constraints.txt's version, built from PyPI's source (about 25
# minutes on 2 busy cores; pip caches the wheel), and llama.cpp's convert_hf_to_gguf.py from
# that same source into .llama/llama.cpp (sentencepiece: the converter imports it).
LLAMA_DIR ?= .llama
LLAMA_STAMP := $(VENV)/.llama-installed
llama-server: $(LLAMA_STAMP)

# built once per environment: a change of the Python packages does not rebuild it (delete the
# stamp to); removing the environment removes both
$(LLAMA_STAMP): | $(STAMP)
	mkdir -p $(LLAMA_DIR)
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: $(PIP_CONSTRAINTS) \
	  -d $(LLAMA_DIR) llama-cpp-python
	$(BIN)/python -m pip install -q $(PIP_CONSTRAINTS) sentencepiece \
	  "$$(ls $(LLAMA_DIR)/llama_cpp_python-*.tar.gz | head -1)[server]"
	tar -xzf "$$(ls $(LLAMA_DIR)/llama_cpp_python-*.tar.gz | head -1)" -C $(LLAMA_DIR) \
	  --strip-components 2 --wildcards '*/vendor/llama.cpp/convert_hf_to_gguf.py' \
	  '*/vendor/llama.cpp/conversion' '*/vendor/llama.cpp/gguf-py'
	touch $(LLAMA_STAMP)

clean-venv:
	rm -rf $(VENV)
