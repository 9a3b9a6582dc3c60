"""benchmarks/study_overhead.py on a hand-written Snakemake log with known durations."""

from __future__ import annotations

from datetime import datetime

import pytest

from benchmarks import study_overhead

LOG = """\
Building DAG of jobs...
[Mon Nov 23 10:00:00 2026]
localrule train_model:
    jobid: 7
    wildcards: model=a, seed=1
[Mon Nov 23 10:00:00 2026]
rule train_model:
    jobid: 8
[Mon Nov 23 10:10:00 2026]
Finished jobid: 7 (Rule: train_model)
[Mon Nov 23 10:10:00 2026]
localrule weight_topology:
    jobid: 9
[Mon Nov 23 10:10:02 2026]
Finished jobid: 9 (Rule: weight_topology)
[Mon Nov 23 10:20:00 2026]
Finished jobid: 8 (Rule: train_model)
[Mon Nov 23 10:25:00 2026]
"""


def test_overhead_from_a_log_with_known_durations():
    stamps, durations, starts = study_overhead.parse(LOG.splitlines())
    assert durations == {"train_model": [600.0, 1200.0], "weight_topology": [2.0]}
    assert starts["weight_topology"] == [datetime(2026, 11, 23, 10, 10)]
    assert starts["train_model"] == [datetime(2026, 11, 23, 10, 0)] * 2
    r = study_overhead.overhead(stamps, durations, cores=2)
    assert r["wall_s"] == 1500.0
    assert r["training_per_core_s"] == 900.0
    assert r["overhead_share"] == pytest.approx(1 - 900 / 1500)
    assert r["rules"]["weight_topology"] == {"jobs": 1, "total_s": 2.0, "mean_s": 2.0}


def test_a_log_without_training_is_refused():
    stamps, durations, starts = study_overhead.parse(LOG.splitlines()[:2])
    with pytest.raises(ValueError, match="no finished train_model job"):
        study_overhead.overhead(stamps, durations, cores=2)
    with pytest.raises(ValueError, match="no aggregate_run or aggregate_features job"):
        study_overhead.chain(stamps, starts)


def snakemake_log(*events: tuple[str, str, int, str]) -> str:
    """A Snakemake log of (time, "start" or "finish", job id, rule), each line as Snakemake
    writes it, the last time stamped once more at the end."""
    lines = []
    for time, what, job, rule in events:
        lines.append(f"[Mon Nov 23 {time} 2026]")
        if what == "start":
            lines += [f"rule {rule}:", f"    jobid: {job}"]
        else:
            lines.append(f"Finished jobid: {job} (Rule: {rule})")
    return "\n".join([*lines, f"[Mon Nov 23 {events[-1][0]} 2026]"]) + "\n"


CHAIN = snakemake_log(
    ("11:00:00", "finish", 3, "training_topology"),
    ("11:00:01", "start", 4, "aggregate_features"),
    ("11:00:21", "finish", 4, "aggregate_features"),
    ("11:00:21", "start", 5, "associations"),
    ("11:02:01", "finish", 5, "associations"),
    ("11:02:04", "finish", 6, "report_markdown"),
)


PER_RUN = snakemake_log(  # two runs' aggregates: the chain waits for the second's
    ("10:00:00", "start", 1, "aggregate_run"),
    ("10:00:02", "finish", 1, "aggregate_run"),
    ("10:30:00", "finish", 3, "training_topology"),
    ("10:30:01", "start", 2, "aggregate_run"),
    ("10:30:03", "finish", 2, "aggregate_run"),
    ("10:30:03", "start", 4, "aggregate_features"),
    ("10:30:05", "finish", 4, "aggregate_features"),
    ("10:31:00", "finish", 6, "report_markdown"),
)


@pytest.mark.parametrize(
    "log_text, start, seconds, said",
    [  # an older log: from aggregate_features; a per-run one: from the last aggregate_run
        (CHAIN, (11, 0, 1), 123.0, "analysis chain (aggregate_features to the last line): 123 s"),
        (PER_RUN, (10, 30, 1), 59.0, "(the last aggregate_run to the last line): 59 s"),
    ],
)
def test_the_analysis_chain_runs_from_its_first_job_to_the_last_line(
    tmp_path, capsys, monkeypatch, log_text, start, seconds, said
):
    stamps, durations, starts = study_overhead.parse(log_text.splitlines())
    assert study_overhead.chain_start(starts)[1] == datetime(2026, 11, 23, *start)
    assert study_overhead.chain(stamps, starts) == seconds
    log = tmp_path / "chain.log"
    log.write_text(log_text)
    monkeypatch.setattr(study_overhead, "OUT", tmp_path / "out.json")
    assert study_overhead.main(["--log", str(log)]) == 0  # a chain alone: no training line
    out = capsys.readouterr().out
    assert "wall" not in out and said in out and "aggregate_features" in out
    assert f'"chain_s": {seconds}' in (tmp_path / "out.json").read_text()
