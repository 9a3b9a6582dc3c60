"""The report's Positive control section: the power sentence quotes both studies' numbers; a seed
that never groks is named, each that does is listed with its own grokking step."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_grokking_stats import planted

from topotrain.analysis.control import claims, grokking
from topotrain.report.control import control_section, power_sentence, scaled


def verdicts(verdict: str, p: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "claim": "topology moves with each seed's own test loss",
                "verdict": verdict,
                "statistic": -0.41,
                "p": p,
                "note": "8 seeds",
            }
        ]
    )


PRIMARY = pd.DataFrame(
    [
        {
            "feature": "h0_total",
            "models": "a;b;c;d;e",
            "p_clock": 0.033,
            "p_scale": 0.119,
            "p_bh": 0.358,
        }
    ]
)


def leads(p_fourier: float) -> pd.DataFrame:
    return pd.DataFrame(
        [{"feature": "fourier_top5", "contrast_rho": -0.76, "contrast_p": p_fourier}]
    )


def test_the_power_sentence_quotes_the_control_the_known_effect_and_the_gpt_study():
    text = power_sentence(verdicts("inconclusive", 0.067), leads(2.48e-5), PRIMARY, 6)
    assert "does not find the pre-named embedding H1" in text and "p = 0.067" in text
    assert "finds the known progress measure" in text and "ρ = -0.76, exact p = 2.5e-05" in text
    assert "pooled over 5 models" in text and "p = 0.033 against the clock" in text
    assert "0.12 against the scale" in text and "BH-adjusted 0.36" in text
    assert "does find a real signal in real training at 6 seeds of one model" in text
    missed = power_sentence(verdicts("inconclusive", 0.4), leads(0.3), PRIMARY, 6)
    assert "does not find the known" in missed and "power" in missed and "not shown" in missed
    alone = power_sentence(verdicts("reproduced", 0.01), leads(0.001), None, 6)
    assert alone.startswith("The between-seed contrast with test loss finds") and "TP0" not in alone


def test_curves_are_scaled_to_the_unit_interval():
    assert scaled([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    assert scaled([5.0, 5.0]).tolist() == [0.0, 0.0] and np.isnan(scaled([1.0, np.nan])[1])


def test_the_section_names_the_seeds_that_never_grok_and_lists_the_others_steps(tmp_path):
    df = planted([900, 1200, 1500, 1800, 2100], never=(1, 3))
    features = ["tied", "weight_l2", "fourier_top5"]
    seeds = grokking.seed_table(df, features)
    table = grokking.feature_table(df, seeds, features)
    tables = {"control_curves_png": str(tmp_path / "control_curves.png")}
    for name, frame in (
        ("control", table),
        ("control_seeds", seeds),
        ("control_verdicts", claims.verdicts(table, primary="tied")),
    ):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        tables[f"{name}_csv"] = str(tmp_path / f"{name}.csv")
    text = control_section(tables, None, None)
    # planted(): seed s's test accuracy reaches 1 at its own step, except seeds 1 and 3
    assert "Grokking steps (seed: step): 0: 900, 2: 1500, 4: 2100." in text
    assert "Never grokked (left out of the lead statistics): seeds [1, 3]." in text
    assert "| tied | baseline | exploratory | 3 |" in text  # n_grokked: seeds 0, 2 and 4
