"""Replication verdicts on small hand-made tables, with the paper's values read from
the data file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from primary_rows import primary_row

from topotrain.analysis.inference.verdicts import (
    EXPLAINED_BY_CLOCK,
    EXPLAINED_BY_NORM,
    REPRODUCED_SMALL,
    UNDECIDED,
    decide_claim,
)
from topotrain.analysis.replication.claims import (
    ARTEFACT,
    INCONCLUSIVE,
    NOT_EVALUATED,
    NOT_REPRODUCED,
    REPLICATION_COLUMNS,
    REPRODUCED,
    RULES,
    VERDICTS,
    exponent_verdict,
    read_paper_values,
    replication_table,
)

PAPER_FILE = ROOT / "workflow" / "data" / "paper_values.csv"
MODELS = ["tiny-3k", "small-7k", "med-21k", "large-46k", "xl-97k"]
SIZES = dict(zip(MODELS, [3_000, 7_000, 21_000, 46_000, 97_000], strict=True))


@pytest.fixture(scope="module")
def paper():
    return read_paper_values(PAPER_FILE)


def published(table: str, row: str, quantity: str) -> float:
    """A value read straight from the CSV, independently of the module under test."""
    df = pd.read_csv(PAPER_FILE, dtype=str)
    sel = df[(df["study"] == "A") & (df["table"] == table) & (df["row"] == row)]
    return float(sel[sel["quantity"] == quantity]["value"].iloc[0])


def raw(feature: str, cells: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """Raw-view association rows: model -> one (rho, p_bh) per seed; the raw p is p_bh / 2."""
    rows = [
        {
            "model": m,
            "seed": s,
            "n_params": SIZES[m],
            "feature": feature,
            "target": "train_loss",
            "view": "raw",
            "rho": rho,
            "p": p / 2,
            "p_bh": p,
        }
        for m, seeds in cells.items()
        for s, (rho, p) in enumerate(seeds)
    ]
    return pd.DataFrame(rows)


def primary(upper: float = 0.5, held: str = "4/4", **p: float) -> pd.DataFrame:
    """A primary-family table (``primary_rows.primary_row``, the bottom line's question ranks):
    feature -> its claim p (every condition alike; p_bh = p), the family-wise upper bound of
    every condition (``upper``) against Δ = 0.1, and the claimed models whose effect has its sign
    and whose reversal is ruled out (``held`` of 4, NP's models)."""
    return pd.DataFrame([primary_row(f, v, upper, held) for f, v in p.items()])


def rows_of(table: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return table[table["claim"].str.startswith(prefix)].reset_index(drop=True)


def verdict(table: pd.DataFrame, claim: str) -> str:
    return table.loc[table["claim"] == claim, "verdict"].item()


def test_paper_column_comes_from_the_data_file(paper):
    table = replication_table(paper, {})
    tp0 = rows_of(table, "ρ(TP0, train loss)")
    expected = [published("2", m, "rho_h0_total_train_loss") for m in MODELS]
    assert tp0["paper"].tolist() == pytest.approx(expected)
    gains = rows_of(table, "combined beats loss-only")["paper"]
    assert gains.tolist() == pytest.approx(
        [published("5", f, "improvement_combined_over_loss_only") for f in ("0.3", "0.5")]
    )
    assert rows_of(table, "scaling exponent")["paper"].tolist() == pytest.approx(
        [published("7", f, "exponent") for f in ("val_loss", "h0_total", "np_mean")]
    )


def test_without_any_input_every_claim_is_not_evaluated_with_its_rule(paper):
    table = replication_table(paper, {})
    assert list(table.columns) == REPLICATION_COLUMNS
    assert set(table["verdict"]) == {NOT_EVALUATED}
    assert set(table["rule"]) == set(RULES.values())
    explained = {EXPLAINED_BY_CLOCK, EXPLAINED_BY_NORM, UNDECIDED}
    others = {REPRODUCED, REPRODUCED_SMALL, NOT_REPRODUCED, INCONCLUSIVE, ARTEFACT, NOT_EVALUATED}
    assert len(VERDICTS) == 9 and set(VERDICTS) == explained | others


def models_table(losses: list[float]) -> pd.DataFrame:
    names = MODELS[: len(losses)]
    return pd.DataFrame(
        {"model": names, "n_params": [SIZES[m] for m in names], "final_val_loss": losses}
    )


def test_final_losses_are_judged_by_their_order_not_their_level(paper):
    t1 = "final validation loss falls with size"
    falling = replication_table(paper, {"models": models_table([3.1, 3.0, 2.9, 2.8, 2.7])})
    assert verdict(falling, t1) == REPRODUCED  # levels far from the paper's: order alone counts
    assert falling.loc[0, "ours"] == pytest.approx(-1.0) and falling.loc[0, "paper"] == -1.0
    swapped = replication_table(paper, {"models": models_table([3.1, 2.9, 3.0, 2.8, 2.7])})
    assert verdict(swapped, t1) == NOT_REPRODUCED
    two = replication_table(paper, {"models": models_table([3.1, 3.0])})
    assert verdict(two, t1) == NOT_EVALUATED


def test_tp0_rho_per_model_gives_each_verdict(paper):
    sig, weak = 1e-6, 0.3
    assoc = raw(
        "h0_total",
        {
            "tiny-3k": [(-0.8, sig), (-0.7, sig)],  # the paper's sign in every seed
            "med-21k": [(0.6, sig), (0.5, sig)],  # the wrong sign
            "large-46k": [(-0.8, sig), (0.1, weak)],  # one seed of two
        },
    )

    def got(p):
        table = replication_table(paper, {"associations": assoc, "primary": p})
        rows = rows_of(table, "ρ(TP0")
        return dict(zip(rows["claim"].str.split().str[-1], rows["verdict"], strict=True))

    expected = {
        "med-21k": NOT_REPRODUCED,
        "large-46k": INCONCLUSIVE,
        "xl-97k": NOT_EVALUATED,
        "small-7k": NOT_EVALUATED,
    }
    assert got(primary(h0_total=1e-4)) == expected | {"tiny-3k": REPRODUCED}
    assert got(primary(h0_total=0.2)) == expected | {"tiny-3k": UNDECIDED}  # not shown small
    small = primary(h0_total=0.2, upper=0.08)  # the effect shown below Δ = 0.1 beyond the clock
    assert got(small) == expected | {"tiny-3k": EXPLAINED_BY_CLOCK}
    # shown below Δ beyond the norm only, present beyond the clock (its own p 0.001)
    norm = pd.DataFrame([primary_row("h0_total", 0.2, norm_upper=0.08, clock_p=0.001)])
    assert got(norm) == expected | {"tiny-3k": EXPLAINED_BY_NORM}
    assert got(primary(h0_total=1e-4, upper=0.08)) == expected | {"tiny-3k": REPRODUCED}
    assert got(primary(h0_total=np.nan)) == expected | {"tiny-3k": UNDECIDED}  # one seed
    assert got(None) == expected | {"tiny-3k": UNDECIDED}  # no primary family: nothing decided
    table = replication_table(paper, {"associations": assoc, "primary": primary(h0_total=1e-4)})
    tiny = rows_of(table, "ρ(TP0, train loss) tiny-3k").iloc[0]
    z = np.arctanh([-0.8, -0.7])  # Fisher-z interval, computed here by hand
    half = 12.706 * z.std(ddof=1) / np.sqrt(2)
    assert tiny["ours"] == pytest.approx(-0.75)
    assert tiny["ours_ci_low"] == pytest.approx(np.tanh(z.mean() - half), abs=1e-3)
    assert tiny["ours_ci_high"] == pytest.approx(np.tanh(z.mean() + half), abs=1e-3)


def test_tp0_p_claim_uses_the_largest_raw_p_and_the_per_model_verdicts(paper):
    claim = "every p(TP0, train loss) < 1e-05 (paper's iid p)"

    def judged(cells, p=1e-4, upper=0.5):
        tables = {"associations": raw("h0_total", cells), "primary": primary(upper, h0_total=p)}
        row = rows_of(replication_table(paper, tables), claim)
        return row["verdict"].item(), row["ours"].item()

    cells = {m: [(-0.9, 1e-8), (-0.8, 4e-6)] for m in MODELS}
    assert judged(cells) == (REPRODUCED, pytest.approx(2e-6))  # largest raw p = 4e-6 / 2
    assert judged(cells, p=0.3)[0] == UNDECIDED  # TP0 does not beat the clock, not small
    assert judged(cells, p=0.3, upper=0.05)[0] == EXPLAINED_BY_CLOCK  # … and is shown below Δ
    assert judged(cells, upper=0.05)[0] == REPRODUCED  # reproduced comes first
    cells["tiny-3k"] = [(-0.9, 1e-8), (0.1, 4e-6)]  # one model's seeds disagree: inconclusive row
    assert judged(cells)[0] == UNDECIDED
    assert judged(cells, p=0.3, upper=0.05)[0] == EXPLAINED_BY_CLOCK  # the claim's explanation
    cells["tiny-3k"] = [(-0.9, 1e-8), (-0.8, 4e-6)]
    cells["med-21k"] = [(-0.9, 1e-8), (-0.6, 1e-3)]  # p = 5e-4 ≥ 1e-5
    assert judged(cells) == (NOT_REPRODUCED, pytest.approx(5e-4))
    del cells["xl-97k"]
    assert judged(cells)[0] == NOT_EVALUATED


def strengthening(rhos: list[list[float]], clock: list[float] | None = None) -> str:
    cells = {m: [(r, 1e-6) for r in seeds] for m, seeds in zip(MODELS, rhos, strict=False)}
    assoc = raw("h0_total", cells)
    if clock is not None:  # the step's own |ρ| per size
        step = raw("step", {m: [(-c, 1e-6)] for m, c in zip(MODELS, clock, strict=False)})
        assoc = pd.concat([assoc, step])
    table = replication_table(read_paper_values(PAPER_FILE), {"associations": assoc})
    return verdict(table, "|ρ(TP0, train loss)| strengthens with size")


def test_strengthening_needs_a_strict_rise_with_disjoint_seed_intervals():
    assert strengthening([[-0.50, -0.51], [-0.70, -0.71], [-0.90, -0.91]]) == REPRODUCED
    assert strengthening([[-0.50], [-0.70], [-0.90]]) == INCONCLUSIVE  # one seed: no interval
    assert strengthening([[-0.50, -0.80], [-0.60, -0.70], [-0.90, -0.91]]) == INCONCLUSIVE
    assert strengthening([[-0.90, -0.91], [-0.50, -0.51], [-0.95, -0.96]]) == NOT_REPRODUCED
    assert strengthening([[-0.5, -0.6], [-0.7, -0.8]]) == NOT_EVALUATED  # two sizes


def test_strengthening_that_the_clock_shows_as_strongly_is_an_artefact():
    rising = [[-0.50, -0.51], [-0.70, -0.71], [-0.90, -0.91]]
    assert strengthening(rising, clock=[0.9, 0.8, 0.7]) == REPRODUCED  # the clock weakens
    assert strengthening(rising, clock=[0.5, 0.8, 0.99]) == ARTEFACT  # the clock rises too


def test_np_reversal_counts_models_whose_effect_has_the_claimed_sign(paper):
    """T3 relays the primary family's decision and counts signs_held; the raw ρ of each seed,
    which the clock drives, does not decide (a wrong raw sign at xl-97k changes nothing)."""
    claim = "ρ(NP, train loss) sign reversal with size"

    def judged(p=1e-4, upper=0.5, held="4/4", raw_xl=0.5):
        signs = {"tiny-3k": -0.5, "med-21k": 0.6, "large-46k": 0.6, "xl-97k": raw_xl}
        cells = {m: [(r, 1e-4)] for m, r in signs.items()}
        tables = {"associations": raw("np_mean", cells), "primary": primary(upper, held, np_mean=p)}
        table = replication_table(paper, tables)
        return table.loc[table["claim"] == claim, ["verdict", "paper", "ours"]].iloc[0].tolist()

    assert judged() == [REPRODUCED, 4.0, 4.0]
    assert judged(raw_xl=-0.5) == [REPRODUCED, 4.0, 4.0]  # the raw ρ does not decide
    assert judged(held="3/4") == [UNDECIDED, 4.0, 3.0]  # a model's effect has the other sign
    assert judged(p=0.5)[0] == UNDECIDED  # not beyond the clock
    assert judged(p=0.5, upper=0.02)[0] == EXPLAINED_BY_CLOCK  # shown below Δ beyond the clock
    assert judged(p=np.nan)[:2] == [UNDECIDED, 4.0] and np.isnan(judged(p=np.nan)[2])
    fewer = primary(np_mean=1e-4).assign(models="med-21k;large-46k;xl-97k")  # no tiny-3k
    rows = replication_table(paper, {"primary": fewer})
    assert verdict(rows, claim) == NOT_EVALUATED
    assert "not in the feature table: tiny-3k" in rows.set_index("claim").loc[claim, "note"]
    assert verdict(replication_table(paper, {}), claim) == NOT_EVALUATED


def contrast(feature: str, model: str, p: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model": model,
                "seed": pd.NA,
                "n_params": SIZES[model],
                "feature": feature,
                "target": "train_loss",
                "view": "seed_contrast",
                "rho": 0.1,
                "p": p,
                "p_bh": p,
            }
        ]
    )


def test_tp1_weakening_uses_the_exact_permutation_p_and_the_baselines(paper):
    claim = "|ρ(TP1, train loss)| weakens with size, n.s. at xl-97k"
    strict = [-0.9, -0.8, -0.7, -0.6, -0.1]
    cells = {m: [(r, 1e-4)] for m, r in zip(MODELS, strict, strict=True)}

    def judged(cells, quiet_p=1 / 6, clock=None):
        parts = [raw("h1_total", cells), contrast("h1_total", "xl-97k", quiet_p)]
        if clock is not None:
            parts.append(raw("step", {m: [(-c, 1e-6)] for m, c in zip(MODELS, clock, strict=True)}))
        return verdict(replication_table(paper, {"associations": pd.concat(parts)}), claim)

    assert judged(cells) == REPRODUCED  # ρ = −1, exact p = 1/120 with five sizes
    assert judged(cells, clock=[0.99, 0.9, 0.8, 0.7, 0.6]) == ARTEFACT  # the clock weakens too
    assert judged(cells, clock=[0.6, 0.7, 0.8, 0.9, 0.99]) == REPRODUCED  # it strengthens
    assert judged(cells, quiet_p=0.01) == NOT_REPRODUCED  # the paper's quiet model is not
    cells["tiny-3k"], cells["small-7k"] = cells["small-7k"], cells["tiny-3k"]  # ρ = −0.9
    assert judged(cells) == INCONCLUSIVE  # ρ = −0.9: exact p = 0.083


def prediction(improvement_pct: float, beats: bool, p: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "fraction": [0.3],
            "method": ["combined"],
            "mae": [0.1],
            "improvement_pct": [improvement_pct],
            "rival": ["mean_loss_only_last"],
            "rival_p": [p],
            "beats_placebos": [beats],
        }
    )


