"""Replication verdicts: each claim of Study A beside our number and the rule that judges it.

Ours comes from the workflow's tables; the shared words and the paper's values are in
``verdicts``, Table 8 and Study B in ``replication_pythia``. One row per claim
(REPLICATION_COLUMNS); the verdict is one of VERDICTS, computed by the rule printed in the ``rule``
column (RULES). Per-model claims use the paper's model names: a model we did not train gives
``not evaluated``, never an error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.replication_pythia import PYTHIA_RULES, pythia_rows, study_b_rows
from topotrain.analysis.scaling import spearman_exact
from topotrain.analysis.stats import ALPHA, seed_interval
from topotrain.analysis.verdicts import (
    ARTEFACT,
    INCONCLUSIVE,
    MIN_MODELS,
    NOT_EVALUATED,
    NOT_REPRODUCED,
    REPLICATION_COLUMNS,
    REPRODUCED,
    VERDICTS,
    flag,
    make_row,
    paper_series,
    rank_rho,
    read_paper_values,
)

__all__ = [
    "ARTEFACT", "INCONCLUSIVE", "NOT_EVALUATED", "NOT_REPRODUCED", "REPLICATION_COLUMNS",
    "REPRODUCED", "RULES", "VERDICTS", "read_paper_values", "replication_table",
]  # fmt: skip

RAW_COLUMNS = ["model", "seed", "n_params", "rho", "p", "p_bh", "beats_clock"]
T2_P = 1e-5  # Table 2's "all p < 1e-5" (the paper's iid p-values)
T6_PEAK = (0.04, 0.06)  # Table 6's "peak change at 4–6% of training"
SIG = f"p_bh < {ALPHA:g}"
A_RULES = {
    "t1": "Spearman ρ of mean final val loss vs N over the paper's models we trained (paper: its "
    "Table 1 by size); reproduced if it falls strictly with N (ρ = −1), else not reproduced; "
    f"levels not compared (other split); not evaluated below {MIN_MODELS} models.",
    "t2": f"Raw ρ(TP0, train loss), mean over seeds, Fisher-z interval; reproduced if every seed has "
    f"the paper's sign with {SIG} and TP0 beats the clock (partial-on-step CI excludes 0) in at "
    "least half the seeds; artefact if significant in every seed but beating the clock in fewer "
    "than half; not reproduced if no seed is; inconclusive otherwise; not evaluated if absent.",
    "t2_monotone": "Spearman of mean |ρ(TP0, train loss)| vs N (paper: same on Table 2); "
    "reproduced if it rises strictly with N and adjacent sizes' across-seed intervals are "
    "disjoint; not reproduced if an adjacent pair falls with disjoint intervals; inconclusive "
    f"otherwise (overlap, or one seed: no interval); not evaluated below {MIN_MODELS} models.",
    "t2_p": f"Largest raw p of ρ(TP0, train loss) over the paper's models and our seeds (the paper's "
    f"iid method, not valid for trending series); reproduced if < {T2_P:g} and every model's ρ "
    f"row is reproduced; artefact if < {T2_P:g} but a model's row is an artefact (TP0 does not "
    "beat the clock); not reproduced otherwise; not evaluated if a model is absent.",
    "t3": f"Models where the paper's ρ(NP, train loss) has p < {ALPHA:g}: ours = how many show its "
    f"sign with {SIG} in every seed; reproduced if all, with NP beating the clock in at least half "
    "their runs (else artefact); not reproduced if one shows it in no seed; inconclusive "
    "otherwise; not evaluated if one is absent.",
    "t4": "Spearman of mean |ρ(TP1, train loss)| vs N, exact permutation p; reproduced if ρ < 0 "
    f"with p < {ALPHA:g} and the model the paper finds non-significant has p_bh ≥ {ALPHA:g} in "
    "most seeds; not reproduced if ρ ≥ 0 or it is significant in most seeds; inconclusive "
    f"otherwise; not evaluated below {MIN_MODELS} models or without that model.",
    "t5": "Combined over loss-only, (MAE_loss − MAE)/MAE_loss at this fraction; reproduced if > 0, "
    "combined beats both placebos and loss-only (beats_placebos) and the paired Wilcoxon test "
    f"of its errors against loss-only's has p < {ALPHA:g}; inconclusive if > 0 and beats the "
    "placebos but p ≥ that; artefact if > 0 but a placebo does as well; not reproduced if ≤ 0; "
    "not evaluated if not run.",
    "t6": "Spearman of mean diminishing-returns fraction vs N, exact permutation p (paper: same on "
    f"Table 6); reproduced if ρ > 0 with p < {ALPHA:g} (five sizes: only a strictly rising order); "
    f"not reproduced if ρ ≤ 0; inconclusive otherwise; not evaluated below {MIN_MODELS} models.",
    "t6_peak": f"Fraction of training at the peak |ΔNP| per run (ours: median over runs, range over "
    f"runs); a run agrees if it lies in the paper's {T6_PEAK[0]:.0%}–{T6_PEAK[1]:.0%} widened by "
    "one checkpoint interval on each side; reproduced if every run of the paper's models agrees, "
    "not reproduced if fewer than half do, inconclusive otherwise; not evaluated below "
    f"{MIN_MODELS} models.",
    "t7": "Exponent b of a·N^b + c with its 95% F-profile interval; reproduced if the paper's "
    "exponent lies in it and b has its sign; inconclusive if the interval is unbounded or "
    "undefined; not reproduced otherwise; not evaluated if the fit failed or the feature is absent.",
}
RULES = {**A_RULES, **PYTHIA_RULES}


def _row(claim: str, table: str, key: str, paper: float, verdict: str, **ours) -> dict:
    """A Study A row judged by the rule A_RULES[key]."""
    return make_row(claim, table, A_RULES[key], paper, verdict, **ours)


def _per_model(table: pd.DataFrame, models: pd.Index) -> pd.DataFrame:
    """Rows of the paper's models, ordered by our parameter count."""
    return table[table["model"].isin(models)].sort_values("n_params", kind="stable")


