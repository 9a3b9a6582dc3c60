"""The grokking control's co-movement view (grokking._comove): co_* and co_norm_* are
``contrast_cell``'s on the same matrices, a planted feature moving against its seed's test loss
gets β_co ≈ −1 with an interval below 0, the verdicts ignore them, the report quotes them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.control.claims import verdicts
from topotrain.analysis.control.grokking import NORM, TARGET, feature_table, seed_table
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL_CO,
    contrast_cell,
    model_matrices,
    seed_permutations,
)
from topotrain.report.control import power_sentence

SEEDS = 5
FEATURES = ["h1", "other", "weight_l2", "fourier_top5"]
CO = [f"{p}_{c}" for p in ("co", "co_norm") for c in ("rho", "p", "effect")]


def frame(seeds: int = SEEDS, steps: int = 60) -> pd.DataFrame:
    """Test loss falls with a random walk of each seed's own; h1 = a constant of the seed's own
    minus twice the loss plus a little noise (it moves against the loss, step by step); 'other'
    walks on its own; the norm and the Fourier measure wander independently."""
    rng = np.random.default_rng(7)
    step = np.arange(steps) * 50
    rows = []
    for s in range(seeds):
        loss = 3 * np.exp(-step / 800) + np.cumsum(rng.normal(0, 0.05, steps))
        walks = np.cumsum(rng.normal(0, 0.05, (3, steps)), axis=1)
        rows.append(
            pd.DataFrame(
                {"model": "control", "seed": s, "step": step, "test_acc": 0.5, TARGET: loss}
                | {"h1": 4 * rng.normal() - 2 * loss + rng.normal(0, 0.002, steps)}
                | {"other": np.exp(-step / 800) + walks[0]}
                | {NORM: 40 - step / 300 + walks[1], "fourier_top5": 0.5 + walks[2]}
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_co_columns_are_the_contrast_cells_and_a_planted_opposite_mover_has_negative_beta_co():
    df = frame()
    table = feature_table(df, seed_table(df, FEATURES), FEATURES).set_index("feature")
    mats = model_matrices(df, ["h1", "other", TARGET, NORM])
    perms = seed_permutations(SEEDS)
    for feature in ("h1", "other"):
        plain, _ = contrast_cell(mats, feature, TARGET, "seed_comove", perms)
        partial, _ = contrast_cell(mats, feature, TARGET, PARTIAL_CO, perms, cond=NORM)
        row = table.loc[feature]
        assert row["co_p"] == plain["p"] and row["co_rho"] == plain["rho"]
        assert row["co_norm_p"] == partial["p"] and row["co_norm_rho"] == partial["rho"]
    h1 = table.loc["h1"]
    # its moves are −2 × the loss's (noise 1/25 of theirs): ρ_co ≈ −1, two-sided p 2/5!, and
    # β_co ≈ −1 (unit-scaled cells) with an interval below 0, plain and beyond the norm
    assert h1["co_rho"] < -0.95 and h1["co_p"] == pytest.approx(2 / 120)
    for prefix in ("co", "co_norm"):
        assert h1[f"{prefix}_effect"] == pytest.approx(-1.0, abs=0.05)
        assert h1[f"{prefix}_effect_ci_high"] < -0.5
    other = table.loc["other"]
    assert abs(other["co_effect"]) < 0.3  # its own walk: far from h1's −1
    # the verdicts read the level view only: the same without the co-movement columns
    plain = table.reset_index()
    dropped = plain.drop(columns=[c for c in plain if c.startswith("co_")])
    pd.testing.assert_frame_equal(verdicts(plain, "h1"), verdicts(dropped, "h1"))
    said = power_sentence(verdicts(plain, "h1"), plain, None, 8)
    shown = f"β_co {h1['co_effect']:.2f} [{h1['co_effect_ci_low']:.2f}, "
    assert shown in said and f"beyond the norm {h1['co_norm_effect']:.2f} [" in said
    assert "β_co" not in power_sentence(verdicts(dropped, "h1"), dropped, None, 8)
