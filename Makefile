# Two entry points on a fresh machine: `make study` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TOOLS := $(VENV)-tools/bin
CORES ?= 16
SNAKEMAKE_ARGS ?=
PYTEST_ARGS ?=
# the progress display (topotrain.progress); `LOGGER=` gives Snakemake's own output (a block per job)
LOGGER ?= --logger topotrain

.PHONY: install demo study calibrate control test test-long test-slurm lint licences citation clean-results

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install -e ".[test]"

## A first study in minutes: the .test/ study (2 models, 40 steps, a 2,000-character corpus) end to
## end into results/REPORT.md and results/report.html, every section with its "too few to decide" notes.
demo: install
	$(BIN)/topotrain demo --cores 2 .

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
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## The long end-to-end checks (a minute or more each: the Pythia, runs, groups and control branches
## end to end, the control's training bit for bit, the calibration suite's size); .ci/run runs them.
test-long: install
	$(BIN)/python -m pytest -m long $(PYTEST_ARGS)

## The workflow through a real single-node SLURM cluster (root, slurm-wlm and munge installed).
test-slurm: install
	$(BIN)/python -m pytest -m slurm $(PYTEST_ARGS)

lint: install
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