@pytest.mark.parametrize(
    ("gain", "beats", "p", "expected"),
    [
        (12.0, True, 1 / 32, REPRODUCED),  # the smallest sign-flip p with five models
        (12.0, True, 0.5, INCONCLUSIVE),  # beats the rivals, but within paired noise
        (12.0, False, 1 / 32, ARTEFACT),  # the averaging control or a placebo does as well
        (-3.0, False, 1 / 32, NOT_REPRODUCED),
    ],
)
def test_prediction_gain_counts_only_if_it_beats_the_controls(paper, gain, beats, p, expected):
    table = replication_table(paper, {"prediction": prediction(gain, beats, p)})
    assert verdict(table, "combined beats loss-only at 30% of training") == expected
    assert verdict(table, "combined beats loss-only at 50% of training") == NOT_EVALUATED
    row = rows_of(table, "combined beats loss-only at 30%").iloc[0]
    assert row["ours"] == pytest.approx(gain / 100)


def phases(fracs: list[float]) -> pd.DataFrame:
    names = MODELS[: len(fracs)]
    return pd.DataFrame(
        {
            "model": names,
            "seed": 0,
            "n_params": [SIZES[m] for m in names],
            "peak_frac": 0.06,
            "peak_step": 300,
            "checkpoint_frac": 0.02,
            "total_steps": 5000,
            "diminishing_frac": fracs,
        }
    )


