"""The project's benchmarks. Each times a project path against a plain reference measured in the
same run and reports their ratio; results go to benchmarks/results/<name>.json (git-ignored).

One entry point, run from the repository's root:

    python -m benchmarks                      # the suite: every case marked suite below
    python -m benchmarks topology pythia      # some cases, and the summary table
    python -m benchmarks training --profile   # one case with its own options (NAME --help)
    python -m benchmarks --list               # the cases, with what each measures
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    """A benchmark: its module in this package (``run()`` gives the suite's rows, ``main(argv)``
    takes the case's own options) and whether the suite runs it by default."""

    module: str
    suite: bool


CASES = {  # every benchmark, in the suite's order
    "training": Case("training", suite=True),
    "topology": Case("topology", suite=True),
    "engines": Case("engines", suite=False),  # ripser.py vs giotto-ph (the `fast` extra), ~2 min
    "workflow": Case("workflow", suite=True),
    "pythia": Case("pythia_embedding", suite=True),
    "callback": Case("callback", suite=True),
    "gradients": Case("gradients", suite=False),  # three designs of the gradient job, ~4 min
    "scale": Case("scale", suite=False),  # 3 k to 1 B parameters, ~3 min; --max-params 2e8: ~1
    "attention": Case("attention", suite=False),  # also part of training's rows on a CPU
    "ensemble": Case("ensemble", suite=False),  # stacked members vs single runs, CPU, ~1 min
    "ensemble_jobs": Case("ensemble_jobs", suite=False),  # whole trainings: one job vs one per seed
    "gelu": Case("gelu", suite=False),
    "eval_windows": Case("eval_windows", suite=False),  # per-seed vs common val windows, ~5 min
    "analysis": Case("analysis", suite=True),  # the analysis chain's hot loops, ~10 s
    "study_overhead": Case("study_overhead", suite=False),  # reads a finished study's log
    "job_granularity": Case("job_granularity", suite=False),  # a finished study's topology stage
    "cuda_checks": Case("cuda_checks", suite=False),  # needs a GPU
}
