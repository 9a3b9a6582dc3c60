"""Replication verdicts on the Pythia branch: Table 8 (Pythia-14m weights) and Study B (embeddings).

Both are ``not evaluated`` when the branch is off (no hub here), and computed from the branch's
tables (``pythia_weights``, ``pythia_correlations``, ``pythia_embeddings``) when it ran.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference import verdicts  # its words: verdicts.REPRODUCED, …
from topotrain.analysis.inference.stats import ALPHA, spearman_exact
from topotrain.analysis.inference.verdicts import MIN_MODELS, make_row, paper_series
from topotrain.analysis.replication.perplexity import SPECTRAL
from topotrain.topology import registry

PYTHIA_MODEL = "pythia-14m"  # Table 8's model (hub id suffix)
STUDY_B = ("h1_entropy", "h1_count", "h1_max", "h1_total")  # the paper's H1 features, its order
H1_FEATURES = {key: registry.short_names("embedding")[key] for key in STUDY_B}  # → "H1 entropy"
NP, TP0 = registry.of_short("NP"), registry.of_short("TP0")  # Table 8's: np_mean, h0_total
PYTHIA_RULES = {
    "t8_np": "Pythia-14m NP mean, relative change first → last revision; reproduced if it rises at "
    "every revision (as the paper's), else not reproduced; not evaluated without "
    "pythia_weights.csv (Pythia branch off) or the model.",
    "t8_tp0": "Pythia-14m TP0 (H0 total), relative change first → last revision; reproduced if < 0 "
    "(falls), else not reproduced; not evaluated as for NP.",
    "b_h1": "Mean |Pearson r| of the feature with perplexity over the paper's Pythia models; "
    f"reproduced if Pearson p < {ALPHA:g} in every model and its mean |Spearman ρ| exceeds the "
    "clock's (ρ of the step with perplexity, same revisions); artefact if significant in every "
    "model but no stronger than the clock; not reproduced if significant in none; inconclusive "
    f"otherwise; not evaluated without pythia_correlations.csv or below {MIN_MODELS} models.",
    "b_spectral": "Best H1 feature's mean |Pearson r| with perplexity minus the best spectral "
    "baseline's (effective rank, participation ratio, spectral α), over the paper's Pythia models "
    "(paper: 0.857 − 0.56); reproduced if > 0, else not reproduced; not evaluated as for H1.",
}


def _row(claim: str, table: str, key: str, paper: float, verdict: str, **ours) -> dict:
    """A row judged by the rule PYTHIA_RULES[key]."""
    return make_row(claim, table, PYTHIA_RULES[key], paper, verdict, **ours)


def _h1_row(label: str, paper: float, verdict: str, **ours) -> dict:
    """Study B's row on one H1 feature (rule b_h1)."""
    return _row(
        f"Pythia embeddings: {label} tracks perplexity", "B", "b_h1", paper, verdict, **ours
    )


def _spectral_row(paper: float, verdict: str, **ours) -> dict:
    """Study B's row on the spectral baselines (rule b_spectral)."""
    claim = "Pythia embeddings: spectral baselines weaker than H1 features"
    return _row(claim, "B", "b_spectral", paper, verdict, **ours)


def pythia_rows(paper: pd.DataFrame, weights: pd.DataFrame | None) -> list[dict]:
    """T8: Pythia-14m's NP mean rises monotonically and its TP0 falls over training."""
    rows = []
    run = pd.DataFrame()
    if weights is not None:
        run = weights[weights["model"].astype(str).str.endswith(PYTHIA_MODEL)].sort_values("step")
    for quantity, key, claim in (
        (NP, "t8_np", "Pythia-14m NP mean rises"),
        (TP0, "t8_tp0", "Pythia-14m TP0 falls"),
    ):
        ref = paper_series(paper, "8", quantity)
        paper_change = ref.iloc[-1] / ref.iloc[0] - 1
        if len(run) < 2:
            note = "Pythia weights table absent" if weights is None else f"{PYTHIA_MODEL} absent"
            rows.append(_row(claim, "8", key, paper_change, verdicts.NOT_EVALUATED, note=note))
            continue
        values = run[quantity].to_numpy(float)
        change = values[-1] / values[0] - 1
        holds = np.all(np.diff(values) > 0) if quantity == NP else change < 0
        note = "steps " + ", ".join(str(s) for s in run["step"])
        rows.append(
            _row(
                claim,
                "8",
                key,
                paper_change,
                verdicts.REPRODUCED if holds else verdicts.NOT_REPRODUCED,
                ours=change,
                note=note,
            )
        )
    return rows


