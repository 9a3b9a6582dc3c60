"""Miss rates of the co-movement effects' intervals (``calibration.intervals``): the β_co each
scenario fixes, the counts against the report's own intervals, and the pass rule at α/2."""

import numpy as np
import pytest
from scipy import stats

from topotrain.analysis.calibration import intervals as iv
from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration.pass_rule import pass_max
from topotrain.analysis.inference.primary import VIEWS, claim_views
from topotrain.analysis.inference.seed_contrast import SCALE, seed_permutations


def test_each_scenario_fixes_the_beta_co_the_process_implies():
    s = pe.Setting(3)
    for null in ("no_coupling", "offset_confound", "progress_warp"):
        assert iv.truth(null, s) == {"co_clock": 0.0, "co_scale": 0.0}
    assert iv.truth("norm_only", s) == {"co_scale": 0.0}  # the plain view co-moves via the norm
    b = pe.planted("level", 0.1, "seed_comove_l2", s)
    got = iv.truth(f"level_b{b:.6g}", s)
    assert got["co_scale"] == pytest.approx(0.1, abs=1e-6)
    assert got["co_clock"] == pytest.approx(pe.implied("level", b, s)["seed_comove"], abs=1e-6)
    with pytest.raises(ValueError, match="offset_b0.3"):
        iv.truth("offset_b0.3", s)


def test_miss_counts_are_the_reports_own_intervals_against_the_truth():
    """Recount one row from the same generator with ``claim_views`` called directly."""
    s, draws = pe.Setting(3, 21, 0.1, models=3, steps=2000.0), 6  # 216 arrangements; H: 1 spacing
    b = pe.planted("level", 0.3, "seed_comove_l2", s)
    scenario = f"level_b{b:.6g}"
    rows = iv.miss_rows(scenario, s, draws)
    sim = pe.simulate(scenario, s, pe.row_rng("interval|" + pe.row_name(scenario, s)), draws)
    perms = seed_permutations(3)
    lows, highs = {"co_clock": [], "co_scale": []}, {"co_clock": [], "co_scale": []}
    for i in range(draws):
        mats = [{"x": sim["x"][i, m], "y": sim["y"][i, m], SCALE: sim["l"][i, m]} for m in range(3)]
        res = claim_views(mats, [perms] * 3, [1.0] * 3, "x", "y", views=VIEWS["comove"][1])
        for c in lows:
            lows[c].append(res[f"effect_{c}_ci_low"])
            highs[c].append(res[f"effect_{c}_ci_high"])
    truth = iv.truth(scenario, s)
    for row in rows:
        c = row["view"]
        ends = (
            np.array(lows[c]) > truth[c]
            if row["end"].startswith("lower")
            else np.array(highs[c]) < truth[c]
        )
        assert row["misses"] == int(ends.sum()) and row["defined"] == draws
        assert row["passes"] == (row["misses"] <= pass_max(draws, 0.025))
    assert {(r["view"], r["end"][:5]) for r in rows} == {
        (c, e) for c in ("co_clock", "co_scale") for e in ("lower", "upper")
    }


def test_a_redrawn_row_is_decided_on_its_pooled_draws():
    """18 misses of 400 fail (c(400, 2.5 %) = 15); with 128 of 4,000 more (the re-draw's 10 ×),
    146 of 4,400 pass (c_F(4,400, 2.5 %) = 146: the family level 1 − 0.05/100), with 129 more,
    147 do not; the means are the draws' weighted means."""
    head = {"scenario": "s", "view": "co_scale", "end": "lower end above β_co", "seconds": 1.0}
    first = [head | {"draws": 400, "defined": 400, "misses": 18, "passes": False}]
    first[0] |= {"mean_effect": 0.01, "mean_width": 0.2}
    again = [head | {"draws": 4000, "defined": 4000, "misses": 128, "passes": True}]
    again[0] |= {"mean_effect": 0.021, "mean_width": 0.1}
    (row,) = iv.pooled(first, again)
    assert pass_max(400, 0.025) == 15
    assert stats.binom.cdf(146, 4400, 0.025) >= 1 - 0.05 / 100 > stats.binom.cdf(145, 4400, 0.025)
    assert (row["draws"], row["misses"], row["pass_max"], row["passes"]) == (4400, 146, 146, True)
    assert row["mean_effect"] == pytest.approx(0.02) and row["mean_width"] == pytest.approx(
        (0.2 * 400 + 0.1 * 4000) / 4400
    )
    (worse,) = iv.pooled(first, [again[0] | {"misses": 129}])
    assert not worse["passes"] and worse["rate"] == pytest.approx(147 / 4400)
