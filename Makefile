# Two entry points on a fresh machine: `make study` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TOOLS := $(VENV)-tools/bin
# every core of this machine (`make study CORES=2` for fewer)
CORES ?= $(shell nproc 2>/dev/null || echo 1)
SNAKEMAKE_ARGS ?=
PYTEST_ARGS ?=
# the progress display (topotrain.progress); `LOGGER=` gives Snakemake's own output (a block per job)
LOGGER ?= --logger topotrain

PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
# pip runs once per install and again only when pyproject.toml changes: a stamp file per install.
# The study's targets install the core (permissive: ripser.py); the test targets add the `test`
# extra (giotto-ph, AGPL-3.0, and gudhi: the tests' references), after which `topology.engine:
# auto` runs giotto-ph in this venv too. Every run names its engine before the first job.
CORE := $(VENV)/.installed-core
TEST := $(VENV)/.installed-test

.PHONY: install install-test demo study calibrate control test test-long test-slurm lint licences citation clean-results

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(CORE): pyproject.toml | $(BIN)/python
	@echo "installing topotrain (the core) into $(VENV)"
	$(PIP) -e .
	@touch $@

$(TEST): pyproject.toml $(CORE)
	@echo "installing topotrain with its test tools into $(VENV)"
	$(PIP) -e ".[test]"
	@touch $@

install: $(CORE)

install-test: $(TEST)

## A first study in minutes: the .test/ study (2 models × 2 seeds, 40 steps, a 2,000-character
## corpus) end to end into results/REPORT.md and results/report/report.html, every section drawn.
demo: install
	$(BIN)/topotrain demo --cores $(CORES) .

## Create the environment, install, and run the whole study (a failed job's log is printed).
study: install
	$(BIN)/snakemake --cores $(CORES) --show-failed-logs $(LOGGER) $(SNAKEMAKE_ARGS)

## The calibration suite (off the study's default path): results/tables/calibration.csv, and the
## power of both answers on the verdict rule: results/tables/question_power.csv.
calibrate: install
	$(BIN)/snakemake calibration question_power --cores $(CORES) --show-failed-logs $(LOGGER) $(SNAKEMAKE_ARGS)

## The study with the grokking positive control switched on (only the control's jobs and the
## report run when the study is done): results/tables/control.csv and the report's section.
control: install
	$(BIN)/snakemake --cores $(CORES) --show-failed-logs $(LOGGER) --config 'control={enabled: true}' $(SNAKEMAKE_ARGS)

## Create the environment, install, and run the default test suite (without the SLURM test).
test: install-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## The long end-to-end checks (a minute or more each: the Pythia, runs, groups and control branches
## end to end, the control's training bit for bit, the calibration suite's size); .ci/run runs them.
test-long: install-test
	$(BIN)/python -m pytest -m long $(PYTEST_ARGS)

## The workflow through a real single-node SLURM cluster (root, slurm-wlm and munge installed).
test-slurm: install-test
	$(BIN)/python -m pytest -m slurm $(PYTEST_ARGS)

lint: install-test
	$(BIN)/ruff check src tests workflow/scripts benchmarks tools
	$(BIN)/ruff format --check src tests workflow/scripts benchmarks tools
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint

# pip-licenses and cffconvert in a venv of their own: cffconvert pins jsonschema < 4, topotrain
# needs jsonschema >= 4.
$(TOOLS)/python:
	$(PYTHON) -m venv $(VENV)-tools
	$(TOOLS)/python -m pip install "pip-licenses>=5" "cffconvert>=2"

## The licences of the core install against licences/allowed.txt (a package outside it fails with
## its name), and README's Licences paragraph naming every non-permissive extra.
licences: install $(TOOLS)/python
	$(BIN)/python tools/check_licences.py --pip-licenses $(TOOLS)/pip-licenses

## CITATION.cff validated against the Citation File Format schema.
citation: $(TOOLS)/python
	$(TOOLS)/cffconvert --validate -i CITATION.cff

clean-results:
	rm -rf results .snakemake
