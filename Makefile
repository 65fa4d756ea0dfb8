# volta.serving: the two commands (see README.md) and the steps they are made of.
# Everything runs as root on Debian 12 and installs what it needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_INJECT_FACT_VARS := false
SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))

.PHONY: test checks fast demo demo-clean setup lab lint unit sanity real molecule clean

# make test's budget on a 2-core build machine from a fresh clone with empty caches (docs/dev/benchmarks.md#test-budget):
# printed against the elapsed time after each scenario and at the end, never enforced.
TEST_BUDGET_S := 2400

## make test: everything (lint, unit, sanity, the real-artifact tier, every molecule scenario).
# The checks run one after another beside the lab and its scenarios (two make jobs): they keep about
# one core busy, and the scenarios start as soon as the lab is up instead of after them. Their lines
# interleave as they come (no output sync, which would hold the scenarios' progress back to the end).
test: export VOLTA_TEST_START := $(shell date +%s)
test: setup
	@$(MAKE) --no-print-directory -j2 checks molecule
	@echo "make test: all passed in $$(( $$(date +%s) - $$VOLTA_TEST_START )) s (budget $(TEST_BUDGET_S) s)"

# The checks in order, in one make job (make test runs them beside molecule).
checks: setup
	@for step in lint unit sanity real; do $(MAKE) --no-print-directory $$step || exit 1; done

## make fast: lint + unit tests, for the edit loop. The two run side by side (two make jobs): ansible-lint and the
# unit tests each keep about one core busy. The unit tests leave out the packaging tests and the suites that run
# whole playbooks on the controller (VOLTA_UNIT_QUICK=1, tests/unit/conftest.py); make unit runs them all.
fast: export VOLTA_UNIT_QUICK := 1
fast: setup
	@$(MAKE) --no-print-directory -j2 lint unit

# make setup on its own says how to reach the venv's commands (make's own targets put it on their path).
SETUP_HINT := setup: ansible-playbook, ansible-vault and ansible-galaxy are in $(VENV)/bin only: first run source $(VENV)/bin/activate
setup:
	@tests/lab/setup-controller
	@$(if $(filter setup,$(MAKECMDGOALS)),echo "$(SETUP_HINT)",true)

lab: setup
	@$(BIN)/python tests/lab/labctl up

# ruff finds Python by extension; the bench scripts have none, so they are named.
BENCH_SCRIPTS := $(filter-out %.py %.md bench/callbacks bench/playbooks,$(wildcard bench/*))
lint: setup
	yamllint --strict .
	ruff check . $(BENCH_SCRIPTS)
	ansible-lint

unit: setup
	@tests/unit/run

sanity: setup
	@tests/sanity/run

# Tests against real releases from the Python index, cached outside the checkout (tests/real/README.md).
real: setup
	@tests/real/run

# Scenarios run in MOLECULE_LANES parallel lanes, longest first, and one at a time in extra lanes up to
# MOLECULE_MAX_LANES while the machine's CPU is idle (under make test: once the checks and llama.cpp's compile
# are done); a failed one runs MOLECULE_RETRIES more times, reported as such with why its failed tries failed
# (tests/molecule/run, docs/dev/testing.md).
MOLECULE_LANES ?= 2
MOLECULE_MAX_LANES ?= 3
MOLECULE_RETRIES ?= 1
molecule: lab
	@$(BIN)/python tests/molecule/run --lanes $(MOLECULE_LANES) --max-lanes $(MOLECULE_MAX_LANES) \
		--retries $(MOLECULE_RETRIES) --budget $(TEST_BUDGET_S) $(SCENARIOS)

## make demo: the simulated lab (two V100 servers) and site.yml against it
demo: lab
	@tests/lab/demo up

demo-clean: setup
	@tests/lab/demo down
	@$(BIN)/python tests/lab/labctl down
	@tests/lab/demo engine

clean: demo-clean
	rm -rf tests/lab/.build .cache $(VENV)