def l2_features(models: list[str], rising: bool) -> pd.DataFrame:
    """Feature tables whose L2 norm's diminishing returns come at 10%·(i+1) (rising) or the
    reverse: a norm that grows by 1 per checkpoint and then stops growing."""
    rows = []
    for i, m in enumerate(models):
        stop = (i + 1) if rising else (len(models) - i)
        for k in range(11):
            rows.append(
                {
                    "model": m,
                    "seed": 0,
                    "n_params": SIZES[m],
                    "step": 500 * k,
                    "frac": k / 10,
                    "l2_norm_mean": float(min(k, stop)),
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("fracs", "expected"),
    [
        ([0.1, 0.2, 0.3, 0.4, 0.5], REPRODUCED),  # ρ = 1, exact p = 1/120
        ([0.16, 0.08, 0.36, 0.30, 0.32], INCONCLUSIVE),  # the paper's own order: ρ = 0.6
        ([0.5, 0.4, 0.3, 0.2, 0.1], NOT_REPRODUCED),
        ([0.1, 0.2], NOT_EVALUATED),
    ],
)
def test_diminishing_returns_order_with_size(paper, fracs, expected):
    table = replication_table(paper, {"phases": phases(fracs)})
    assert verdict(table, "diminishing returns later for larger models") == expected


def test_diminishing_returns_that_the_l2_norm_shows_too_are_an_artefact(paper):
    rising = phases([0.1, 0.2, 0.3, 0.4, 0.5])
    claim = "diminishing returns later for larger models"
    same = {"phases": rising, "features": l2_features(MODELS, rising=True)}
    other = {"phases": rising, "features": l2_features(MODELS, rising=False)}
    assert verdict(replication_table(paper, same), claim) == ARTEFACT
    assert verdict(replication_table(paper, other), claim) == REPRODUCED


def peaks(fracs: dict[str, list[float]], interval: float = 0.02) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model": m,
                "seed": s,
                "n_params": SIZES[m],
                "peak_frac": f,
                "peak_step": round(f * 5000),
                "total_steps": 5000,
                "checkpoint_frac": interval,
                "diminishing_frac": 0.3,
            }
            for m, runs in fracs.items()
            for s, f in enumerate(runs)
        ]
    )


