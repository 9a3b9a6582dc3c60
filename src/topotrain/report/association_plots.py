"""Figures of the associations with loss: Spearman ρ per feature × model (``correlations.csv``)
and the layer types' between-seed ρ (``layer_types_summary.csv``), each a heatmap on [−1, 1]
whose undefined cells say n/a and why. Every ``figure_*`` saves its files and returns the
Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.report.figure_kit import fig_title, footnote, plt, save_figure, say_why

UNDEFINED = "n/a"  # a cell whose ρ is undefined (NaN), on grey


def rho_heatmap(
    ax: plt.Axes, values: pd.DataFrame, marks: pd.DataFrame, fontsize: float, label: str
) -> None:
    """``values`` (NaN: undefined) coloured on [−1, 1], each cell its ρ to two decimals and its
    mark, an undefined one UNDEFINED on grey."""
    import seaborn as sns  # here, not at import: 1.3 s a job

    text = values.map(lambda v: "" if np.isnan(v) else f"{v:.2f}") + marks
    sns.heatmap(
        values,
        annot=text,
        fmt="",
        cmap="vlag",
        vmin=-1,
        vmax=1,
        ax=ax,
        annot_kws={"fontsize": fontsize},
        cbar_kws={"label": label},
    )
    ax.set_facecolor("0.9")
    ax.tick_params(axis="y", rotation=0)  # row names read across, never stacked vertically
    for i, j in zip(*np.nonzero(values.isna().to_numpy()), strict=True):
        ax.text(j + 0.5, i + 0.5, UNDEFINED, ha="center", va="center", fontsize=fontsize, c="0.4")


def _undefined_note(values: pd.DataFrame, why: str) -> str:
    """The footnote of a heatmap with undefined cells ('' without)."""
    n = int(values.isna().to_numpy().sum())
    return f"{UNDEFINED} (grey, {n} of {values.size} cells): ρ undefined — {why}" if n else ""


def figure_correlation_heatmap(corr: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Spearman ρ(feature, validation loss) per feature × model; * marks BH-significant cells
    (and the title names * only when a cell has one); an undefined ρ (e.g. a feature constant
    over training, such as the H0 count) is n/a, its reasons (the table's notes) under it."""
    mean = corr.groupby(["feature", "model"], sort=False)["rho"].mean().unstack("model")
    sig = corr.groupby(["feature", "model"], sort=False)["significant"].all().unstack("model")
    order = corr.drop_duplicates("model").sort_values("n_params")["model"].tolist()
    mean, sig = mean.reindex(columns=order), sig.reindex(columns=order)
    starred = sig.fillna(False).astype(bool) & mean.notna()
    fig, ax = plt.subplots(
        figsize=(1.3 * len(order) + 4, 0.4 * len(mean) + 2.2), layout="constrained"
    )
    if mean.empty or mean.isna().all().all():
        say_why(ax, "no correlation to draw: every ρ(feature, validation loss) is undefined")
        return save_figure(fig, png, pdf)
    rho_heatmap(ax, mean, starred.map(lambda s: "*" if s else ""), 9, "Spearman ρ with val loss")
    ax.set_xlabel("model (ordered by size)")
    ax.set_ylabel("feature")
    key = "* = significant" if starred.to_numpy().any() else "no cell significant"
    fig_title(
        fig, f"ρ(feature, validation loss) across checkpoints; {key} after Benjamini–Hochberg"
    )
    notes = corr.loc[corr["rho"].isna(), "note"] if "note" in corr else pd.Series(dtype=str)
    why = "; ".join(dict.fromkeys(notes.dropna().astype(str))) or "see correlations.csv's notes"
    if said := _undefined_note(mean, why):
        footnote(fig, said)
    return save_figure(fig, png, pdf)


def figure_layer_types(summary: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """ρ with validation loss of the summary's view (the between-seed contrast by default; a run
    view's mean over seeds): models and ``pooled`` × (split group, feature); with no ρ defined
    the panel says why."""
    part = summary[summary["target"] == "val_loss"].sort_values("n_params", kind="stable")
    part = part.assign(column=part["group"] + " · " + part["feature"])
    view = str(part["view"].iloc[0]) if "view" in part and len(part) else "seed_contrast"
    grid = part.pivot_table(
        index="model", columns="column", values="mean_rho", sort=False, dropna=False
    )
    grid = grid.reindex(index=part.drop_duplicates("model")["model"])
    width = max(6, 0.55 * grid.shape[1] + 3)
    fig, ax = plt.subplots(figsize=(width, 0.45 * len(grid) + 3), layout="constrained")
    fig_title(fig, f"{view} ρ(feature, validation loss) by layer type and depth")
    between = view.startswith("seed_")  # the between-seed views: one ρ per model
    why = "see layer_types.csv's notes" + (
        " (a between-seed view needs at least two seeds per model)" if between else ""
    )
    if grid.empty or grid.isna().all().all():
        cells = f"all {grid.size} cells undefined" if grid.size else "no row with validation loss"
        say_why(ax, f"no {view} ρ to draw: {cells}; {why}")
        return save_figure(fig, png, pdf)
    rho_heatmap(ax, grid, grid.map(lambda v: ""), 6, "mean ρ")
    ax.set_xticks(np.arange(grid.shape[1]) + 0.5, grid.columns, rotation=45, ha="right")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("layer group · feature")
    ax.set_ylabel("")
    if said := _undefined_note(grid, why):
        footnote(fig, said)
    return save_figure(fig, png, pdf)
