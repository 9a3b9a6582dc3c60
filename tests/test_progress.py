"""The progress display (``topotrain.progress``, ``snakemake --logger topotrain``): a training's
step, loss and ETA read from its log (ETA by hand from two timestamps), the study's ETA from
durations and threads over the cores (by hand), earlier benchmarks, the lines a run prints, and a
real Snakemake run through the plugin: one line per job, no job blocks, failures in Snakemake's
own words."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from topotrain.progress import (
    Job,
    LogHandler,
    Study,
    benchmark_seconds,
    clock,
    training_progress,
)

LINE = "2026-11-28 01:{m:02d}:{s:02d},078 INFO topotrain.training.{who}: {seed}step {step}/{n}: "
LINE += "val loss {loss}, mean train loss 1.9\n"


def log_line(m, s, step, n=1000, loss="2.5", who="train", seed=""):
    return LINE.format(m=m, s=s, step=step, n=n, loss=loss, who=who, seed=seed)


def test_a_trainings_progress_is_its_last_evaluation_and_the_rate_between_its_first_and_last(
    tmp_path,
):
    log = tmp_path / "seed0.log"
    bar = " 20%|██        | 200/1000 [00:10<00:40, 20.00it/s, loss=2.4]"
    log.write_text(
        "2026-11-28 01:00:00,001 INFO topotrain.training.train: numerics: {}\n"
        + log_line(0, 0, 100, loss="3.0")
        + bar
        + log_line(0, 5, 150, loss="2.7")
        + log_line(0, 10, 200, loss="2.5")
    )
    t = training_progress(log)
    # 100 steps in 10 s: 800 steps left at 10 steps/s
    assert (t.step, t.steps, t.val_loss, t.eta_s, t.members) == (200, 1000, 2.5, 80.0, 1)
    assert training_progress(tmp_path / "absent.log") is None
    (tmp_path / "empty.log").write_text("nothing yet\n")
    assert training_progress(tmp_path / "empty.log") is None
    assert training_progress(None) is None


def test_an_ensembles_progress_is_its_slowest_seed(tmp_path):
    log = tmp_path / "ensemble.log"
    rows = [(0, 0, 100, "0"), (0, 0, 100, "1"), (0, 20, 300, "0"), (0, 20, 200, "1")]
    log.write_text(
        "".join(log_line(m, s, st, who="ensemble", seed=f"seed {sd} ") for m, s, st, sd in rows)
    )
    t = training_progress(log)
    assert (t.step, t.members) == (200, 2)
    assert t.eta_s == pytest.approx(800 / 5)  # seed 1: 100 steps in 20 s


def test_earlier_benchmarks_give_a_rules_durations(tmp_path):
    folder = tmp_path / "benchmarks" / "train" / "tiny"
    folder.mkdir(parents=True)
    for seed, s in ((0, 12.5), (1, 17.5)):
        (folder / f"seed{seed}.tsv").write_text(f"s\th:m:s\tmax_rss\n{s}\t0:00:12\t100\n")
    (folder / "broken.tsv").write_text("s\n")
    assert benchmark_seconds(str(folder / "seed2.tsv")) == [12.5, 17.5]
    assert benchmark_seconds(str(tmp_path / "nowhere" / "x.tsv")) == []
    assert benchmark_seconds(None) == []


def test_the_studys_eta_is_the_work_left_over_the_cores():
    study = Study(cores=2, began=0.0)
    assert study.plan({"train": 3, "topology": 4, "total": 7}) == (
        "7 jobs to run: train 3, topology 4"
    )
    study.announce(1, Job("train", {"model": "tiny", "seed": 0}, threads=2), now=0.0)
    study.finish(1, now=30.0)
    study.announce(2, Job("train", {"model": "tiny", "seed": 1}, threads=2), now=30.0)
    # train: one more waiting at 30 s × 2 threads, the running one 30 − 10 s left × 2 threads;
    # topology: 4 untimed
    left, untimed = study.eta(now=40.0)
    assert (left, untimed) == ((30 * 2 + 20 * 2) / 2, 4)
    assert study.status(40.0).startswith("1/7 jobs (14 %) · elapsed 0:40 · ETA 0:50 + 4 untimed")
    # a running training's own ETA replaces its rule's mean
    trained = {2: SimpleNamespace(eta_s=5.0, step=90, steps=100, val_loss=2.0, members=1)}
    assert study.eta(now=40.0, trainings=trained) == ((30 * 2 + 5 * 2) / 2, 4)
    assert "tiny 1 step 90/100 val loss 2.000, 0:05 left" in study.status(40.0, trained)
    # started before it was announced (Snakemake logs JOB_STARTED first)
    study.start([3], now=41.0)
    study.announce(3, Job("topology", {"checkpoint": 5}), now=45.0)
    assert study.jobs[3].started == 41.0 and "1 × topology" in study.status(45.0)
    job, seconds = study.finish(3, now=43.0)
    assert (job.name(), seconds, study.done) == ("topology (checkpoint=5)", 2.0, 2)
    assert clock(3725) == "1:02:05" and clock(None) == "?"


def records(*extras: dict) -> list[logging.LogRecord]:
    out = []
    for extra in extras:
        msg = extra.pop("msg", None)
        level = extra.pop("level", logging.INFO)
        record = logging.LogRecord("snakemake", level, __file__, 0, msg, None, None)
        record.__dict__.update(extra)
        out.append(record)
    return out


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def settings(**kw):
    base = dict(quiet=set(), show_failed_logs=False, dryrun=False, printshellcmds=False)
    return SimpleNamespace(**(base | dict(verbose=False, nocolor=True, stdout=False) | kw))


def run_handler(stream_out, extras, **kw) -> tuple[str, str]:
    from snakemake_interface_logger_plugins.common import LogEvent as E

    handler = LogHandler(settings(**kw), None)
    handler.stop.set()  # no ticker: the test draws
    handler.out, handler.err = stream_out, io.StringIO()
    handler.live = stream_out.isatty()
    for record in records(*[x | {"event": E(x["event"])} if "event" in x else x for x in extras]):
        handler.emit(record)
    handler.close()
    return stream_out.getvalue(), handler.err.getvalue()


JOB = dict(event="job_info", jobid=4, rule_name="train", wildcards={"model": "tiny", "seed": 0})
JOB |= dict(log=["results/logs/x.log"], benchmark=None, threads=1, msg=" Rule: train")
RUN = [
    dict(event="run_info", stats={"train": 1, "total": 1}, msg="Job stats: …"),
    dict(event="job_started", jobs=[4], msg="Execute 1 jobs..."),
    JOB,
    dict(msg="Select jobs to execute..."),
    dict(msg="a warning of Snakemake's", level=logging.WARNING),
    dict(event="job_finished", job_id=4, msg="Finished jobid: 4 (Rule: train)"),
    dict(event="progress", done=1, total=1),
]


def test_elsewhere_a_run_prints_its_plan_one_line_per_job_and_snakemakes_messages():
    out, err = run_handler(io.StringIO(), [dict(x) for x in RUN])
    lines = err.splitlines()
    assert lines[0] == "1 jobs to run: train 1"
    assert lines[1] == "a warning of Snakemake's"
    assert lines[2].startswith("[1/1] done: train (model=tiny seed=0) in 0:0")
    assert len(lines) == 3 and out == ""


def test_on_a_terminal_the_status_line_is_redrawn_in_place_and_messages_print_above_it():
    out, err = run_handler(Terminal(), [dict(x) for x in RUN])
    assert err.splitlines() == ["1 jobs to run: train 1", "a warning of Snakemake's"]
    assert out.endswith("\r\x1b[K1/1 jobs (100 %) · elapsed 0:00 · ETA 0:00\n")
    assert "done:" not in out + err


def test_a_dry_run_prints_the_job_counts_and_a_failure_snakemakes_own_block():
    out, err = run_handler(io.StringIO(), [dict(RUN[0]), dict(JOB)], dryrun=True)
    assert err.splitlines() == ["Job stats: …"]
    failure = dict(event="job_error", jobid=4, rule_name="train", rule_msg=None, level=40)
    failure |= dict(input=[], output=["x"], log=["results/logs/x.log"], conda_env=None)
    failure |= dict(container_img=None, aux={}, indent=False, shellcmd=None, msg="Error")
    out, err = run_handler(io.StringIO(), [dict(x) for x in RUN[:3]] + [failure])
    assert "Error in rule train:" in err and "results/logs/x.log" in err


SNAKEFILE = """
rule all:
    input: expand("out/b{i}.txt", i=range(3))