def _name(models: pd.Series) -> pd.Series:
    """A model's name without its hub organisation: EleutherAI/pythia-70m → pythia-70m."""
    return models.astype(str).str.split("/").str[-1]


def _study_b_models(paper: pd.DataFrame, corr: pd.DataFrame | None) -> list[str]:
    """Names of the paper's Study B models present in our correlation table."""
    names = _name(pd.Series(paper_series(paper, "final", "perplexity").index))
    return [m for m in names if corr is not None and (_name(corr["model"]) == m).any()]


def clock_rho(embeddings: pd.DataFrame | None, models: list[str]) -> float:
    """Mean over models of |Spearman ρ(step, perplexity)|: what the clock alone shows."""
    if embeddings is None:
        return np.nan
    rhos = [
        spearman_exact(run["step"], run["perplexity"])[0]
        for m, run in embeddings.groupby(_name(embeddings["model"]))
        if m in models
    ]
    return float(np.mean(np.abs(rhos))) if rhos else np.nan


def h1_verdict(pearson_p: np.ndarray, mean_abs_rho: float, clock: float) -> str:
    """Study B rule for one feature: significant in every model, and stronger than the clock."""
    sig = np.isfinite(pearson_p) & (pearson_p < ALPHA)
    if sig.all():
        return verdicts.REPRODUCED if mean_abs_rho > clock else verdicts.ARTEFACT
    return verdicts.NOT_REPRODUCED if not sig.any() else verdicts.INCONCLUSIVE


def study_b_rows(
    paper: pd.DataFrame, corr: pd.DataFrame | None, embeddings: pd.DataFrame | None
) -> list[dict]:
    """Study B: H1 features correlate with perplexity, more strongly than the spectral baselines."""
    claimed = paper_series(paper, "claims", "mean_abs_r_perplexity")
    spectral_top = paper_series(paper, "claims", "max_mean_abs_r_perplexity")["spectral"]
    models = _study_b_models(paper, corr)
    if len(models) < MIN_MODELS:
        note = "pythia_correlations.csv absent" if corr is None else f"{len(models)} of its models"
        rows = [
            _h1_row(label, claimed.get(f, np.nan), verdicts.NOT_EVALUATED, note=note)
            for f, label in H1_FEATURES.items()
        ]
        return rows + [
            _spectral_row(claimed.max() - spectral_top, verdicts.NOT_EVALUATED, note=note)
        ]
    sel = corr[_name(corr["model"]).isin(models)]
    abs_r = sel.assign(abs_r=sel["pearson_r"].abs()).groupby("feature")["abs_r"].mean()
    clock = clock_rho(embeddings, models)
    rows = []
    for feature, label in H1_FEATURES.items():
        cells = sel[sel["feature"] == feature]
        paper_r = claimed.get(feature, np.nan)
        if len(cells) < len(models):
            rows.append(_h1_row(label, paper_r, verdicts.NOT_EVALUATED, note="feature absent"))
            continue
        r, p = cells["pearson_r"].abs().to_numpy(float), cells["pearson_p"].to_numpy(float)
        rho = float(np.nanmean(cells["rho"].abs()))
        verdict = h1_verdict(p, rho, clock)
        note = (
            f"{int((p < ALPHA).sum())}/{len(models)} models p < {ALPHA:g}; mean |ρ| {rho:.3f} "
            f"vs clock {clock:.3f}"
        )
        ours, low, high = float(np.nanmean(r)), float(np.nanmin(r)), float(np.nanmax(r))
        rows.append(
            _h1_row(
                label, paper_r, verdict, ours=ours, ours_ci_low=low, ours_ci_high=high, note=note
            )
        )
    h1 = abs_r.reindex(list(H1_FEATURES)).max()
    spectral = abs_r[[f for f in abs_r.index if f in SPECTRAL]].max()
    gap = float(h1 - spectral)
    verdict = (
        verdicts.NOT_EVALUATED
        if not np.isfinite(gap)
        else verdicts.REPRODUCED
        if gap > 0
        else verdicts.NOT_REPRODUCED
    )
    note = f"best H1 {h1:.3f}, best spectral {spectral:.3f}"
    rows.append(_spectral_row(claimed.max() - spectral_top, verdict, ours=gap, note=note))
    return rows