def final_loss_rows(paper: pd.DataFrame, models: pd.DataFrame | None) -> list[dict]:
    """T1: the ordering of final validation losses by size."""
    ref = paper_series(paper, "1", "final_val_loss")
    claim = "final validation loss falls with size"
    ours = _per_model(models, ref.index) if models is not None else pd.DataFrame()
    if len(ours) < MIN_MODELS:
        note = f"{len(ours)} of the paper's models in models.csv"
        return [_row(claim, "1", "t1", rank_rho(ref), NOT_EVALUATED, note=note)]
    loss = ours["final_val_loss"].to_numpy(float)
    rho = spearman_exact(ours["n_params"], loss)[0]
    verdict = REPRODUCED if np.all(np.diff(loss) < 0) else NOT_REPRODUCED
    note = f"{len(ours)} models; means over seeds"
    return [_row(claim, "1", "t1", rank_rho(ref), verdict, ours=rho, note=note)]


def raw_cells(assoc: pd.DataFrame, feature: str, target: str = "train_loss") -> pd.DataFrame:
    """Per (model, seed): raw ρ, p_bh and beats_clock of ``feature`` with ``target``."""
    sel = (assoc["feature"] == feature) & (assoc["target"] == target) & (assoc["view"] == "raw")
    return assoc.loc[sel, RAW_COLUMNS]


def seed_evidence(cells: pd.DataFrame, sign: float) -> dict:
    """Seeds (n), those with ``sign`` and p_bh < α (agree), p_bh < α (significant), beating the
    clock (clock), the largest raw p (p_max), and seed_interval of ρ (rho_mean, rho_low, rho_high)."""
    rho, p = cells["rho"].to_numpy(float), cells["p_bh"].to_numpy(float)
    sig = np.isfinite(p) & (p < ALPHA)
    return {"n": len(cells), "agree": int((sig & (np.sign(rho) == sign)).sum()),
            "significant": int(sig.sum()), "clock": int(flag(cells["beats_clock"]).sum()),
            "p_max": float(cells["p"].max()) if len(cells) else np.nan, **seed_interval(rho)}  # fmt: skip


