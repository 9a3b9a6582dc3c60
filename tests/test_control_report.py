"""The report's Positive control section: the power sentence quotes both studies' numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.report.control import power_sentence, scaled


def verdicts(verdict: str, p: float) -> pd.DataFrame:
    return pd.DataFrame([{"claim": "topology moves with each seed's own test loss", "verdict": verdict,
                          "statistic": -0.41, "p": p, "note": "8 seeds"}])  # fmt: skip


PRIMARY = pd.DataFrame([{"feature": "h0_total", "models": "a;b;c;d;e", "p_clock": 0.033,
                         "p_scale": 0.119, "p_bh": 0.358}])  # fmt: skip


def test_the_power_sentence_quotes_the_control_and_the_gpt_study():
    text = power_sentence(verdicts("reproduced", 2.5e-5), PRIMARY)
    assert "ρ = -0.41" in text and "p = 2.5e-05" in text and "8 seeds" in text
    assert "pooled over 5 models" in text and "p = 0.033 against the clock" in text
    assert "0.12 against the scale" in text and "BH-adjusted 0.36" in text
    assert "can find a real topological signal" in text
    missed = power_sentence(verdicts("inconclusive", 0.4), PRIMARY)
    assert "does not find" in missed and "carry little weight" in missed
    assert "GPT study's verdicts" in power_sentence(verdicts("reproduced", 0.01), None)


def test_curves_are_scaled_to_the_unit_interval():
    assert scaled([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    assert scaled([5.0, 5.0]).tolist() == [0.0, 0.0] and np.isnan(scaled([1.0, np.nan])[1])
