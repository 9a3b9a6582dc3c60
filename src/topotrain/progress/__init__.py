"""One progress display for a whole study, through Snakemake 9's logger-plugin interface
(``snakemake --logger topotrain``; ``make study`` and ``topotrain run`` use it, ``--plain`` or
``make study LOGGER=`` give Snakemake's own output).

What it shows: jobs done of total, the study's ETA, and each running training's step, validation
loss and ETA (read from the tail of its log, the lines ``training.train`` / ``training.ensemble``
write every ``eval_interval`` steps). No job's block: a job is one line when it finishes. The
ETA of the study sums, over the jobs still to run, each rule's mean duration × its threads, divided
by the cores: the durations come from this run's finished jobs, else from the benchmark files
Snakemake wrote in earlier runs beside the job's own (``results/benchmarks/…``, column ``s``), and
the running trainings' own ETAs; rules without either are counted as "+ N untimed".

Where it goes: on a terminal (stdout a TTY) one status line redrawn in place every second, messages
(errors, warnings, Snakemake's notes) printed above it on stderr; elsewhere (CI, a cluster's log,
a pipe) one line per finished job and, when nothing finished for a minute, one line on what is
running. Failures keep Snakemake's own text (its formatter), so ``topotrain run``'s one-line cause
and ``--show-failed-logs`` work as before. A dry run (``-n``) prints the job counts only.

``state.Study`` holds the state and composes the lines (unit-tested without Snakemake);
``handler.LogHandler`` is the plugin's handler (module ``snakemake_logger_plugin_topotrain``
exports it).
"""

from __future__ import annotations

from topotrain.progress.state import (
    Job,
    Study,
    Training,
    benchmark_seconds,
    clock,
    training_progress,
)

PLAIN = ("--logger", "-n", "--dry-run", "--dryrun", "--report")  # Snakemake's own output then


def with_display(args: list[str], plain: bool = False) -> list[str]:
    """``args`` with the progress display (``--logger topotrain``) unless ``plain``, a logger is
    named, or the run is a dry run or a report."""
    if plain or any(a.split("=", 1)[0] in PLAIN for a in args):
        return list(args)
    return ["--logger", "topotrain", *args]


def __getattr__(name: str):
    """``LogHandler`` imported on first use (it needs Snakemake's logger interface)."""
    if name == "LogHandler":
        from topotrain.progress.handler import LogHandler

        return LogHandler
    raise AttributeError(name)


__all__ = [
    "Job",
    "LogHandler",
    "Study",
    "Training",
    "benchmark_seconds",
    "clock",
    "training_progress",
    "with_display",
]