def test_peak_fraction_agrees_within_one_checkpoint_of_four_to_six_percent(paper):
    claim = "peak |ΔNP| at 4%–6% of training"
    fracs = {m: [0.04, 0.06, 0.08] for m in MODELS[:3]}  # 0.08 = 6% + one 2% interval
    row = rows_of(replication_table(paper, {"phases": peaks(fracs)}), claim).iloc[0]
    assert row["verdict"] == REPRODUCED
    assert (row["ours"], row["ours_ci_low"], row["ours_ci_high"]) == pytest.approx(
        (0.06, 0.04, 0.08)
    )
    assert verdict(replication_table(paper, {"phases": peaks(fracs, 0.01)}), claim) == INCONCLUSIVE
    fracs = {m: [0.3, 0.4, 0.06] for m in MODELS[:3]}  # 3 of 9 runs agree
    assert verdict(replication_table(paper, {"phases": peaks(fracs)}), claim) == NOT_REPRODUCED
    two = {m: [0.05] for m in MODELS[:2]}
    assert verdict(replication_table(paper, {"phases": peaks(two)}), claim) == NOT_EVALUATED


def test_a_peak_at_the_end_of_the_warm_up_is_an_artefact(paper):
    claim = "peak |ΔNP| at 4%–6% of training"
    fracs = {m: [0.04, 0.04, 0.06] for m in MODELS[:3]}  # steps 200, 200, 300
    tables = {"phases": peaks(fracs)}
    assert verdict(replication_table(paper, tables, warmup=200), claim) == ARTEFACT  # 2/3 at 200
    assert verdict(replication_table(paper, tables, warmup=2000), claim) == REPRODUCED
    # the L2 norm's own peak |Δ| at step 300 (one checkpoint of 100 = 0.02 × 5000 away from 200)
    norm = pd.DataFrame(
        [
            {
                "model": m,
                "seed": s,
                "n_params": SIZES[m],
                "step": 100 * k,
                "frac": k / 50,
                "l2_norm_mean": float(k >= 3),
            }
            for m in MODELS[:3]
            for s in range(3)
            for k in range(51)
        ]
    )
    tables["features"] = norm
    assert verdict(replication_table(paper, tables, warmup=2000), claim) == ARTEFACT


