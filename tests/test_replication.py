"""Replication verdicts on small hand-made tables, with the paper's values read from the data file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from topotrain.analysis.replication import (
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


def raw(feature: str, cells: dict[str, list[tuple[float, float, bool]]]) -> pd.DataFrame:
    """Raw-view association rows: model -> one (rho, p_bh, beats_clock) per seed; the raw p is
    p_bh / 2."""
    rows = [
        {"model": m, "seed": s, "n_params": SIZES[m], "feature": feature, "target": "train_loss",
         "view": "raw", "rho": rho, "p": p / 2, "p_bh": p, "beats_clock": clock}
        for m, seeds in cells.items() for s, (rho, p, clock) in enumerate(seeds)
    ]  # fmt: skip
    return pd.DataFrame(rows)


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
    assert gains.tolist() == pytest.approx([published("5", f, "improvement_combined_over_loss_only")
                                            for f in ("0.3", "0.5")])  # fmt: skip
    assert rows_of(table, "scaling exponent")["paper"].tolist() == pytest.approx(
        [published("7", f, "exponent") for f in ("val_loss", "h0_total", "np_mean")]
    )


def test_without_any_input_every_claim_is_not_evaluated_with_its_rule(paper):
    table = replication_table(paper, {})
    assert list(table.columns) == REPLICATION_COLUMNS
    assert set(table["verdict"]) == {NOT_EVALUATED}
    assert set(table["rule"]) == set(RULES.values())
    assert set(VERDICTS) == {REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, ARTEFACT, NOT_EVALUATED}


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
    assoc = raw("h0_total", {
        "tiny-3k": [(-0.8, sig, True), (-0.7, sig, True)],  # significant, beats the clock
        "small-7k": [(-0.9, sig, False), (-0.9, sig, False)],  # significant, not beyond the clock
        "med-21k": [(0.6, sig, True), (0.5, sig, True)],  # significant with the wrong sign
        "large-46k": [(-0.8, sig, True), (-0.1, weak, False)],  # one seed of two
    })  # fmt: skip
    table = replication_table(paper, {"associations": assoc})
    got = dict(
        zip(rows_of(table, "ρ(TP0")["claim"], rows_of(table, "ρ(TP0")["verdict"], strict=True)
    )
    assert got == {
        "ρ(TP0, train loss) tiny-3k": REPRODUCED,
        "ρ(TP0, train loss) small-7k": ARTEFACT,
        "ρ(TP0, train loss) med-21k": NOT_REPRODUCED,
        "ρ(TP0, train loss) large-46k": INCONCLUSIVE,
        "ρ(TP0, train loss) xl-97k": NOT_EVALUATED,  # not trained
    }
    tiny = rows_of(table, "ρ(TP0, train loss) tiny-3k").iloc[0]
    z = np.arctanh([-0.8, -0.7])  # Fisher-z interval, computed here by hand
    half = 12.706 * z.std(ddof=1) / np.sqrt(2)
    assert tiny["ours"] == pytest.approx(-0.75)
    assert tiny["ours_ci_low"] == pytest.approx(np.tanh(z.mean() - half), abs=1e-3)
    assert tiny["ours_ci_high"] == pytest.approx(np.tanh(z.mean() + half), abs=1e-3)


def test_tp0_p_claim_uses_the_largest_raw_p_and_the_per_model_verdicts(paper):
    claim = "every p(TP0, train loss) < 1e-05 (paper's iid p)"

    def judged(cells):
        row = rows_of(replication_table(paper, {"associations": raw("h0_total", cells)}), claim)
        return row["verdict"].item(), row["ours"].item()

    cells = {m: [(-0.9, 1e-8, True), (-0.8, 4e-6, True)] for m in MODELS}
    assert judged(cells) == (REPRODUCED, pytest.approx(2e-6))  # largest raw p = 4e-6 / 2
    cells["small-7k"] = [(-0.9, 1e-8, False), (-0.9, 1e-8, False)]  # does not beat the clock
    assert judged(cells)[0] == ARTEFACT
    cells["med-21k"] = [(-0.9, 1e-8, True), (-0.6, 1e-3, True)]  # p = 5e-4 ≥ 1e-5
    assert judged(cells) == (NOT_REPRODUCED, pytest.approx(5e-4))
    del cells["xl-97k"]
    assert judged(cells)[0] == NOT_EVALUATED


def strengthening(rhos: list[list[float]]) -> str:
    cells = {m: [(r, 1e-6, True) for r in seeds] for m, seeds in zip(MODELS, rhos, strict=False)}
    table = replication_table(
        read_paper_values(PAPER_FILE), {"associations": raw("h0_total", cells)}
    )
    return verdict(table, "|ρ(TP0, train loss)| strengthens with size")


def test_strengthening_needs_a_strict_rise_with_disjoint_seed_intervals():
    assert strengthening([[-0.50, -0.51], [-0.70, -0.71], [-0.90, -0.91]]) == REPRODUCED
    assert strengthening([[-0.50], [-0.70], [-0.90]]) == INCONCLUSIVE  # one seed: no interval
    assert strengthening([[-0.50, -0.80], [-0.60, -0.70], [-0.90, -0.91]]) == INCONCLUSIVE
    assert strengthening([[-0.90, -0.91], [-0.50, -0.51], [-0.95, -0.96]]) == NOT_REPRODUCED
    assert strengthening([[-0.5, -0.6], [-0.7, -0.8]]) == NOT_EVALUATED  # two sizes


def test_np_reversal_counts_models_with_the_claimed_sign(paper):
    claim = "ρ(NP, train loss) sign reversal with size"
    signs = {"tiny-3k": -0.5, "med-21k": 0.6, "large-46k": 0.6, "xl-97k": 0.5}
    cells = {m: [(r, 1e-4, True)] for m, r in signs.items()}
    table = replication_table(paper, {"associations": raw("np_mean", cells)})
    assert verdict(table, claim) == REPRODUCED
    assert table.loc[table["claim"] == claim, ["paper", "ours"]].values.tolist() == [[4.0, 4.0]]
    cells["xl-97k"] = [(0.5, 0.4, True)]  # not significant: the sign is not shown
    assert verdict(replication_table(paper, {"associations": raw("np_mean", cells)}), claim) == (
        NOT_REPRODUCED
    )
    del cells["tiny-3k"]
    assert verdict(replication_table(paper, {"associations": raw("np_mean", cells)}), claim) == (
        NOT_EVALUATED
    )


def test_tp1_weakening_uses_the_exact_permutation_p(paper):
    claim = "|ρ(TP1, train loss)| weakens with size, n.s. at xl-97k"
    strict = [-0.9, -0.8, -0.7, -0.6, -0.1]
    cells = {
        m: [(r, 1e-4 if abs(r) > 0.5 else 0.5, True)] for m, r in zip(MODELS, strict, strict=True)
    }
    assert verdict(replication_table(paper, {"associations": raw("h1_total", cells)}), claim) == (
        REPRODUCED  # ρ = −1, exact p = 1/60 with five sizes
    )
    cells["tiny-3k"], cells["small-7k"] = cells["small-7k"], cells["tiny-3k"]  # ρ = −0.9: p = 0.083
    assert verdict(replication_table(paper, {"associations": raw("h1_total", cells)}), claim) == (
        INCONCLUSIVE
    )
    cells["xl-97k"] = [(-0.95, 1e-6, True)]  # significant where the paper's is not
    assert verdict(replication_table(paper, {"associations": raw("h1_total", cells)}), claim) == (
        NOT_REPRODUCED
    )


def prediction(improvement_pct: float, beats: bool, p: float) -> pd.DataFrame:
    return pd.DataFrame({"fraction": [0.3], "method": ["combined"], "mae": [0.1],
                         "improvement_pct": [improvement_pct], "wilcoxon_p": [p],
                         "beats_placebos": [beats]})  # fmt: skip


@pytest.mark.parametrize(
    ("gain", "beats", "p", "expected"),
    [
        (12.0, True, 0.01, REPRODUCED),
        (12.0, True, 0.5, INCONCLUSIVE),  # beats the placebos, but within paired noise
        (12.0, False, 0.01, ARTEFACT),
        (-3.0, False, 0.01, NOT_REPRODUCED),
    ],
)
def test_prediction_gain_counts_only_if_it_beats_the_placebos(paper, gain, beats, p, expected):
    table = replication_table(paper, {"prediction": prediction(gain, beats, p)})
    assert verdict(table, "combined beats loss-only at 30% of training") == expected
    assert verdict(table, "combined beats loss-only at 50% of training") == NOT_EVALUATED
    row = rows_of(table, "combined beats loss-only at 30%").iloc[0]
    assert row["ours"] == pytest.approx(gain / 100)


def phases(fracs: list[float]) -> pd.DataFrame:
    names = MODELS[: len(fracs)]
    return pd.DataFrame({"model": names, "seed": 0, "n_params": [SIZES[m] for m in names],
                         "peak_frac": 0.06, "checkpoint_frac": 0.02,
                         "diminishing_frac": fracs})  # fmt: skip


@pytest.mark.parametrize(
    ("fracs", "expected"),
    [
        ([0.1, 0.2, 0.3, 0.4, 0.5], REPRODUCED),  # ρ = 1, exact p = 1/60
        ([0.16, 0.08, 0.36, 0.30, 0.32], INCONCLUSIVE),  # the paper's own order: ρ = 0.6
        ([0.5, 0.4, 0.3, 0.2, 0.1], NOT_REPRODUCED),
        ([0.1, 0.2], NOT_EVALUATED),
    ],
)
def test_diminishing_returns_order_with_size(paper, fracs, expected):
    table = replication_table(paper, {"phases": phases(fracs)})
    assert verdict(table, "diminishing returns later for larger models") == expected


def peaks(fracs: dict[str, list[float]], interval: float = 0.02) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "seed": s, "n_params": SIZES[m], "peak_frac": f,
                          "checkpoint_frac": interval, "diminishing_frac": 0.3}
                         for m, runs in fracs.items() for s, f in enumerate(runs)])  # fmt: skip


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


PYTHIA_B = ["EleutherAI/pythia-70m", "EleutherAI/pythia-160m", "EleutherAI/pythia-410m"]


def study_b(r: dict[str, tuple[float, float]], clock_order: bool) -> dict[str, pd.DataFrame]:
    """Correlation rows (feature -> (|r| = |ρ|, Pearson p) in every model) and embeddings whose
    perplexity falls with the step (clock |ρ| = 1) or not (clock |ρ| = 0.2 on five steps)."""
    corr = pd.DataFrame([{"model": m, "feature": f, "rho": -a, "pearson_r": -a, "pearson_p": p}
                         for m in PYTHIA_B for f, (a, p) in r.items()])  # fmt: skip
    ppl = [50.0, 40.0, 30.0, 20.0, 10.0] if clock_order else [30.0, 50.0, 10.0, 40.0, 20.0]
    emb = pd.DataFrame([{"model": m, "step": s, "perplexity": q}
                        for m in PYTHIA_B for s, q in zip([0, 1, 2, 4, 8], ppl, strict=True)])  # fmt: skip
    return {"pythia_correlations": corr, "pythia_embeddings": emb}


def test_study_b_rows_need_significance_in_every_model_and_more_than_the_clock(paper):
    r = {"h1_entropy": (0.9, 1e-3), "h1_count": (0.9, 0.2), "h1_max": (0.5, 1e-3),
         "h1_total": (0.4, 1e-3), "effective_rank": (0.6, 1e-3)}  # fmt: skip
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
    ("b", "low", "high", "expected"),
    [
        (-0.15, -0.20, -0.10, REPRODUCED),  # −0.144 inside
        (-0.30, -0.40, -0.20, NOT_REPRODUCED),  # outside
        (0.01, -0.20, 0.10, NOT_REPRODUCED),  # inside, but b has the other sign
        (-0.15, -np.inf, -0.10, INCONCLUSIVE),  # unbounded profile interval
        (np.nan, np.nan, np.nan, NOT_EVALUATED),  # fit failed
    ],
)
def test_exponent_is_reproduced_when_the_paper_value_lies_in_our_interval(b, low, high, expected):
    assert exponent_verdict(published("7", "val_loss", "exponent"), b, low, high) == expected


def test_scaling_rows_read_the_offset_fit_interval(paper):
    scaling = pd.DataFrame({"feature": ["val_loss"], "n_models": [5], "b": [-0.15],
                            "b_ci_low": [-0.2], "b_ci_high": [-0.1], "message": [np.nan]})  # fmt: skip
    table = replication_table(paper, {"scaling": scaling})
    assert verdict(table, "scaling exponent of final val_loss") == REPRODUCED
    assert verdict(table, "scaling exponent of final np_mean") == NOT_EVALUATED


def test_pythia_rows_need_the_weights_table(paper):
    weights = pd.DataFrame({"model": "EleutherAI/pythia-14m", "step": [0, 1000, 143000],
                            "np_mean": [0.3, 0.4, 0.6], "h0_total": [70.0, 71.0, 45.0]})  # fmt: skip
    table = replication_table(paper, {"pythia_weights": weights})
    assert verdict(table, "Pythia-14m NP mean rises") == REPRODUCED
    assert verdict(table, "Pythia-14m TP0 falls") == REPRODUCED
    assert rows_of(table, "Pythia-14m TP0")["ours"].item() == pytest.approx(45 / 70 - 1)
    weights["np_mean"] = [0.3, 0.5, 0.4]  # not monotone
    assert verdict(replication_table(paper, {"pythia_weights": weights}),
                   "Pythia-14m NP mean rises") == NOT_REPRODUCED  # fmt: skip
    assert verdict(replication_table(paper, {}), "Pythia-14m NP mean rises") == NOT_EVALUATED


def test_readme_lists_every_rule_as_the_table_states_it():
    readme = (ROOT / "README.md").read_text().replace("\\|", "|")
    assert "Replication verdicts: claim → rule" in readme
    for key, rule in RULES.items():
        assert rule in readme, key