rule a:
    output: "out/a{i}.txt"
    log: "out/logs/a{i}.log"
    shell: "echo a > {output}"
rule b:
    input: "out/a{i}.txt"
    output: "out/b{i}.txt"
    shell: "cat {input} > {output}; test {wildcards.i} != FAIL"
"""


@pytest.mark.parametrize("fail", ["none", "1"])
def test_snakemake_finds_the_plugin_and_prints_a_line_per_job_and_no_job_blocks(tmp_path, fail):
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE).replace("FAIL", fail))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--logger", "topotrain"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    err = done.stderr
    assert "7 jobs to run: a 3, b 3, all 1" in err
    assert "output:" not in err.replace("Error in rule", "") or fail != "none"
    assert "reason:" not in err
    if fail == "none":
        assert done.returncode == 0, err
        assert [line.split("]")[0] for line in err.splitlines() if "] done:" in line] == [
            f"[{i}/7" for i in range(1, 8)
        ]
    else:
        assert done.returncode != 0 and "Error in rule b:" in err


def test_topotrain_runs_with_the_display_unless_plain_a_logger_a_dry_run_or_a_report():
    from topotrain.cli import parser
    from topotrain.progress import with_display

    assert with_display(["--until", "train"]) == ["--logger", "topotrain", "--until", "train"]
    assert with_display(["--until", "train"], plain=True) == ["--until", "train"]
    for args in (["-n"], ["--logger=rich"], ["--logger", "rich"], ["--report", "r.html"]):
        assert with_display(args) == args
    for command in (["run"], ["demo"], ["analyse", "path"]):
        assert parser().parse_args([*command, "--plain"]).plain
