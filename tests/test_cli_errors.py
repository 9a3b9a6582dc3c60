"""A failed job as the `topotrain` command prints it: `topotrain: <cause> (log: <path>)` first, the
cause being the last exception of the job's log, Snakemake's preamble and the traceback left out.

The Snakemake output below was recorded from Snakemake 9 (`topotrain analyse` on a truncated
checkpoint; a toy Snakefile with -k whose jobs fail in a script, a shell command and a run:
block)."""

from __future__ import annotations

import os
import subprocess
import sys

from topotrain.cli_errors import CONFIG_HINT, FailureFilter, filter_failures, log_cause

ONE_FAILURE = """\
Select jobs to execute...
Execute 1 jobs...

[Thu Nov 26 17:51:18 2026]
localrule run_layers:
    output: results/runs/run/layers.json
    log: results/logs/runs/run/layers.log
    jobid: 5
    reason: Missing output files: results/runs/run/layers.json
    wildcards: run=run
    resources: tmpdir=/tmp, runtime=10, mem_mb=2000, mem=2 GB, mem_mib=1908
RuleException:
CalledProcessError in file "/work/main/workflow/rules/runs.smk", line 64:
Command 'set -euo pipefail;  /venv/bin/python /w/.snakemake/scripts/tmp2wjfs_on.run_layers.py' \
returned non-zero exit status 1.
[Thu Nov 26 17:51:18 2026]
Error in rule run_layers:
    message: None
    jobid: 5
    output: results/runs/run/layers.json
    log: results/logs/runs/run/layers.log (check log file(s) for error details)
Shutting down, this might take some time.
Exiting because a job execution failed. Look above for error messages
Complete log(s): /w/.snakemake/log/2026-11-26T175117.795011.snakemake.log
WorkflowError:
At least one job did not complete successfully.
"""

LAYERS_LOG = """\
2026-11-26 17:51:18,101 INFO topotrain: reading
Traceback (most recent call last):
  File "/work/main/src/topotrain/sources/weights.py", line 181, in tensor_shapes
    with safe_open(str(path), framework="np") as fh:
safetensors._safetensors_rust.SafetensorError: Error while deserializing header: invalid header

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/.snakemake/scripts/tmp2wjfs_on.run_layers.py", line 9, in <module>
    run_layers_job(list(sm.input), sm.params.options, sm.wildcards.run, sm.output[0])
  File "/work/main/src/topotrain/sources/runs.py", line 290, in layer_map
    raise RunError(unknown_architecture(label, files, shapes))
topotrain.sources.runs.RunError: /x/checkpoint-3: no weights
"""

SEVERAL = """\
[Thu Nov 26 17:51:39 2026]
localrule e:
    output: e.txt
    log: logs/e.log
    jobid: 5
RuleException:
CalledProcessError in file "/tmp/exp2/Snakefile", line 26:
Command 'set -euo pipefail;  python /tmp/exp2/.snakemake/scripts/tmpxlrkpd2f.s.py' returned \
non-zero exit status 1.
[Thu Nov 26 17:51:39 2026]
Error in rule e:
    message: None
    jobid: 5
    output: e.txt
    log: logs/e.log (check log file(s) for error details)
Select jobs to execute...
oops
Execute 1 jobs...

[Thu Nov 26 17:51:44 2026]
localrule c:
    output: c.txt
    jobid: 3
RuleException:
CalledProcessError in file "/tmp/exp2/Snakefile", line 11:
Command 'set -euo pipefail;  echo oops >&2; exit 3' returned non-zero exit status 3.
[Thu Nov 26 17:51:44 2026]
Error in rule b:
    message: None
    jobid: 2
    output: b.txt
    shell:
        echo oops >&2; exit 3
        (command exited with non-zero exit code)
RuleException:
ValueError in file "/tmp/exp2/Snakefile", line 16:
boom in run
  File "/tmp/exp2/Snakefile", line 16, in __rule_c
Exiting because a job execution failed. Look above for error messages
[Thu Nov 26 17:51:47 2026]
Error in rule c:
    message: None
    jobid: 3
    output: c.txt
Exiting because a job execution failed. Look above for error messages
"""