def sign_verdict(ev: dict) -> str:
    """T2 rule on one model's seed_evidence."""
    if ev["n"] == 0:
        return NOT_EVALUATED
    if ev["agree"] == ev["n"]:
        return REPRODUCED if 2 * ev["clock"] >= ev["n"] else ARTEFACT
    return NOT_REPRODUCED if ev["agree"] == 0 else INCONCLUSIVE


def _evidence(assoc: pd.DataFrame | None, feature: str, ref: pd.Series) -> dict[str, dict]:
    """seed_evidence per paper model (the paper's sign), in the paper's order."""
    cells = raw_cells(assoc, feature) if assoc is not None else pd.DataFrame(columns=RAW_COLUMNS)
    return {m: seed_evidence(cells[cells["model"] == m], np.sign(r)) for m, r in ref.items()}


def tp0_rows(paper: pd.DataFrame, assoc: pd.DataFrame | None) -> list[dict]:
    """T2: ρ(TP0, train loss) per model, and its monotone strengthening with size."""
    ref = paper_series(paper, "2", "rho_h0_total_train_loss")
    evidence = _evidence(assoc, "h0_total", ref)
    rows = []
    for model, ev in evidence.items():
        note = (f"{ev['agree']}/{ev['n']} seeds significant with the paper's sign, "
                f"{ev['clock']}/{ev['n']} beat the clock") if ev["n"] else "model not trained"  # fmt: skip
        rows.append(_row(f"ρ(TP0, train loss) {model}", "2", "t2", ref[model], sign_verdict(ev),
                         ours=ev["rho_mean"], ours_ci_low=ev["rho_low"],
                         ours_ci_high=ev["rho_high"], note=note))  # fmt: skip
    return rows + [monotone_row(ref, evidence, assoc), tp0_p_row(paper, evidence, rows)]


def tp0_p_row(paper: pd.DataFrame, evidence: dict[str, dict], model_rows: list[dict]) -> dict:
    """T2: "all p < 1e-5" with the paper's own (iid) p-values."""
    claim = f"every p(TP0, train loss) < {T2_P:g} (paper's iid p)"
    paper_p = float(paper_series(paper, "2", "p").max())
    if any(ev["n"] == 0 for ev in evidence.values()):
        return _row(claim, "2", "t2_p", paper_p, NOT_EVALUATED, note="a paper model not trained")
    p_max = max(ev["p_max"] for ev in evidence.values())
    verdicts = {row["verdict"] for row in model_rows}
    if not p_max < T2_P:
        verdict = NOT_REPRODUCED
    elif verdicts == {REPRODUCED}:
        verdict = REPRODUCED
    else:
        verdict = ARTEFACT if ARTEFACT in verdicts else NOT_REPRODUCED
    note = f"largest of {sum(ev['n'] for ev in evidence.values())} runs' raw p"
    return _row(claim, "2", "t2_p", paper_p, verdict, ours=p_max, note=note)


def _disjoint(a: dict, b: dict) -> bool:
    """Whether two across-seed intervals are defined and do not overlap."""
    ends = [a["rho_low"], a["rho_high"], b["rho_low"], b["rho_high"]]
    return bool(np.all(np.isfinite(ends)) and (ends[1] < ends[2] or ends[3] < ends[0]))


