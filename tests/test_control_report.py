"""The report's Positive control section: the power sentence quotes both studies' numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.report.control import power_sentence, scaled


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
    text = power_sentence(verdicts("inconclusive", 0.067), leads(2.48e-5), PRIMARY)
    assert "does not find the pre-named embedding H1" in text and "p = 0.067" in text
    assert "finds the known progress measure" in text and "ρ = -0.76, exact p = 2.5e-05" in text
    assert "pooled over 5 models" in text and "p = 0.033 against the clock" in text
    assert "0.12 against the scale" in text and "BH-adjusted 0.36" in text
    assert "does find a real signal" in text
    missed = power_sentence(verdicts("inconclusive", 0.4), leads(0.3), PRIMARY)
    assert "does not find the known" in missed and "power" in missed and "not shown" in missed
    alone = power_sentence(verdicts("reproduced", 0.01), leads(0.001), None)
    assert alone.startswith("The between-seed contrast with test loss finds") and "TP0" not in alone


def test_curves_are_scaled_to_the_unit_interval():
    assert scaled([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    assert scaled([5.0, 5.0]).tolist() == [0.0, 0.0] and np.isnan(scaled([1.0, np.nan])[1])