E_LOG = """\
Traceback (most recent call last):
  File "/tmp/exp2/.snakemake/scripts/tmpxlrkpd2f.s.py", line 6, in <module>
    raise KeyError("missing thing")
KeyError: 'missing thing'
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def failure_lines(out: list[str]) -> list[str]:
    """The lines from the first one about a failure on: after the failed job's start block
    (Snakemake's own output) or the progress display's plan line (``topotrain.progress``), the
    Vietoris–Rips engine's note that every run prints before its first job aside."""
    start = next(
        i
        for i, line in enumerate(out)
        if line.startswith("    resources:")
        or line.endswith(" jobs to run")
        or " jobs to run: " in line
    )
    return [line for line in out[start + 1 :] if not line.startswith("Vietoris–Rips engine: ")]


def test_a_failed_script_job_is_its_logs_last_exception_first(tmp_path):
    write(tmp_path / "results/logs/runs/run/layers.log", LAYERS_LOG)
    out = filter_failures(ONE_FAILURE.splitlines(keepends=True), tmp_path)
    after = failure_lines(out)
    assert after[0] == (
        "topotrain: RunError: /x/checkpoint-3: no weights (log: results/logs/runs/run/layers.log)"
    )
    assert after[1] == (
        "  rule run_layers failed (jobid 5, output results/runs/run/layers.json); "
        "the log has the rest"
    )
    assert after[2:] == ONE_FAILURE.splitlines()[-5:]  # Snakemake's closing lines, as they were
    text = "\n".join(out)
    for gone in ("RuleException", "CalledProcessError", "Traceback", "Error in rule", "message:"):
        assert gone not in text
    assert out[: out.index("localrule run_layers:")] == ONE_FAILURE.splitlines()[:4]


def test_several_failures_get_one_line_each_without_a_log_snakemakes_last_line(tmp_path):
    write(tmp_path / "logs/e.log", E_LOG)
    out = filter_failures(SEVERAL.splitlines(), tmp_path)
    causes = [line for line in out if line.startswith("topotrain: ")]
    assert causes == [
        "topotrain: KeyError: 'missing thing' (log: logs/e.log)",
        "topotrain: CalledProcessError: Command 'set -euo pipefail;  echo oops >&2; exit 3' "
        "returned non-zero exit status 3. (no log)",
        "topotrain: ValueError: boom in run (no log)",
    ]
    assert [line for line in out if line.startswith("  rule ")] == [
        "  rule e failed (jobid 5, output e.txt); the log has the rest",
        "  rule b failed (jobid 2, output b.txt)",
        "  rule c failed (jobid 3, output c.txt)",
    ]
    assert out.index("oops") < out.index(causes[1])  # a job's own stderr passes through
    assert "__rule_c" not in "\n".join(out) and "echo oops >&2; exit 3\n" not in "\n".join(out)
    assert out.count("[Thu Nov 26 17:51:44 2026]") == 1  # the job's start; the error's dropped


def test_an_empty_or_missing_log_gives_the_last_line_of_snakemakes_error(tmp_path):
    write(tmp_path / "results/logs/runs/run/layers.log", "\n\n")
    out = filter_failures(ONE_FAILURE.splitlines(), tmp_path)  # the preamble's message
    assert failure_lines(out)[0] == (
        "topotrain: CalledProcessError: Command 'set -euo pipefail;  /venv/bin/python "
        "/w/.snakemake/scripts/tmp2wjfs_on.run_layers.py' returned non-zero exit status 1. "
        "(log: results/logs/runs/run/layers.log, empty)"
    )
    plain = [line for line in ONE_FAILURE.splitlines() if line != "RuleException:"]
    plain = [line for line in plain if not line.startswith(("Command", "CalledProcessError"))]
    executor = [line.replace("message: None", "message: SLURM-job '7' failed") for line in plain]
    out = filter_failures(executor, tmp_path / "elsewhere")  # the block's message
    assert failure_lines(out)[0] == (
        "topotrain: SLURM-job '7' failed (log: results/logs/runs/run/layers.log, not written)"
    )
    lines = SEVERAL.splitlines()
    start = lines.index("Error in rule b:")  # rule b's shell block, its preamble left out
    out = filter_failures(lines[start : lines.index("RuleException:", start)], tmp_path)
    assert out[0] == "topotrain: (command exited with non-zero exit code) (no log)"


def test_the_cause_is_the_last_attempts_exception_else_the_last_line(tmp_path):
    log = tmp_path / "a.log"
    write(log, E_LOG + "retrying\n" + LAYERS_LOG)
    assert log_cause(log) == "RunError: /x/checkpoint-3: no weights"
    write(log, E_LOG.replace("KeyError: 'missing thing'", "mod.Bad: line one\n  line two\n"))
    assert log_cause(log) == "Bad: line one line two"
    write(log, "start\nbash: frobnicate: command not found\n\n")
    assert log_cause(log) == "bash: frobnicate: command not found"
    write(log, "")
    assert log_cause(log) is None and log_cause(tmp_path / "none.log") is None


def test_a_quiet_moment_completes_a_block_and_output_without_failures_is_unchanged(tmp_path):
    write(tmp_path / "logs/e.log", E_LOG)
    errors = FailureFilter(tmp_path)
    lines = SEVERAL.splitlines()
    block = lines[lines.index("RuleException:") : lines.index("Select jobs to execute...")]
    assert [line for text in block for line in errors.feed(text)] == []
    assert errors.idle()[0] == "topotrain: KeyError: 'missing thing' (log: logs/e.log)"
    assert errors.feed("[Thu Nov 26 17:51:44 2026]") == []  # held: it may open an error block
    assert errors.idle() == ["[Thu Nov 26 17:51:44 2026]"]
    fine = ONE_FAILURE.split("RuleException:")[0].splitlines() + ["Finished job 5.", "done"]
    assert filter_failures(fine, tmp_path) == fine


def test_topotrain_analyse_on_a_bad_checkpoint_says_its_cause_first(tmp_path):
    """End to end: a checkpoint whose weights are cut short; `topotrain analyse` exits non-zero,
    and the first line after the failed job's start is the cause with its log."""
    from run_fixtures import fake_checkpoint

    weights = tmp_path / "run" / "checkpoint-10" / "model.safetensors"
    weights.parent.mkdir(parents=True)
    fake_checkpoint(weights)
    weights.write_bytes(weights.read_bytes()[:100])
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TOPOTRAIN_CLI"}
    proc = subprocess.run(
        [sys.executable, "-m", "topotrain.cli", "analyse", str(tmp_path / "run")],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode != 0
    after = failure_lines(proc.stderr.splitlines())
    assert after[0] == (
        f"topotrain: ValueError: cannot read weights {weights}: SafetensorError: Error while "
        "deserializing header: invalid header length (log: results/logs/runs/run/layers.log)"
    )
    assert after[1].startswith("  rule run_layers failed (jobid")
    for gone in ("Traceback", "RuleException", "CalledProcessError", "Error in rule"):
        assert gone not in proc.stdout + proc.stderr
    assert "Traceback" in (work / "results/logs/runs/run/layers.log").read_text()


ONE_PROBLEM = """\
ConfigError in file "/work/main/workflow/rules/common.smk", line 71:
invalid configuration: trian: Additional properties are not allowed ('trian' was unexpected; \
did you mean train?)
  File "/work/main/workflow/rules/common.smk", line 71, in <module>
"""
TWO_PROBLEMS = """\
Building DAG of jobs...
ConfigError in file "/work/main/workflow/rules/common.smk", line 74:
invalid configuration:
  - train.checkpoint_interval=15 does not divide train.steps=40
  - train.warmup_steps=200 exceeds train.steps=40
  File "/work/main/workflow/rules/common.smk", line 74, in <module>
  File "/work/main/src/topotrain/config/checks.py", line 132, in check_config
"""


def test_a_refused_config_is_its_message_then_where_every_key_is(tmp_path):
    """Snakemake's location and traceback go; the message stays, after `topotrain:`."""
    assert filter_failures(ONE_PROBLEM.splitlines(), tmp_path) == [
        "topotrain: invalid configuration: trian: Additional properties are not allowed "
        "('trian' was unexpected; did you mean train?)",
        CONFIG_HINT,
    ]
    assert filter_failures(TWO_PROBLEMS.splitlines(), tmp_path) == [
        "Building DAG of jobs...",
        "topotrain: invalid configuration:",
        "  - train.checkpoint_interval=15 does not divide train.steps=40",
        "  - train.warmup_steps=200 exceeds train.steps=40",
        CONFIG_HINT,
    ]
    other = ['SyntaxError in file "/w/Snakefile", line 3:', "invalid syntax:", "rule a b"]
    assert filter_failures(other, tmp_path) == other


REPORT = """\
Building DAG of jobs...
Creating report...
Loading script code for rule train_model
Loading script code for rule weight_topology
Loading wrapper code for rule fetch
Adding losses.png (48.1 kB).
Downloading resources and rendering HTML.
Report created: results/report.html.
"""


def test_a_reports_line_per_rule_and_file_is_one_count_unless_plain(tmp_path):
    lines = REPORT.splitlines()
    assert filter_failures(lines, tmp_path, summary=True) == [
        "Building DAG of jobs...",
        "Creating report...",
        "report: the code of 3 rules and 1 file added (--plain lists each)",
        "Downloading resources and rendering HTML.",
        "Report created: results/report.html.",
    ]
    assert filter_failures(lines[:3], tmp_path, summary=True)[-1] == (
        "report: the code of 1 rule and 0 files added (--plain lists each)"
    )
    assert filter_failures(lines, tmp_path) == lines


def test_topotrain_counts_the_reports_lines_unless_plain(monkeypatch):
    from topotrain import cli

    said = []
    monkeypatch.setattr(cli, "filtered", lambda cmd, d, env, summary: said.append(summary) or 0)
    cli.run(1, ["--report", "results/report.html"])
    cli.run(1, ["--report", "results/report.html"], plain=True)
    cli.run(1, ["-n"])
    assert said == [True, False, False]