PYTHIA_B = ["EleutherAI/pythia-70m", "EleutherAI/pythia-160m", "EleutherAI/pythia-410m"]


def study_b(r: dict[str, tuple[float, float]], clock_order: bool) -> dict[str, pd.DataFrame]:
    """Correlation rows (feature -> (|r| = |ρ|, Pearson p) in every model) and embeddings whose
    perplexity falls with the step (clock |ρ| = 1) or not (clock |ρ| = 0.2 on five steps)."""
    corr = pd.DataFrame(
        [
            {"model": m, "feature": f, "rho": -a, "pearson_r": -a, "pearson_p": p}
            for m in PYTHIA_B
            for f, (a, p) in r.items()
        ]
    )
    ppl = [50.0, 40.0, 30.0, 20.0, 10.0] if clock_order else [30.0, 50.0, 10.0, 40.0, 20.0]
    emb = pd.DataFrame(
        [
            {"model": m, "step": s, "perplexity": q}
            for m in PYTHIA_B
            for s, q in zip([0, 1, 2, 4, 8], ppl, strict=True)
        ]
    )
    return {"pythia_correlations": corr, "pythia_embeddings": emb}


def test_study_b_rows_need_significance_in_every_model_and_more_than_the_clock(paper):
    r = {
        "h1_entropy": (0.9, 1e-3),
        "h1_count": (0.9, 0.2),
        "h1_max": (0.5, 1e-3),
        "h1_total": (0.4, 1e-3),
        "effective_rank": (0.6, 1e-3),
    }
    table = replication_table(paper, study_b(r, clock_order=False))
    b = "Pythia embeddings: "
    assert verdict(table, b + "H1 entropy tracks perplexity") == REPRODUCED  # 0.9 > clock 0.2
    assert verdict(table, b + "H1 count tracks perplexity") == NOT_REPRODUCED  # p = 0.2 everywhere
    entropy = rows_of(table, b + "H1 entropy").iloc[0]
    assert (entropy["paper"], entropy["ours"]) == pytest.approx((published_b("h1_entropy"), 0.9))
    gap = rows_of(table, b + "spectral baselines").iloc[0]
    assert gap["ours"] == pytest.approx(0.9 - 0.6) and gap["verdict"] == REPRODUCED
    assert gap["paper"] == pytest.approx(published_b("h1_count") - 0.56)
    table = replication_table(paper, study_b(r, clock_order=True))  # the clock has |ρ| = 1
    assert verdict(table, b + "H1 entropy tracks perplexity") == ARTEFACT
    one = study_b(r, clock_order=False)
    one["pythia_correlations"] = one["pythia_correlations"].query("model == @PYTHIA_B[0]")
    assert verdict(replication_table(paper, one), b + "H1 entropy tracks perplexity") == (
        NOT_EVALUATED
    )


