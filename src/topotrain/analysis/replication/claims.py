"""Replication verdicts: each claim of Study A beside our number and the rule that judges it.

Ours comes from the workflow's tables; the shared words and the paper's values are in
``verdicts``, Table 8 and Study B in ``pythia_claims``. One row per claim
(REPLICATION_COLUMNS); the verdict is one of VERDICTS, computed by the rule printed in the ``rule``
column (RULES). Per-model claims use the paper's model names: a model we did not train gives
``not evaluated``, never an error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.primary import primary_family
from topotrain.analysis.inference.stats import ALPHA, CLOCK_AND_SCALE, seed_interval, spearman_exact
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    EXPLAINED_BY_CLOCK,
    EXPLAINED_BY_NORM,
    INCONCLUSIVE,
    MIN_MODELS,
    NOT_EVALUATED,
    NOT_REPRODUCED,
    REPLICATION_COLUMNS,
    REPRODUCED,
    UNDECIDED,
    VERDICTS,
    make_row,
    paper_series,
    rank_rho,
    read_paper_values,
)
from topotrain.analysis.replication.primary_notes import (  # noqa: F401 (bound_text, question_note: re-exported)
    bound_text,
    claim_state,
    primary_row,
    question_note,
)
from topotrain.analysis.replication.pythia_claims import PYTHIA_RULES, pythia_rows, study_b_rows
from topotrain.analysis.replication.rules import A_RULES, T2_P
from topotrain.analysis.replication.sizes import (
    baseline_phases,
    exponent_verdict,
    peak_row,
    phases_row,
    prediction_rows,
    scaling_rows,
)
from topotrain.config import DEFAULTS
from topotrain.topology import registry

__all__ = [
    "ARTEFACT",
    "INCONCLUSIVE",
    "NOT_EVALUATED",
    "NOT_REPRODUCED",
    "REPLICATION_COLUMNS",
    "REPRODUCED",
    "RULES",
    "VERDICTS",
    "exponent_verdict",
    "read_paper_values",
    "replication_table",
]

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults
TP0, NP, TP1 = (registry.claimed(table) for table in ("2", "3", "4"))  # the tables' features

RAW_COLUMNS = ["model", "seed", "n_params", "rho", "p", "p_bh"]
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
    """Per (model, seed): raw ρ, p and p_bh of ``feature`` with ``target``."""
    sel = (assoc["feature"] == feature) & (assoc["target"] == target) & (assoc["view"] == "raw")
    return assoc.loc[sel, RAW_COLUMNS]


def seed_evidence(cells: pd.DataFrame, sign: float) -> dict:
    """Seeds (n), those whose raw ρ has ``sign`` (agree), the largest raw p (p_max), and
    seed_interval of ρ (rho_mean, rho_low, rho_high)."""
    rho = cells["rho"].to_numpy(float)
    return {
        "n": len(cells),
        "agree": int((np.sign(rho) == sign).sum()),
        "p_max": float(cells["p"].max()) if len(cells) else np.nan,
        **seed_interval(rho),
    }


def sign_verdict(ev: dict, decision: str | None) -> str:
    """T2 rule on one model's seed_evidence and the claim's primary-family decision."""
    if ev["n"] == 0:
        return NOT_EVALUATED
    if ev["agree"] == ev["n"]:
        return UNDECIDED if decision is None else decision
    return NOT_REPRODUCED if ev["agree"] == 0 else INCONCLUSIVE


def _evidence(assoc: pd.DataFrame | None, feature: str, ref: pd.Series) -> dict[str, dict]:
    """seed_evidence per paper model (the paper's sign), in the paper's order."""
    cells = raw_cells(assoc, feature) if assoc is not None else pd.DataFrame(columns=RAW_COLUMNS)
    return {m: seed_evidence(cells[cells["model"] == m], np.sign(r)) for m, r in ref.items()}


def tp0_rows(paper: pd.DataFrame, assoc: pd.DataFrame | None, primary=None) -> list[dict]:
    """T2: ρ(TP0, train loss) per model, and its monotone strengthening with size."""
    ref = paper_series(paper, "2", "rho_h0_total_train_loss")
    evidence = _evidence(assoc, TP0, ref)
    decision, why = claim_state(primary, TP0)
    rows = []
    for model, ev in evidence.items():
        note = (
            f"{ev['agree']}/{ev['n']} seeds with the paper's sign; {why}"
            if ev["n"]
            else "model not trained"
        )
        rows.append(
            _row(
                f"ρ(TP0, train loss) {model}",
                "2",
                "t2",
                ref[model],
                sign_verdict(ev, decision),
                ours=ev["rho_mean"],
                ours_ci_low=ev["rho_low"],
                ours_ci_high=ev["rho_high"],
                note=note,
            )
        )
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
    else:  # the claim's one decision: an explanation any model's row carries, else undecided
        explained = [v for v in (EXPLAINED_BY_CLOCK, EXPLAINED_BY_NORM) if v in verdicts]
        verdict = explained[0] if explained else UNDECIDED
    note = f"largest of {sum(ev['n'] for ev in evidence.values())} runs' raw p"
    return _row(claim, "2", "t2_p", paper_p, verdict, ours=p_max, note=note)


def _disjoint(a: dict, b: dict) -> bool:
    """Whether two across-seed intervals are defined and do not overlap."""
    ends = [a["rho_low"], a["rho_high"], b["rho_low"], b["rho_high"]]
    return bool(np.all(np.isfinite(ends)) and (ends[1] < ends[2] or ends[3] < ends[0]))


def monotone_verdict(evidence: list[dict]) -> str:
    """T2 strengthening rule on seed_evidence ordered by size (before the baselines)."""
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
    rows = [
        {"model": m, "n_params": sizes[m], "ev": ev}
        for m, ev in evidence.items()
        if m in sizes and np.isfinite(ev["rho_mean"])
    ]
    return pd.DataFrame(rows, columns=["model", "n_params", "ev"]).sort_values("n_params")


def baseline_trends(assoc: pd.DataFrame | None, models: pd.Index) -> dict[str, float]:
    """Spearman ρ vs N of the mean |raw ρ(baseline, train loss)| for step and l2_norm_mean over
    ``models`` (NaN when a baseline is absent or constant)."""
    out = {}
    for base in CLOCK_AND_SCALE:
        cells = raw_cells(assoc, base) if assoc is not None else pd.DataFrame(columns=RAW_COLUMNS)
        cells = cells[cells["model"].isin(models)]
        strength = cells.assign(a=cells["rho"].abs()).groupby("model")[["n_params", "a"]].mean()
        ok = strength.dropna()
        out[base] = spearman_exact(ok["n_params"], ok["a"])[0] if len(ok) >= MIN_MODELS else np.nan
    return out


def _baseline_note(trends: dict[str, float]) -> str:
    return "; ".join(f"{b}'s |ρ| trend ρ = {v:.3g}" for b, v in trends.items())


def monotone_row(ref: pd.Series, evidence: dict[str, dict], assoc: pd.DataFrame | None) -> dict:
    """T2: |ρ(TP0, train loss)| strengthens with size, more than the clock's and the scale's."""
    claim = "|ρ(TP0, train loss)| strengthens with size"
    sized = _by_size(evidence, assoc)
    paper = rank_rho(ref.abs())
    if len(sized) < MIN_MODELS:
        note = f"{len(sized)} of the paper's models with a defined ρ"
        return _row(claim, "2", "t2_monotone", paper, NOT_EVALUATED, note=note)
    strength = [abs(ev["rho_mean"]) for ev in sized["ev"]]
    rho = spearman_exact(sized["n_params"], strength)[0]
    verdict = monotone_verdict(list(sized["ev"]))
    trends = baseline_trends(assoc, sized["model"])
    if verdict == REPRODUCED and any(v >= rho for v in trends.values() if np.isfinite(v)):
        verdict = ARTEFACT
    note = f"{len(sized)} models; {_baseline_note(trends)}"
    return _row(claim, "2", "t2_monotone", paper, verdict, ours=rho, note=note)


def np_reversal_row(paper: pd.DataFrame, primary: pd.DataFrame | None = None) -> dict:
    """T3: NP's ρ with training loss is negative for the smallest model, positive for the
    largest. Ours: the claimed models whose between-seed effect has the paper's sign in both
    views (the primary family's signs_held); the verdict is the primary family's, which needs
    every such sign (not the raw ρ of each seed, which the clock drives)."""
    ref = paper_series(paper, "3", "rho_np_mean_train_loss")
    claimed = ref[paper_series(paper, "3", "p") < ALPHA]
    claim = "ρ(NP, train loss) sign reversal with size"
    note = "claimed: " + ", ".join(f"{m} {'+' if r > 0 else '−'}" for m, r in claimed.items())
    row = primary_row(primary, NP)
    present = set(str(row.get("models", "")).split(";")) if row is not None else set()
    missing = [m for m in claimed.index if m not in present]
    if missing:
        why = "not in the feature table: " + ", ".join(missing)
        return _row(claim, "3", "t3", float(len(claimed)), NOT_EVALUATED, note=f"{note}; {why}")
    decision, why = claim_state(primary, NP)
    held = str(row.get("signs_held", "")).partition("/")[0]
    ours = float(held) if decision is not None and held.isdigit() else np.nan
    verdict = UNDECIDED if decision is None else decision
    return _row(claim, "3", "t3", float(len(claimed)), verdict, ours=ours, note=f"{note}; {why}")


def _quiet_p(assoc: pd.DataFrame | None, model: str) -> float:
    """The seed_contrast exact p of ρ(TP1, train loss) at ``model`` (NaN if absent)."""
    if assoc is None:
        return np.nan
    sel = assoc[
        (assoc["feature"] == TP1)
        & (assoc["target"] == "train_loss")
        & (assoc["view"] == "seed_contrast")
        & (assoc["model"] == model)
    ]
    return float(sel["p"].iloc[0]) if len(sel) else np.nan


def tp1_weakening_row(paper: pd.DataFrame, assoc: pd.DataFrame | None) -> dict:
    """T4: |ρ(TP1, train loss)| weakens with size and is not significant at the largest model."""
    ref = paper_series(paper, "4", "rho_h1_total_train_loss")
    quiet = ref[paper_series(paper, "4", "p") >= ALPHA].index
    evidence = _evidence(assoc, TP1, ref)
    sized = _by_size(evidence, assoc)
    claim = "|ρ(TP1, train loss)| weakens with size, n.s. at " + ", ".join(quiet)
    paper_rho = rank_rho(ref.abs())
    if len(sized) < MIN_MODELS or not set(quiet) <= set(sized["model"]):
        note = f"{len(sized)} of the paper's models with a defined ρ"
        return _row(claim, "4", "t4", paper_rho, NOT_EVALUATED, note=note)
    rho, p = spearman_exact(sized["n_params"], [abs(ev["rho_mean"]) for ev in sized["ev"]])
    quiet_p = {m: _quiet_p(assoc, m) for m in quiet}
    loud = any(q < ALPHA for q in quiet_p.values())
    trends = baseline_trends(assoc, sized["model"])
    if rho >= 0 or loud:
        verdict = NOT_REPRODUCED
    elif p >= ALPHA:
        verdict = INCONCLUSIVE
    else:
        as_strong = any(v <= rho for v in trends.values() if np.isfinite(v))
        verdict = ARTEFACT if as_strong else REPRODUCED
    quiet_note = ", ".join(f"{m} seed_contrast p = {q:.3g}" for m, q in quiet_p.items())
    note = f"{len(sized)} models; exact p = {p:.3g}; {quiet_note}; {_baseline_note(trends)}"
    return _row(claim, "4", "t4", paper_rho, verdict, ours=rho, note=note)


def replication_table(
    paper: pd.DataFrame,
    tables: dict,
    warmup: int | None = None,
    threshold: float = _ANALYSIS["phase_threshold"],
    sesoi: float = _ANALYSIS["sesoi"],
    question: str = _ANALYSIS["bottom_line_question"],
) -> pd.DataFrame:
    """One row per claim (REPLICATION_COLUMNS) from the paper values and our tables.

    ``tables`` maps models, associations, prediction, phases, scaling, features (the feature
    table, for the primary family and the L2 norm's phases), primary (else computed from
    features), pythia_weights, pythia_correlations and pythia_embeddings to their DataFrames; a
    missing key or None makes that claim's rows ``not evaluated`` (or, for the primary family,
    ``cannot be measured``). ``warmup`` is the learning-rate warm-up in steps (T6's peak) and
    ``threshold`` the phases' diminishing-returns threshold (the L2 norm's phases for T6);
    ``sesoi`` is Δ, the smallest effect of interest of the primary family's level view, and
    ``question`` the bottom line's (``analysis.bottom_line_question``), both for a primary family
    computed here.
    """
    assoc, features = tables.get("associations"), tables.get("features")
    primary = tables.get("primary")
    if primary is None and features is not None:
        primary = primary_family(features, paper, sesoi=sesoi, question=question)
    l2 = baseline_phases(features, threshold)
    rows = [
        *final_loss_rows(paper, tables.get("models")),
        *tp0_rows(paper, assoc, primary),
        np_reversal_row(paper, primary),
        tp1_weakening_row(paper, assoc),
        *prediction_rows(paper, tables.get("prediction")),
        peak_row(paper, tables.get("phases"), l2, warmup),
        phases_row(paper, tables.get("phases"), l2),
        *scaling_rows(paper, tables.get("scaling")),
        *pythia_rows(paper, tables.get("pythia_weights")),
        *study_b_rows(paper, tables.get("pythia_correlations"), tables.get("pythia_embeddings")),
    ]
    return pd.DataFrame(rows, columns=REPLICATION_COLUMNS)
