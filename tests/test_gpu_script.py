"""benchmarks/gpu.sh without a GPU: its stages' order and budgets (``--plan``), and what a stage
leaves when it ends, fails, is cut at its budget or is skipped (summary.tsv), a cut study's wall
time and per-rule table included (a stand-in Python that sleeps in place of Snakemake)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu.sh"
PRIORITY = ["env", "study_cold", "study_warm", "study_many", "cudatests", "llc"]


def run(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """``script`` in bash after sourcing gpu.sh's functions, logs under tmp_path."""
    full = {**os.environ, "GPU_SH_FUNCTIONS_ONLY": "1", "GPU_LOG_DIR": str(tmp_path), **env}
    return subprocess.run(
        ["bash", "-c", f"source {SCRIPT}; {script}"],
        capture_output=True,
        text=True,
        env=full,
        cwd=ROOT,
        timeout=60,
    )


def summary(tmp_path: Path) -> list[list[str]]:
    return [line.split("\t") for line in (tmp_path / "summary.tsv").read_text().splitlines()]


def test_the_default_stages_run_in_priority_order_within_nine_minutes():
    out = subprocess.run(["bash", str(SCRIPT), "--plan"], capture_output=True, text=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [r[0] for r in rows[:-1]] == PRIORITY
    budgets = [int(r[1]) for r in rows[:-1]]
    assert all(b > 5 for b in budgets) and sum(budgets) <= 540
    assert rows[-1][:2] == ["total", str(sum(budgets))] and rows[-1][2] == "of BUDGET 540"


def test_a_stage_is_ok_failed_cut_at_its_own_budget_or_skipped_and_each_is_summarised(tmp_path):
    script = (
        'DEADLINE=$((SECONDS + 30)); printf "stage\\n" > "$OUT/summary.tsv"; '
        "stage quick true; stage broken false; stage slow sleep 30; "
        "DEADLINE=$SECONDS; stage late true"
    )
    proc = run(f"OUT={tmp_path}; {script}", tmp_path, BUDGET_slow="7")
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r for r in summary(tmp_path)[1:]}
    assert rows["quick"][1:3] == ["ok", "0"]
    assert rows["broken"][1:3] == ["failed", "1"]
    assert rows["slow"][1:3] == ["cut", "124"] and 6 <= int(rows["slow"][3]) <= 9
    assert rows["slow"][4] == "7"  # its own budget, not the deadline's 30 s
    assert rows["late"][1] == "skipped"
    assert "skipped (budget spent)" in proc.stdout


def test_a_cut_study_still_reports_its_wall_time_and_rules(tmp_path):
    python = tmp_path / "python"  # stands in for Snakemake (sleeps) and study_overhead (prints)
    python.write_text(
        '#!/bin/bash\ncase "$2" in snakemake) sleep 30 ;; benchmarks) echo "ran $3" ;; esac\n'
    )
    python.chmod(0o755)
    script = (
        f"OUT={tmp_path}; DEADLINE=$((SECONDS + 60)); DET=true; CORES=2; GPU_JOBS=1; "
        f"PY={python}; export PY CORES GPU_JOBS DET OUT; export -f study; cd {tmp_path}; "
        'stage study_warm study "[1, 2]" training study_warm'
    )
    proc = run(script, tmp_path, BUDGET_study_warm="26")
    assert proc.returncode == 0, proc.stderr
    (row,) = summary(tmp_path)
    assert row[:3] == ["study_warm", "cut", "124"] and int(row[3]) < 15  # Snakemake cut at 6 s
    log = (tmp_path / "study_warm.log").read_text()
    assert "study cut at 6 s" in log and "study wall: 6 s (exit 124; seeds [1, 2]" in log
    assert "ran study_overhead" in log  # on what the cut study left