def published_b(feature: str) -> float:
    df = pd.read_csv(PAPER_FILE, dtype=str)
    sel = df[(df["study"] == "B") & (df["row"] == feature)]
    return float(sel["value"].item())


@pytest.mark.parametrize(
    ("slope", "low", "high", "expected"),
    [
        (-0.15, -0.20, -0.10, REPRODUCED),  # −0.144 inside
        (-0.30, -0.40, -0.20, NOT_REPRODUCED),  # outside
        (-0.15, -0.30, 0.10, INCONCLUSIVE),  # the interval spans 0: no sign, no verdict
        (-0.15, -np.inf, -0.10, INCONCLUSIVE),  # unbounded interval
        (np.nan, np.nan, np.nan, NOT_EVALUATED),  # no fit
    ],
)
def test_exponent_is_judged_on_the_log_log_slope(slope, low, high, expected):
    assert exponent_verdict(published("7", "val_loss", "exponent"), slope, low, high) == expected


def test_scaling_rows_read_the_log_log_slope_and_its_interval(paper):
    scaling = pd.DataFrame(
        {
            "feature": ["val_loss"],
            "n_models": [5],
            "b": [-3.0],
            "b_ci_low": [-9.0],
            "b_ci_high": [2.0],
            "loglog_slope": [-0.15],
            "loglog_slope_ci_low": [-0.2],
            "loglog_slope_ci_high": [-0.1],
            "message": [np.nan],
        }
    )
    table = replication_table(paper, {"scaling": scaling})
    assert verdict(table, "scaling exponent of final val_loss") == REPRODUCED
    assert rows_of(table, "scaling exponent of final val_loss")["ours"].item() == -0.15
    assert verdict(table, "scaling exponent of final np_mean") == NOT_EVALUATED


