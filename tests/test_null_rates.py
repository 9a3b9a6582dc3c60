"""The false-positive rates the report quotes beside its flag counts: from a hand-written
calibration.csv, else from the rates docs/calibration.md reports."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from conftest import ROOT

from topotrain.report.null_rates import DOCUMENTED, null_rate

FLAG = "beats_clock (pooled)"


def calibration_csv(path) -> pd.DataFrame:
    """A calibration.csv as the suite writes it (its columns; seeds mixing counts and '1 run'),
    read back as the report job reads it."""
    rows = [  # test, scenario, measures, seeds, rate, mc_low, mc_high
        (FLAG, "random_walk", "false-positive rate", 5, 0.041, 0.030, 0.055),
        (FLAG, "decel_ar095", "false-positive rate", 5, 0.063, 0.049, 0.080),  # the worst null
        (FLAG, "decel_iid", "false-positive rate", 5, 0.038, 0.027, 0.052),
        (FLAG, "signal_r0.2", "power", 5, 0.990, 0.982, 0.995),  # power, not a null
        (FLAG, "random_walk", "false-positive rate", 3, 0.020, 0.012, 0.031),
        (FLAG, "random_walk", "false-positive rate", 8, 0.071, 0.056, 0.089),
        ("raw p", "decel_iid", "false-positive rate", "1 run", 1.0, 0.996, 1.0),
    ]
    table = pd.DataFrame(
        rows, columns=["test", "scenario", "measures", "seeds", "rate", "mc_low", "mc_high"]
    ).assign(n_sim=1000, nominal=0.05, passes=True, used_in_verdicts=True)
    table.to_csv(path / "calibration.csv", index=False)
    return pd.read_csv(path / "calibration.csv")


def test_the_rate_is_the_worst_null_of_calibration_csv_at_the_studys_seed_count(tmp_path):
    rate = null_rate(FLAG, 5, calibration_csv(tmp_path))
    assert (rate.rate, rate.mc_low, rate.mc_high) == (0.063, 0.049, 0.080)
    assert rate.scenario == "decel_ar095" and rate.seeds == "5 seeds"
    assert rate.expected(20) == "1.3 = 20 × 0.063"
    assert "calibration.csv" in rate.label() and "docs/calibration.md" not in rate.label()
    uncalibrated = null_rate(FLAG, 4, calibration_csv(tmp_path))  # the largest over 3, 5, 8
    assert uncalibrated.rate == 0.071
    assert uncalibrated.seeds == "4 seeds not calibrated: the largest over 3, 5, 8 seeds"


def test_without_calibration_csv_the_rate_is_the_documented_one_and_says_so(tmp_path):
    rate = null_rate(FLAG, 5)
    assert rate.rate == 0.045 and rate.scenario == "random_walk"
    assert (round(rate.mc_low, 3), round(rate.mc_high, 3)) == (0.033, 0.060)  # 45 of 1,000
    assert "docs/calibration.md, measured 2026-11-26" in rate.label()
    scale = null_rate("beats_scale (pooled)", 8)  # the one interval the docs print
    assert (round(scale.mc_low, 3), round(scale.mc_high, 3)) == (0.040, 0.069)
    missing = calibration_csv(tmp_path).query("test != @FLAG")  # a table without the flag
    assert null_rate(FLAG, 3, missing).rate == 0.035
    assert null_rate("beats_clock (model)", 5) is None  # the docs give the pooled flags only


@pytest.mark.parametrize("flag", ["beats_clock", "beats_scale"])
def test_the_documented_rates_are_the_ones_docs_calibration_md_reports(flag):
    text = (ROOT / "docs" / "calibration.md").read_text()
    row = re.search(rf"^\| `{flag}`, pooled \| 3 / 5 / 8 \| `random_walk` \| (.+?) \|", text, re.M)
    rates = [float(r.split()[0]) for r in row.group(1).split(" / ")]
    assert DOCUMENTED[f"{flag} (pooled)"] == dict(zip((3, 5, 8), rates, strict=True))


def test_a_re_drawn_row_is_quoted_at_its_pooled_rate(tmp_path):
    """calibration.csv's rate of a re-drawn row is over all its draws (first_rate: the first's)."""
    table = calibration_csv(tmp_path).assign(first_n_sim=float("nan"), first_rate=float("nan"))
    worst = (table["seeds"] == "5") & (table["scenario"] == "decel_ar095")
    table.loc[worst, ["n_sim", "rate", "first_n_sim", "first_rate"]] = 4000, 0.052, 1000, 0.063
    assert null_rate(FLAG, 5, table).rate == 0.052