def monotone_verdict(evidence: list[dict]) -> str:
    """T2 strengthening rule on seed_evidence ordered by size."""
    rises = np.diff([abs(ev["rho_mean"]) for ev in evidence])
    disjoint = [_disjoint(a, b) for a, b in zip(evidence[:-1], evidence[1:], strict=True)]
    if np.all(rises > 0) and all(disjoint):
        return REPRODUCED
    if any(r < 0 and d for r, d in zip(rises, disjoint, strict=True)):
        return NOT_REPRODUCED
    return INCONCLUSIVE


def _by_size(evidence: dict[str, dict], assoc: pd.DataFrame | None) -> pd.DataFrame:
    """Paper models with a defined mean ρ, with our n_params, ordered by it."""
    if assoc is None:
        return pd.DataFrame(columns=["model", "n_params", "ev"])
    sizes = assoc.groupby("model")["n_params"].first()
    rows = [{"model": m, "n_params": sizes[m], "ev": ev} for m, ev in evidence.items()
            if m in sizes and np.isfinite(ev["rho_mean"])]  # fmt: skip
    return pd.DataFrame(rows, columns=["model", "n_params", "ev"]).sort_values("n_params")


def monotone_row(ref: pd.Series, evidence: dict[str, dict], assoc: pd.DataFrame | None) -> dict:
    """T2: |ρ(TP0, train loss)| strengthens with size."""
    claim = "|ρ(TP0, train loss)| strengthens with size"
    sized = _by_size(evidence, assoc)
    paper = rank_rho(ref.abs())
    if len(sized) < MIN_MODELS:
        note = f"{len(sized)} of the paper's models with a defined ρ"
        return _row(claim, "2", "t2_monotone", paper, NOT_EVALUATED, note=note)
    strength = [abs(ev["rho_mean"]) for ev in sized["ev"]]
    rho = spearman_exact(sized["n_params"], strength)[0]
    verdict = monotone_verdict(list(sized["ev"]))
    return _row(claim, "2", "t2_monotone", paper, verdict, ours=rho, note=f"{len(sized)} models")


def np_reversal_row(paper: pd.DataFrame, assoc: pd.DataFrame | None) -> dict:
    """T3: NP's ρ with training loss is negative for the smallest model, positive for the largest."""
    ref = paper_series(paper, "3", "rho_np_mean_train_loss")
    claimed = ref[paper_series(paper, "3", "p") < ALPHA]
    evidence = _evidence(assoc, "np_mean", claimed)
    claim = "ρ(NP, train loss) sign reversal with size"
    shown = sum(ev["n"] > 0 and ev["agree"] == ev["n"] for ev in evidence.values())
    note = "claimed: " + ", ".join(f"{m} {'+' if r > 0 else '−'}" for m, r in claimed.items())
    if any(ev["n"] == 0 for ev in evidence.values()):
        verdict = NOT_EVALUATED
    elif shown == len(claimed):
        runs, clock = (sum(ev[k] for ev in evidence.values()) for k in ("n", "clock"))
        verdict = REPRODUCED if 2 * clock >= runs else ARTEFACT
    elif any(ev["agree"] == 0 for ev in evidence.values()):
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    ours = np.nan if verdict == NOT_EVALUATED else float(shown)
    return _row(claim, "3", "t3", float(len(claimed)), verdict, ours=ours, note=note)


def tp1_weakening_row(paper: pd.DataFrame, assoc: pd.DataFrame | None) -> dict:
    """T4: |ρ(TP1, train loss)| weakens with size and is not significant at the largest model."""
    ref = paper_series(paper, "4", "rho_h1_total_train_loss")
    quiet = ref[paper_series(paper, "4", "p") >= ALPHA].index
    evidence = _evidence(assoc, "h1_total", ref)
    sized = _by_size(evidence, assoc)
    claim = "|ρ(TP1, train loss)| weakens with size, n.s. at " + ", ".join(quiet)
    paper_rho = rank_rho(ref.abs())
    if len(sized) < MIN_MODELS or not set(quiet) <= set(sized["model"]):
        note = f"{len(sized)} of the paper's models with a defined ρ"
        return _row(claim, "4", "t4", paper_rho, NOT_EVALUATED, note=note)
    rho, p = spearman_exact(sized["n_params"], [abs(ev["rho_mean"]) for ev in sized["ev"]])
    loud = any(2 * evidence[m]["significant"] > evidence[m]["n"] for m in quiet)
    if rho >= 0 or loud:
        verdict = NOT_REPRODUCED
    else:
        verdict = REPRODUCED if p < ALPHA else INCONCLUSIVE
    note = (
        f"{len(sized)} models; exact p = {p:.3g}; significant in most seeds at {quiet[0]}: {loud}"
    )
    return _row(claim, "4", "t4", paper_rho, verdict, ours=rho, note=note)


