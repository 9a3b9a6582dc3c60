"""Tables as CSV + Markdown, and ``REPORT.md`` assembled from them."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from topotrain.io import atomic_write_text, atomic_write_texts


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
    """One row per model: architecture, parameters, final train and validation loss (mean over seeds)."""
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
        tied = (
            f" (tied with {row.tied_with})"
            if isinstance(row.tied_with, str) and row.tied_with
            else ""
        )
        lines.append(
            f"- **{row.model}** ({row.n_params:,} parameters): `{row.feature}`{tied}, "
            f"ρ = {row.rho:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]; best topological "
            f"`{row.best_topological}` ρ = {row.best_topological_rho:.3f}, best baseline "
            f"`{row.best_baseline}` ρ = {row.best_baseline_rho:.3f}."
        )
    return lines


def prediction_findings(summary: pd.DataFrame) -> list[str]:
    """One sentence per fraction: MAE of loss-only vs combined (and the best method), with the test."""
    lines = []
    for fraction, g in summary.groupby("fraction"):
        mae = g.set_index("method")["mae"]
        comb = g[g["method"] == "combined"].iloc[0]
        best = mae.idxmin()
        verdict = "improves on" if mae["combined"] < mae["loss_only"] else "does not improve on"
        lines.append(
            f"- **{100 * fraction:.0f}% of training:** combined (topology + loss) {verdict} loss-only: "
            f"MAE {mae['combined']:.4f} vs {mae['loss_only']:.4f} nats/char "
            f"({comb['improvement_pct']:+.1f}%); Wilcoxon p = {format_cell(comb['wilcoxon_p'])}"
            f"{' — ' + comb['wilcoxon_note'] if isinstance(comb['wilcoxon_note'], str) else ''}. "
            f"Lowest MAE: {best} ({mae[best]:.4f})."
        )
    return lines


def findings(best_csv: str | Path, prediction_csv: str | Path) -> str:
    """The answers a reader looks for first, computed from the tables."""
    best = pd.read_csv(best_csv)
    summary = pd.read_csv(prediction_csv)
    return "\n".join(
        [
            "## Findings\n",
            "**Which feature tracks validation loss best, per model (Spearman ρ, 95% CI):**\n",
        ]
        + best_feature_findings(best)
        + ["", "**Does topology improve the final-loss prediction?**\n"]
        + prediction_findings(summary)
        + [""]
    )


def assemble_report(
    sections: list[tuple[str, str, str | Path]], out: str | Path, preface: str = ""
) -> None:
    """REPORT.md: a title, an optional preface (findings), then one section per (heading, text, table)."""
    parts = [
        "# topotrain — weight-space study report\n",
        "Every number below is produced by the workflow from `results/features/weights.parquet`; "
        "each table also exists as CSV under `results/tables/`, figures under `results/figures/`.\n",
    ]
    if preface:
        parts.append(preface)
    for heading, text, table in sections:
        body = Path(table).read_text()
        if body.startswith("## "):  # drop the table's own heading; the section has one
            body = body.split("\n", 2)[2]
        parts.append(f"## {heading}\n\n{text.strip()}\n\n{body}")
    atomic_write_text(out, "\n".join(parts))


# table name -> (section heading, what the reader learns from it), in reading order
SECTIONS = {
    "models": (
        "Models",
        "The model family: architecture, parameter count (tied output head counted once) and the "
        "final training and validation cross-entropy in nats per character.",
    ),
    "best_feature": (
        "Which feature tracks loss best",
        "For each model, the feature with the largest |Spearman ρ| with validation loss across its "
        "checkpoints, with its 95% bootstrap CI. Read across rows to see how this changes with size.",
    ),
    "correlations": (
        "Correlations with validation loss",
        "Spearman ρ between each feature and validation loss over a model's checkpoints, the 95% "
        "bootstrap CI (resampling checkpoints), and p-values adjusted over the whole feature × model "
        "grid by Bonferroni and by Benjamini–Hochberg (`significant` = BH-adjusted p < 0.05). "
        "`grad_norm` and `l2_norm_mean` are non-topological baselines.",
    ),
    "prediction": (
        "Predicting the final loss from early training",
        "MAE over models of the predicted final validation loss using only checkpoints up to each "
        "fraction of training; `improvement_pct` compares combined with loss-only; Wilcoxon tests "
        "compare each method's per-run errors with loss-only's (see the notes for small n). "
        "The methods are described below the per-run table.",
    ),
    "prediction_runs": (
        "Predictions per run",
        "Each run's prediction and absolute error. The methods, using only checkpoints up to "
        "t0 = f·T:\n\n"
        "- **loss-only**: fit L(t) = a·t^(−b) + c (a > 0, 0 < b ≤ 10, c ≥ 0) to the validation losses at "
        "0 < t ≤ t0 and extrapolate to T; if the fit fails, the last observed loss (`fallback`).\n"
        "- **topology-only**: the NP rate is modelled as r(t) = r(t0)·(t/t0)^(−γ−1), γ ∈ [−1, 4], fitted "
        "to NP over the window by variable projection; the NP change still to come is "
        "ΔN = r(t0)·t0·(1 − (t0/T)^γ)/γ; the loss-per-NP sensitivity k is the least-squares slope "
        "of validation loss on NP over t0/2 ≤ t ≤ t0; prediction L(t0) + k·ΔN, clipped at 0.\n"
        "- **combined**: the mean of loss-only and topology-only.\n"
        "- **learned**: standardised ridge regression (α = 1) on seven cutoff features (loss at t0, "
        "the loss-only prediction, NP at t0 and its slope, H0 total at t0 and its slope, "
        "ln N), scored by leave-one-model-out cross-validation.",
    ),
    "scaling": (
        "Scaling with model size",
        "Power-law fits f(N) = a·N^b + c of final-checkpoint values against parameter count N, with "
        "R², the log-log slope and Spearman ρ with N. Fits that did not converge say so.",
    ),
    "phases": (
        "Phase transitions",
        "The step (and fraction of training) of the largest change in mean NP between consecutive "
        "checkpoints, the first later checkpoint where the change falls below the configured fraction "
        "of that peak (diminishing returns), and changepoints from ruptures as a second opinion.",
    ),
    "pythia_weights": (
        "Pythia: weight topology over training",
        "Neural persistence (mean and std over the attention and MLP linear maps) and H0/H1 total "
        "persistence of the weight rows at each published revision.",
    ),
    "pythia_kinds": (
        "Pythia: topological vs spectral embedding features",
        "Across the Pythia models, the best feature of each kind by mean |Spearman ρ| with "
        "perplexity, the mean over the kind's features, and how many are significant (BH) in every model.",
    ),
    "pythia_comparison": (
        "Pythia: every embedding feature",
        "Mean and minimum |ρ| with perplexity across models, and whether significant in all of them.",
    ),
    "pythia_correlations": (
        "Pythia: correlations with perplexity per model",
        "Spearman ρ (95% bootstrap CI over revisions) and Pearson r of each embedding feature with "
        "perplexity, per model; p_bh adjusted over the whole table.",
    ),
    "correlations_across_seeds": (
        "Across seeds",
        "Mean ρ over seeds with a t-interval across seeds (needs at least two seeds per model).",
    ),
}
