"""The co-movement's horizon profile (``analysis.inference.horizons``): the report's own β_co at
every H, beyond the clock and the norm, and a note where no move spans H."""

import numpy as np
import pandas as pd

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.inference.horizons import horizon_profile, signs_from_primary
from topotrain.analysis.inference.primary import claim_views
from topotrain.analysis.inference.seed_contrast import model_matrices, seed_permutations
from topotrain.report.answer import answer_links, figure_horizon_profile


def _table(checkpoints: int = 101, models: int = 3, seeds: int = 4) -> pd.DataFrame:
    """A feature table from one simulated study (level coupling β = 0.5): h0_total the feature,
    val_loss the loss, l2_norm_mean the norm, checkpoints over 5,000 steps."""
    s = pe.Setting(seeds, checkpoints, 0.0, models)
    sim = pe.simulate("level_b0.5", s, np.random.default_rng(4), 1)
    rows = []
    for m in range(models):
        for k in range(seeds):
            rows.append(
                pd.DataFrame(
                    {"model": f"m{m}", "seed": k, "step": s.t(), "h0_total": sim["x"][0, m, k]}
                    | {"val_loss": sim["y"][0, m, k], "l2_norm_mean": sim["l"][0, m, k]}
                )
            )
    return pd.concat(rows, ignore_index=True)


def test_each_horizon_is_the_claim_views_of_the_report_at_that_h(tmp_path):
    df = _table()
    signs = {"h0_total": {"m0": 1.0, "m1": 1.0, "m2": 1.0}}
    prof = horizon_profile(df, signs, horizons=(25, 100, 200))
    assert list(prof.columns[:4]) == ["feature", "horizon", "lag", "condition"]
    at25 = prof[prof["horizon"] == 25]  # checkpoints 50 steps apart: no 25-step move
    assert at25["effect"].isna().all() and at25["note"].str.contains("no 25-step move").all()
    assert (at25["lag"] == 0).all()
    for h, lag in ((100, 2), (200, 4)):
        got = prof[prof["horizon"] == h].set_index("condition")
        parts = [df[df["model"] == m] for m in ("m0", "m1", "m2")]
        mats = [
            model_matrices(p, ["h0_total", "val_loss", "l2_norm_mean"], horizon=h) for p in parts
        ]
        perms = [seed_permutations(4)] * 3
        views = {
            "co_clock": ("seed_comove", None),
            "co_scale": ("seed_comove_partial", "l2_norm_mean"),
        }
        direct = claim_views(mats, perms, [1.0] * 3, "h0_total", "val_loss", 0, views)
        assert (got["lag"] == lag).all()
        for c in ("co_clock", "co_scale"):
            assert got.loc[c, "effect"] == direct[f"effect_{c}"]
            assert got.loc[c, "ci_low"] == direct[f"effect_{c}_ci_low"]
            assert got.loc[c, "p"] == direct[f"p_{c}"]
    assert prof.loc[prof["horizon"] == 100, "effect"].gt(0.1).all()  # the planted coupling
    png = tmp_path / "h.png"
    fig = figure_horizon_profile(prof, 0.1, 100, str(png), None)
    assert plt_image_shape(png)[1] > 300  # written: one claim's panel
    (ax,) = fig.axes  # one claim: the planted one's β_co per H drawn, no "why" in its place
    assert ax.get_title() and ax.get_legend_handles_labels()[1] and not ax.texts
    links = answer_links({"effects_forest_png": "f.png", "horizon_profile_png": str(png)})
    assert "[figure](figures/h.png)" in links


def test_the_claimed_signs_come_from_primary_csv():
    primary = pd.DataFrame(
        {"feature": ["h0_total", "np_mean"], "models": ["a;b", ""], "signs": ["-1;+1", ""]}
    )
    assert signs_from_primary(primary) == {"h0_total": {"a": -1.0, "b": 1.0}}
    assert signs_from_primary(None) == {}


def plt_image_shape(png) -> tuple[int, ...]:
    import matplotlib.image as mpimg

    return mpimg.imread(png).shape