def test_pythia_rows_need_the_weights_table(paper):
    weights = pd.DataFrame(
        {
            "model": "EleutherAI/pythia-14m",
            "step": [0, 1000, 143000],
            "np_mean": [0.3, 0.4, 0.6],
            "h0_total": [70.0, 71.0, 45.0],
        }
    )
    table = replication_table(paper, {"pythia_weights": weights})
    assert verdict(table, "Pythia-14m NP mean rises") == REPRODUCED
    assert verdict(table, "Pythia-14m TP0 falls") == REPRODUCED
    assert rows_of(table, "Pythia-14m TP0")["ours"].item() == pytest.approx(45 / 70 - 1)
    weights["np_mean"] = [0.3, 0.5, 0.4]  # not monotone
    assert (
        verdict(replication_table(paper, {"pythia_weights": weights}), "Pythia-14m NP mean rises")
        == NOT_REPRODUCED
    )
    assert verdict(replication_table(paper, {}), "Pythia-14m NP mean rises") == NOT_EVALUATED


def test_readme_lists_every_rule_as_the_table_states_it():
    readme = (ROOT / "docs" / "study.md").read_text().replace("\\|", "|")
    assert "Replication verdicts: claim → rule" in readme
    for key, rule in RULES.items():
        assert rule in readme, key


def test_a_claim_is_decided_by_its_test_and_its_interval_against_delta():
    """decide_claim by hand: the upper ends (clock, scale) against Δ = 0.1; either view below Δ
    shows the effect small (Bonferroni over the two views)."""
    assert decide_claim(True, [0.3, 0.4], 0.1) == REPRODUCED
    assert decide_claim(True, [0.3, 0.09], 0.1) == REPRODUCED_SMALL
    assert decide_claim(False, [0.09, 0.4], 0.1) == ARTEFACT
    assert decide_claim(False, [0.1, 0.4], 0.1) == INCONCLUSIVE  # at Δ is not below it
    assert decide_claim(False, [np.nan, np.nan], 0.1) == INCONCLUSIVE  # no interval
    assert decide_claim(None, [0.01, 0.01], 0.1) == INCONCLUSIVE  # cannot be measured
    assert decide_claim(False, [0.15, 0.4], 0.2) == ARTEFACT  # the same interval at 2Δ


def test_the_claims_note_quotes_both_questions_the_bottom_lines_first():
    from topotrain.analysis.replication.claims import claim_state

    row = primary_row("h0_total", 0.4, clock_p=0.0031, question="moves_with")
    decision, note = claim_state(pd.DataFrame([row]), "h0_total")
    assert decision == row["verdict"] == row["verdict_moves_with"] == "undecided"
    assert note.startswith(
        "primary test of 7776 arrangements; moves with (the bottom line): undecided (co-movement: "
        "clock p = 0.0031, scale p = 0.4, p_bh = 0.4; effect signs held in 4/4 models, "
        "reversal by Δ_co ruled out in 4/4 (each model's own test); effect 0.25 (≥ 0, one-sided "
        "95 % bound), Δ_co = 0.1; at Δ_co/2: undecided, at 2Δ_co: undecided); ranks: undecided "
        "(level: clock p = 0.0031, scale p = 0.4, p_bh = 0.4;"
    )
    ranks = primary_row("h0_total", 0.02)  # the other question at the bottom line
    _, note = claim_state(pd.DataFrame([ranks]), "h0_total")
    assert "; ranks (the bottom line): reproduced (level: " in note
    assert note.index("ranks (the bottom line)") < note.index("moves with: ")
