"""Tables as CSV + Markdown, and ``REPORT.md`` assembled from them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from topotrain.io import atomic_write_text, atomic_write_texts
from topotrain.report.header import report_header


def format_cell(value, digits: int = 4) -> str:
    """A table cell: floats to ``digits`` significant digits (scientific when tiny), NaN as '–'."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|")


def to_markdown(df: pd.DataFrame, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (no index)."""
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = [
        "| " + " | ".join(format_cell(v, digits) for v in row) + " |"
        for row in df.itertuples(index=False, name=None)
    ]
    return "\n".join([header, rule, *rows]) + "\n"


def write_table(df: pd.DataFrame, csv: str | Path, md: str | Path, title: str = "") -> None:
    """Write ``df`` as CSV and as a Markdown table (with an optional heading): both or neither."""
    heading = f"## {title}\n\n" if title else ""
    atomic_write_texts({csv: df.to_csv(index=False), md: heading + to_markdown(df)})


def models_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per model: architecture, parameters, final train and validation loss (seed means)."""
    final = df[df["step"] == df.groupby("model")["step"].transform("max")]
    out = final.groupby(["model", "n_params", "d_model", "n_layer", "n_head"], as_index=False).agg(
        seeds=("seed", "nunique"),
        final_train_loss=("train_loss", "mean"),
        final_val_loss=("val_loss", "mean"),
    )
    return out.sort_values("n_params").reset_index(drop=True)


def best_feature_findings(best: pd.DataFrame) -> list[str]:
    """One sentence per model: the feature that tracks loss best, and any feature tied with it."""
    lines = []
    for row in best.itertuples(index=False):
        has_tie = isinstance(row.tied_with, str) and row.tied_with
        tied = f" (tied with {row.tied_with})" if has_tie else ""
        lines.append(
            f"- **{row.model}** ({row.n_params:,} parameters): `{row.feature}`{tied}, "
            f"ρ = {row.rho:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]; best topological "
            f"`{row.best_topological}` ρ = {row.best_topological_rho:.3f}, best baseline "
            f"`{row.best_baseline}` ρ = {row.best_baseline_rho:.3f}; the clock `step` "
            f"ρ = {row.step_rho:.3f}, the scale `l2_norm_mean` ρ = {row.l2_norm_mean_rho:.3f}."
        )
    return lines


def prediction_findings(summary: pd.DataFrame) -> list[str]:
    """One sentence per fraction: MAE of loss-only vs combined, beside the same averaging without
    topology (mean_loss_only_last) when the table has it, the best method and the test."""
    lines = []
    for fraction, g in summary.groupby("fraction"):
        mae = g.set_index("method")["mae"]
        comb = g[g["method"] == "combined"].iloc[0]
        best = mae.idxmin()
        verdict = "improves on" if mae["combined"] < mae["loss_only"] else "does not improve on"
        note = comb["wilcoxon_note"] if isinstance(comb["wilcoxon_note"], str) else ""
        lines.append(
            f"- **{100 * fraction:.0f}% of training:** combined (mean of loss-only and "
            f"topology-only) {verdict} loss-only: MAE {mae['combined']:.4f} vs "
            f"{mae['loss_only']:.4f} nats/char ({comb['improvement_pct']:+.1f}%); Wilcoxon p = "
            f"{format_cell(comb['wilcoxon_p'])}{' — ' + note if note else ''}."
            f"{averaging_note(g)} Lowest MAE: {best} ({mae[best]:.4f}).{placebo_verdict(g)}"
        )
    return lines


def averaging_note(g: pd.DataFrame) -> str:
    """' The same averaging without topology (mean_loss_only_last): +46.5%; the gain is (not)
    beyond averaging.' or '' when the control is absent."""
    rows = g.set_index("method")
    if "mean_loss_only_last" not in rows.index:
        return ""
    control = float(rows.loc["mean_loss_only_last", "improvement_pct"])
    combined = float(rows.loc["combined", "improvement_pct"])
    beyond = "beyond" if combined > control else "not beyond"
    return (
        f" The same averaging without topology (`mean_loss_only_last`): {control:+.1f}%, so "
        f"the gain is {beyond} averaging."
    )


def placebo_verdict(g: pd.DataFrame) -> str:
    """' Beats loss-only, its averaging control and both placebos: topology_only no, combined yes
    (p = …).' or ''."""
    if "beats_placebos" not in g:
        return ""
    rows = g.set_index("method")
    flags = rows["beats_placebos"].dropna()
    verdicts = []
    for m, v in flags.items():
        p = rows.loc[m, "rival_p"] if "rival_p" in rows else float("nan")
        test = (
            f" (sign-flip p = {format_cell(p)} against {rows.loc[m, 'rival']})"
            if pd.notna(p)
            else ""
        )
        verdicts.append(f"{m} {'yes' if str(v) == 'True' else 'no'}{test}")
    if not verdicts:
        return ""
    return f" Beats loss-only, its averaging control and both placebos: {', '.join(verdicts)}."


def findings(best_csv: str | Path, prediction_csv: str | Path) -> str:
    """The answers a reader looks for first, computed from the tables."""
    best = pd.read_csv(best_csv)
    summary = pd.read_csv(prediction_csv)
    return "\n".join(
        [
            "## Findings\n",
            "**Which feature tracks validation loss best, per model (raw Spearman ρ over "
            "checkpoints, 95% iid-bootstrap CI: the paper's method, not valid for trending series; "
            "whether a feature says more than the clock is in the associations section):**\n",
        ]
        + best_feature_findings(best)
        + ["", "**Does topology improve the final-loss prediction?**\n"]
        + prediction_findings(summary)
        + [""]
    )


class Body(str):
    """A section's Markdown itself, where assemble_report otherwise reads a table file."""


def assemble_report(
    sections: list[tuple[str, str, str | Path]],
    out: str | Path,
    preface: str = "",
    lead: int = 0,
    appendix: Sequence[str | Path] = (),
    top: str = "",
    provenance: Mapping[str, str] | None = None,
) -> None:
    """REPORT.md: the header (``header.report_header``: the title, ``provenance`` — version, config
    hash, engine — and the results folder in use, the one REPORT.md is written to), ``top`` (the
    bottom line), the first ``lead`` sections, an optional preface (findings), then the other
    sections; each section is (heading, text, Markdown table file or a Body); then the
    ``appendix`` files as they are (each run's section)."""
    parts = report_header(Path(out).parent.as_posix(), provenance)
    if top:
        parts.append(top)
    for i, (heading, text, table) in enumerate(sections):
        if i == lead and preface:
            parts.append(preface)
        body = table if isinstance(table, Body) else Path(table).read_text()
        if body.startswith("## "):  # drop the table's own heading; the section has one
            body = body.split("\n", 2)[2]
        parts.append(f"## {heading}\n\n{text.strip()}\n\n{body}")
    if preface and lead >= len(sections):
        parts.append(preface)
    parts += [Path(section).read_text() for section in appendix]
    atomic_write_text(out, "\n".join(parts))


# table name -> (section heading, what the reader learns from it), in reading order
SECTIONS = {
    "control": (
        "Positive control: grokking",
        "Before the verdicts on the GPT study, the same tests where an effect is known to exist: "
        "a one-layer transformer learning a + b mod p (config `control:`), several seeds that "
        "generalise (grok) at different steps. Per seed, test accuracy, the embedding's H1 total "
        "persistence (its p residue rows as a point cloud, scaled by their mean norm), the "
        "weight L2 norm and the Fourier measure (the share of the embedding's energy in its top "
        "5 frequencies over the residues), each scaled to [0, 1], with the grokking step (first "
        "checkpoint with test accuracy ≥ 0.95) dashed. A feature's onset is the first checkpoint "
        "at which it has made half its total change (a rule that looks ahead: the last value is "
        "known only at the end); lead = grokking step − onset. The contrasts are the study's "
        "between-seed contrast with test loss (exact permutation of seed labels), plain and "
        "partial on the weight norm, on the Fourier measure and, for NP, on its layers' "
        "normalised weight variance.",
    ),
    "replication": (
        "Replication of the paper's claims",
        "One row per claim of the paper (Tables 1–8): its value, ours (mean over seeds with an "
        "across-seed interval where the rule uses one) and a verdict computed by the rule whose id "
        "is in the `rule` column (the rules are listed once below the table) — reproduced (below "
        "Δ when the effect is also shown small), not reproduced, inconclusive (including: cannot "
        "be measured, or neither rejected nor shown small), artefact (an effect beyond the clock "
        "and the scale shown below Δ, a trend the clock or the L2 norm shows as strongly, a gain "
        "a control or placebo matches) or not evaluated (model, fit or input table absent). The "
        "TP0, NP and TP1 rows "
        "use the pre-registered primary family (`tables/primary.csv`); every other p-value in "
        "this report is exploratory.",
    ),
    "models": (
        "Models",
        "The model family: architecture, parameter count (tied output head counted once) and the "
        "final training and validation cross-entropy in nats per character.",
    ),
    "best_feature": (
        "Which feature tracks loss best",
        "For each model, the feature with the largest |Spearman ρ| with validation loss across its "
        "checkpoints, with its 95% bootstrap CI, beside the ρ of the clock (`step_rho`) and of the "
        "scale (`l2_norm_mean_rho`). Raw ρ and this CI are the paper's method: its CI resamples "
        "checkpoints and its p-values treat them as independent draws, which consecutive "
        "checkpoints of one run are not, so neither is valid for trending series; the time-aware "
        "CIs and p-values are in the associations section. Read across rows to see how this "
        "changes with size.",
    ),
    "correlations": (
        "Correlations with validation loss",
        "Spearman ρ between each feature and validation loss over a model's checkpoints, the 95% "
        "bootstrap CI (resampling checkpoints), and p-values adjusted over the whole feature × "
        "model grid by Bonferroni and by Benjamini–Hochberg (`significant` = BH-adjusted p < "
        "0.05). `step`, `lr`, `l2_norm_mean` and `grad_norm` are non-topological baselines, "
        "treated alike. This is the paper's method: its CI resamples checkpoints and its p-values "
        "treat them as independent draws, which consecutive checkpoints of one run are not, so "
        "neither is valid for trending series; the time-aware CIs and p-values are in the "
        "associations section.",
    ),
    "associations_summary": (
        "Beyond the clock: between-seed contrasts (exploratory)",
        "Loss and every feature trend with training time, so raw ρ is near ±1 for any monotone "
        "series, `step` included. The view that removes the clock exactly is `seed_contrast`: each "
        "feature and loss centred on its across-seed mean at every checkpoint, ρ of what is left "
        "(how this run differs from its siblings at the same step), with an exact permutation p "
        "over the model's seed labels (smallest p 1/k!: 1/6 with 3 seeds) and pooled over models "
        "(1/7 776 with 5 models × 3 seeds); `seed_contrast_l2` partials out the L2 norm's "
        "deviations too. A feature beats the clock (scale) when its seed contrast (partial on L2) "
        "has p < 0.05 with the raw ρ's sign. Below, per model and pooled: those flags, the exact "
        "p's and ρ of every view averaged over seeds. `associations.csv` also keeps the per-run "
        "detrended and partial views with block-bootstrap CIs and circular-shift p's; the "
        "calibration suite shows those exceed their nominal false-positive rate on decelerating "
        "training curves, so no verdict or flag uses them.",
    ),
    "prediction": (
        "Predicting the final loss from early training",
        "MAE over models of the predicted final validation loss using only checkpoints up to each "
        "fraction of training; `improvement_pct` compares each method with loss-only; Wilcoxon "
        "tests compare each method's per-run errors with loss-only's (see the notes for small n). "
        "`spearman_rho` ranks predicted against actual final loss across model sizes (means over "
        "seeds) with the exact permutation p; `beats_placebos` is yes only where topology-only or "
        "combined has a lower MAE than loss-only, than its averaging control (`last_loss` for "
        "topology-only, `mean_loss_only_last` — the same averaging with no topology — for "
        "combined) and than both placebos, the same predictor paced by a clock or by the mean "
        "weight L2 norm instead of NP; `rival_p` is the exact sign-flip p against the strongest of "
        "them, paired by model (a model's seeds share one fit; 5 models: p ≥ 1/32). "
        "The methods are described below the per-run table.",
    ),
    "prediction_runs": (
        "Predictions per run",
        "Each run's prediction and absolute error. The methods, using only checkpoints up to "
        "t0 = f·T:\n\n"
        "- **loss-only**: fit L(t) = a·t^(−b) + c (a > 0, 0 < b ≤ 10, c ≥ 0) to the validation "
        "losses at 0 < t ≤ t0 and extrapolate to T; if the fit fails, the last observed loss "
        "(`fallback`).\n"
        "- **topology-only**: the NP rate is modelled as r(t) = r(t0)·(t/t0)^(−γ−1), γ ∈ [−1, 4], "
        "fitted to NP over the window by variable projection; the NP change still to come is "
        "ΔN = r(t0)·t0·(1 − (t0/T)^γ)/γ; the loss-per-NP sensitivity k is the least-squares slope "
        "of validation loss on NP over t0/2 ≤ t ≤ t0; prediction L(t0) + k·ΔN, clipped at 0.\n"
        "- **combined**: the mean of loss-only and topology-only.\n"
        "- **learned**: standardised ridge regression (α = 1) on seven cutoff features (loss at "
        "t0, the loss-only prediction, NP at t0 and its slope, H0 total at t0 and its slope, "
        "ln N), scored by leave-one-model-out cross-validation; **learned_forward**: the same, "
        "trained only on smaller models (none for the two smallest).\n"
        "- **placebos** `topology_only[step]`, `topology_only[l2_norm_mean]` (and `combined[…]`): "
        "topology-only with NP replaced by a clock ln(1 + t/s) (s the first checkpoint step) or by "
        "the L2 norm, each mapped affinely onto NP's mean and SD over the window: the same form "
        "and amount of information as NP.\n"
        "- **baselines**: `last_loss`, the last observed validation loss; `mean_loss_only_last`, "
        "its mean with loss-only.\n"
        "- **learned[+vectors]**: learned with the vectorised diagrams' summaries at t0 added "
        "(landscape L2, image mass, Betti AUC of H0 and H1: six columns); its placebos add six "
        "columns of the loss curve's own shape (`learned[+step]`: losses at earlier fractions, "
        "loss slopes, the log-log slope) or of the scale (`learned[+scale]`: L2 norm and gradient "
        "norm, values and slopes) instead; `vectors_help` is yes only where it beats plain learned "
        "and both.",
    ),
    "scaling": (
        "Scaling with model size",
        "Power-law fits f(N) = a·N^b + c of final-checkpoint values against parameter count N and "
        "the log-log line, each with R², adjusted R² (k = 2 for a, b; k = 1 for the slope) and a "
        "95% interval on the exponent (F-profile for b, ±inf where the data do not bound it; t for "
        "the slope). Spearman ρ with N has its exact permutation p beside the large-sample one "
        "(with five sizes |ρ| = 1 gives p = 0.017 and ρ = 0.9 gives 0.083). `h0_mean_bar` is H0 "
        "total per finite bar, since the bar count is fixed by each architecture. Fits that did "
        "not converge say so.",
    ),
    "phases": (
        "Phase transitions",
        "The step (and fraction of training) of the largest change in mean NP between consecutive "
        "checkpoints, the first later checkpoint where the change falls below the configured "
        "fraction of that peak (diminishing returns, `diminishing_step`: a hindsight rule), the "
        "step at which the TopologyCallback's causal rule fires on the same series (`causal_step`: "
        "the change below that fraction of the running peak for 2 intervals in a row, what a live "
        "run reports), and changepoints from ruptures as a second opinion.",
    ),
    "layer_types_summary": (
        "Where the signal lives: layer type and depth",
        "The association of NP and the H0/H1 totals with loss, computed on subsets of each "
        "checkpoint's matrices: by type (attention: c_attn and c_proj of each block's attention; "
        "MLP: c_fc and c_proj) and by depth (one block's four matrices), each aggregated as the "
        "feature table aggregates all layers. Per model (and pooled), group, feature and target: "
        "the between-seed contrast ρ (`seed_contrast`, exact seed-permutation p), whether p < 0.05 "
        "and whether it beats the clock; beside them the same view's ρ for `step` (empty: every "
        "seed shares it) and for the subset's own `l2_norm_mean`. Every view per run, baselines "
        "included: `tables/layer_types.csv`; figure `layer_types`. Exploratory.",
    ),
    "stopping_summary": (
        "Causal stopping rules",
        "What each stopping rule would have saved and cost, as means over every run and seed "
        "(per-run rows: `tables/stopping.csv`; figure: `figures/stopping.png`). Each rule sees "
        "only the checkpoints up to its decision: `topology[f]` stops once |Δf| stayed below the "
        "configured fraction of its running peak for the configured number of intervals; "
        "`plateau[x,p]` once the validation loss improved by less than x (relative) in each of p "
        "intervals; `fraction[q]` at q of the run. compute saved = 1 − stop / final step; "
        "penalty = validation loss at the stop − at the end; pareto_rank 1 = no other rule saves "
        "more without losing more.",
    ),
    "velocity_summary": (
        "Topological velocity",
        "Does the distance between consecutive checkpoints' diagrams track how far the loss moved? "
        "Per model and feature, over seeds: the mean Spearman ρ of the step distance (W1 summed, "
        "bottleneck maxed over layers) with |Δ validation loss| between the same checkpoints, the "
        "seeds with p < 0.05 (circular-shift p: |Δ loss| rotated against the distance by every "
        "shift, so consecutive intervals are not taken as independent; with n intervals p ≥ 1/n), "
        "and the seeds in which it beats the clock (|ρ| above that of the step itself). "
        "`l2_norm_step` is |Δ mean L2 norm|, the weights' scale moving. Per run: "
        "`tables/velocity.csv`. Exploratory: this `beats_clock` only compares |ρ| with the "
        "step's, is not calibrated and feeds no verdict.",
    ),
    "pythia_weights": (
        "Pythia: weight topology over training",
        "Neural persistence (mean and std over the attention and MLP linear maps) and H0/H1 total "
        "persistence of the weight rows at each published revision.",
    ),
    "pythia_kinds": (
        "Pythia: topological vs spectral embedding features",
        "Across the Pythia models, the best feature of each kind by mean |Spearman ρ| with "
        "perplexity, the mean over the kind's features, and how many are significant (BH) in "
        "every model.",
    ),
    "pythia_comparison": (
        "Pythia: every embedding feature",
        "Mean and minimum |ρ| with perplexity across models, "
        "and whether significant in all of them.",
    ),
    "pythia_correlations": (
        "Pythia: correlations with perplexity per model",
        "Spearman ρ (95% bootstrap CI over revisions) and Pearson r of each embedding feature with "
        "perplexity, per model; p_bh adjusted over the whole table.",
    ),
    "correlations_across_seeds": (
        "Across seeds",
        "Mean ρ over seeds with a 95% interval on Fisher's z (artanh ρ) mapped back to ρ (needs at "
        "least two seeds per model); n_same_sign and n_significant count the seeds that agree with "
        "the mean in sign, and in sign and significance (BH).",
    ),
}

# The report's reading order, and the part of the study each section belongs to (the workflow
# asks for a section only when its part is on): control, spine, pythia_weights, pythia_embeddings.
ORDER = (
    ("control", "control"),
    ("replication", "spine"),
    ("models", "spine"),
    ("best_feature", "spine"),
    ("correlations", "spine"),
    ("associations_summary", "spine"),
    ("prediction", "spine"),
    ("prediction_runs", "spine"),
    ("layer_types_summary", "spine"),
    ("scaling", "spine"),
    ("phases", "spine"),
    ("stopping_summary", "spine"),
    ("velocity_summary", "spine"),
    ("correlations_across_seeds", "spine"),
    ("pythia_weights", "pythia_weights"),
    ("pythia_kinds", "pythia_embeddings"),
    ("pythia_comparison", "pythia_embeddings"),
    ("pythia_correlations", "pythia_embeddings"),
)
