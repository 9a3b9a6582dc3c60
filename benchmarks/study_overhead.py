"""How much of a study's wall time is not training: read a finished run's Snakemake log.

    python -m benchmarks study_overhead                   # the latest .snakemake/log/*.log
    python -m benchmarks study_overhead --log L --cores 2

Wall time: the first to the last timestamp of the log. Training: the sum of the train_model jobs'
durations (their start and "Finished" lines), divided by the cores. Overhead = 1 − training/cores
÷ wall: everything the run spends beyond training on every core (topology jobs, their start-up,
Snakemake's own bookkeeping, analysis, idle cores at the end). Per rule: jobs, their total and mean
seconds. The analysis chain: from the start of the last aggregate_run job (the one that waited
for the last topology job; a log from before the per-run jobs: of aggregate_features) to the
log's last timestamp, everything to REPORT.md; a log of the chain alone (``snakemake --forcerun
results/features/runs/<model>/seed<seed>/weights.parquet`` of the last run on a finished study:
its aggregate and rows, then everything after) gives it without the training line, and any
other part of a study (the LLC's jobs rerun) its rules' lines. Prints a table and writes
benchmarks/results/study_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from benchmarks.study import RESULTS, ROOT

OUT = RESULTS / "study_overhead.json"
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")


# the first job after the last topology job: the last aggregate_run, else (an older log)
CHAIN_STARTS = ("aggregate_run", "aggregate_features")


def parse(
    lines: list[str],
) -> tuple[list[datetime], dict[str, list[float]], dict[str, list[datetime]]]:
    """Every timestamp of the log, per rule the durations (s) of its finished jobs, and per rule
    the times its jobs started, in order."""
    stamps, started, durations, starts = [], {}, defaultdict(list), defaultdict(list)
    now, pending_rule = None, None
    for line in lines:
        line = line.rstrip("\n")
        if m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            stamps.append(now)
        elif m := START.match(line):
            pending_rule = m.group(1)
        elif (m := JOBID.match(line)) and pending_rule:
            started[m.group(1)] = now
            starts[pending_rule].append(now)
            pending_rule = None
        elif (m := DONE.match(line)) and m.group(1) in started:
            durations[m.group(2)].append((now - started[m.group(1)]).total_seconds())
    return stamps, dict(durations), dict(starts)


def chain_start(starts: dict[str, list[datetime]]) -> tuple[str, datetime]:
    """(rule, time) the analysis chain starts: the last aggregate_run job's start, or (a log
    from before the per-model jobs) the first aggregate_features job's."""
    if "aggregate_run" in starts:
        return "aggregate_run", max(starts["aggregate_run"])
    if "aggregate_features" in starts:
        return "aggregate_features", starts["aggregate_features"][0]
    raise ValueError(f"the log has no {' or '.join(CHAIN_STARTS)} job: no analysis chain to time")


def chain(stamps: list[datetime], starts: dict[str, list[datetime]]) -> float:
    """Seconds from the chain's start (``chain_start``) to the log's last timestamp."""
    return (stamps[-1] - chain_start(starts)[1]).total_seconds()


def overhead(stamps: list[datetime], durations: dict[str, list[float]], cores: int) -> dict:
    """Wall time, training per core and the overhead share, with per-rule totals."""
    if len(stamps) < 2 or "train_model" not in durations:
        raise ValueError("the log has no finished train_model job: is it a finished study's?")
    wall = (stamps[-1] - stamps[0]).total_seconds()
    training = sum(durations["train_model"])
    return {
        "wall_s": wall,
        "cores": cores,
        "training_s": training,
        "training_per_core_s": training / cores,
        "overhead_share": 1 - training / cores / wall,
        "rules": per_rule(durations),
    }


def report(r: dict) -> str:
    """The overhead line, then a line per rule: jobs, total and mean seconds."""
    line = (
        f"wall {r['wall_s'] / 60:.1f} min; training {r['training_s'] / 60:.1f} job-min = "
        f"{r['training_per_core_s'] / 60:.1f} min on {r['cores']} cores; overhead (all but "
        f"training) {r['overhead_share']:.1%} of wall"
    )
    return line + "\n" + rule_lines(r["rules"])


def per_rule(durations: dict[str, list[float]]) -> dict[str, dict]:
    """Per rule: its jobs, their total and mean seconds."""
    return {
        r: {"jobs": len(d), "total_s": sum(d), "mean_s": sum(d) / len(d)}
        for r, d in sorted(durations.items())
    }


def rule_lines(rules: dict[str, dict]) -> str:
    """A header, then a line per rule: jobs, total and mean seconds."""
    lines = [f"{'rule':<24}{'jobs':>6}{'total s':>10}{'mean s':>9}"]
    for rule, d in rules.items():
        lines.append(f"{rule:<24}{d['jobs']:>6}{d['total_s']:>10.0f}{d['mean_s']:>9.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks study_overhead [options]``: the table, written to OUT."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks study_overhead", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--log", type=Path, help="a Snakemake log (default: the latest one)")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    log = args.log or max((ROOT / ".snakemake" / "log").glob("*.snakemake.log"), default=None)
    if log is None or not log.is_file():
        sys.exit(f"no Snakemake log found ({log}); pass --log")
    stamps, durations, starts = parse(log.read_text().splitlines())
    result = {"log": str(log)}
    if "train_model" in durations:  # a study's log
        result |= overhead(stamps, durations, args.cores)
        print(report(result))
    elif durations:  # a part of one (the analysis chain, the LLC's jobs rerun): its rules
        result |= {"cores": args.cores, "rules": per_rule(durations)}
        print(rule_lines(result["rules"]))
    else:
        sys.exit(f"{log}: no finished job in this Snakemake log")
    if any(rule in starts for rule in CHAIN_STARTS):
        rule = chain_start(starts)[0]
        result["chain_s"] = chain(stamps, starts)
        what = "the last aggregate_run" if rule == "aggregate_run" else rule
        print(f"analysis chain ({what} to the last line): {result['chain_s']:.0f} s")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    return 0