def prediction_rows(paper: pd.DataFrame, prediction: pd.DataFrame | None) -> list[dict]:
    """T5: MAE improvement of combined over loss-only where the paper reports a gain."""
    ref = paper_series(paper, "5", "improvement_combined_over_loss_only")
    rows = []
    for fraction, gain in ref[ref > 0].items():
        claim = f"combined beats loss-only at {float(fraction):.0%} of training"
        sel = pd.DataFrame()
        if prediction is not None:
            at = np.isclose(prediction["fraction"].astype(float), float(fraction))
            sel = prediction[at & (prediction["method"] == "combined")]
        if sel.empty or not np.isfinite(sel["improvement_pct"].iloc[0]):
            rows.append(_row(claim, "5", "t5", gain, NOT_EVALUATED, note="fraction not run"))
            continue
        ours = float(sel["improvement_pct"].iloc[0]) / 100
        beats = bool(flag(sel["beats_placebos"])[0])
        significant = float(sel["wilcoxon_p"].iloc[0]) < ALPHA
        verdict = NOT_REPRODUCED if ours <= 0 else ARTEFACT if not beats else None
        verdict = verdict or (REPRODUCED if significant else INCONCLUSIVE)
        note = f"beats_placebos: {beats}; Wilcoxon p = {sel['wilcoxon_p'].iloc[0]:.3g}"
        rows.append(_row(claim, "5", "t5", gain, verdict, ours=ours, note=note))
    return rows


def phases_row(paper: pd.DataFrame, phases: pd.DataFrame | None) -> dict:
    """T6: diminishing returns of NP come later for larger models."""
    ref = paper_series(paper, "6", "diminishing_frac")
    claim = "diminishing returns later for larger models"
    paper_rho = rank_rho(ref)
    ours = pd.DataFrame(columns=["n_params", "diminishing_frac"])
    if phases is not None:
        runs = phases[phases["model"].isin(ref.index)]
        ours = runs.groupby("model")[["n_params", "diminishing_frac"]].mean().dropna()
    if len(ours) < MIN_MODELS:
        note = f"{len(ours)} of the paper's models with a diminishing-returns step"
        return _row(claim, "6", "t6", paper_rho, NOT_EVALUATED, note=note)
    rho, p = spearman_exact(ours["n_params"], ours["diminishing_frac"])
    if not np.isfinite(rho):
        verdict = INCONCLUSIVE
    else:
        verdict = NOT_REPRODUCED if rho <= 0 else REPRODUCED if p < ALPHA else INCONCLUSIVE
    note = (f"{len(ours)} models; exact p = {p:.3g}; paper's own exact p = "
            f"{spearman_exact(np.arange(len(ref)), ref)[1]:.3g}")  # fmt: skip
    return _row(claim, "6", "t6", paper_rho, verdict, ours=rho, note=note)


def peak_row(paper: pd.DataFrame, phases: pd.DataFrame | None) -> dict:
    """T6: the largest |ΔNP| comes at 4–6% of training."""
    ref = paper_series(paper, "6", "peak_step")
    claim = f"peak |ΔNP| at {T6_PEAK[0]:.0%}–{T6_PEAK[1]:.0%} of training"
    paper_mid = float(np.mean(T6_PEAK))
    runs = pd.DataFrame(columns=["model", "peak_frac", "checkpoint_frac"])
    if phases is not None:
        runs = phases[phases["model"].isin(ref.index) & phases["peak_frac"].notna()]
    if runs["model"].nunique() < MIN_MODELS:
        note = f"{runs['model'].nunique()} of the paper's models with a peak"
        return _row(claim, "6", "t6_peak", paper_mid, NOT_EVALUATED, note=note)
    frac = runs["peak_frac"].to_numpy(float)
    spacing = runs["checkpoint_frac"].to_numpy(float)
    agree = (frac >= T6_PEAK[0] - spacing - 1e-9) & (frac <= T6_PEAK[1] + spacing + 1e-9)
    if agree.all():
        verdict = REPRODUCED
    else:
        verdict = NOT_REPRODUCED if 2 * agree.sum() < agree.size else INCONCLUSIVE
    note = f"{int(agree.sum())}/{agree.size} runs agree; checkpoint interval {spacing.max():.3g}"
    return _row(claim, "6", "t6_peak", paper_mid, verdict, ours=float(np.median(frac)),
                ours_ci_low=float(frac.min()), ours_ci_high=float(frac.max()), note=note)  # fmt: skip


def exponent_verdict(paper: float, b: float, low: float, high: float) -> str:
    """T7 rule: the paper's exponent inside our profile interval, with b of its sign."""
    if not np.isfinite(b):
        return NOT_EVALUATED
    if not (np.isfinite(low) and np.isfinite(high)):
        return INCONCLUSIVE
    inside = low <= paper <= high and np.sign(b) == np.sign(paper)
    return REPRODUCED if inside else NOT_REPRODUCED


def scaling_rows(paper: pd.DataFrame, scaling: pd.DataFrame | None) -> list[dict]:
    """T7: power-law exponents of final loss, TP0 and NP with N."""
    ref = paper_series(paper, "7", "exponent")
    fits = scaling.set_index("feature") if scaling is not None else pd.DataFrame()
    rows = []
    for feature, exponent in ref.items():
        claim = f"scaling exponent of final {feature}"
        if feature not in fits.index:
            rows.append(_row(claim, "7", "t7", exponent, NOT_EVALUATED, note="no fit"))
            continue
        fit = fits.loc[feature]
        b, low, high = (float(fit[k]) for k in ("b", "b_ci_low", "b_ci_high"))
        message = fit["message"] if isinstance(fit["message"], str) else ""
        note = "; ".join(filter(None, [f"{int(fit['n_models'])} models", message]))
        rows.append(_row(claim, "7", "t7", exponent, exponent_verdict(exponent, b, low, high),
                         ours=b, ours_ci_low=low, ours_ci_high=high, note=note))  # fmt: skip
    return rows


def replication_table(paper: pd.DataFrame, tables: dict[str, pd.DataFrame | None]) -> pd.DataFrame:
    """One row per claim (REPLICATION_COLUMNS) from the paper values and our tables.

    ``tables`` maps models, associations, prediction, phases, scaling, pythia_weights,
    pythia_correlations and pythia_embeddings to their DataFrames; a missing key or None makes that claim's rows ``not evaluated``.
    """
    assoc = tables.get("associations")
    rows = [
        *final_loss_rows(paper, tables.get("models")),
        *tp0_rows(paper, assoc),
        np_reversal_row(paper, assoc),
        tp1_weakening_row(paper, assoc),
        *prediction_rows(paper, tables.get("prediction")),
        peak_row(paper, tables.get("phases")),
        phases_row(paper, tables.get("phases")),
        *scaling_rows(paper, tables.get("scaling")),
        *pythia_rows(paper, tables.get("pythia_weights")),
        *study_b_rows(paper, tables.get("pythia_correlations"), tables.get("pythia_embeddings")),
    ]
    return pd.DataFrame(rows, columns=REPLICATION_COLUMNS)
