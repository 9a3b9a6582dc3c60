"""Figures of the weight-space study (seaborn/matplotlib, written as PNG and PDF): the training
figures and the scaling fits here; the associations' (``association_plots``), the predictions'
(``prediction_plots``) and Pythia's (``pythia_plots``) beside it, importable from here as the
jobs call them. Every ``figure_*`` saves its files and returns the Figure.

One colour per model, ordered by parameter count (viridis, small = dark), the same in every figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.report.association_plots import (  # noqa: F401  (the jobs call them from here)
    figure_correlation_heatmap,
    figure_layer_types,
)
from topotrain.report.figure_kit import (  # noqa: F401  (shared: imported from here too)
    LABELS,
    _label,
    model_order,
    model_palette,
    plt,
    save_figure,
    say_why,
    size_axis,
    wrap_to,
)
from topotrain.report.prediction_plots import (  # noqa: F401
    figure_prediction_mae,
    figure_stopping,
)
from topotrain.report.pythia_plots import (  # noqa: F401
    figure_pythia_features,
    figure_pythia_perplexity,
    figure_pythia_rho,
    figure_pythia_scatter,
    figure_pythia_wasserstein,
    figure_pythia_weights,
)
from topotrain.topology import registry


def plot_over_steps(ax: plt.Axes, df: pd.DataFrame, feature: str, palette: dict) -> None:
    """One line per model (mean over seeds, band = min..max across seeds) of a feature vs step."""
    for model in palette:
        rows = df[df["model"] == model]
        if rows.empty:
            continue
        g = rows.groupby("step")[feature]
        mean = g.mean()
        n = int(rows["n_params"].iloc[0])
        ax.plot(mean.index, mean.to_numpy(), color=palette[model], label=f"{model} ({n:,})")
        if rows["seed"].nunique() > 1:
            ax.fill_between(mean.index, g.min(), g.max(), color=palette[model], alpha=0.2)
    ax.set_xlabel(_label("step"))
    ax.set_ylabel(_label(feature))


def plot_feature_vs_loss(ax: plt.Axes, df: pd.DataFrame, feature: str, palette: dict) -> None:
    """Scatter of a feature against validation loss, one colour per model, points in step order."""
    for model in palette:
        rows = df[df["model"] == model].sort_values("step")
        ax.plot(rows[feature], rows["val_loss"], "o-", ms=2.5, lw=0.6, color=palette[model])
    ax.set_xlabel(_label(feature))
    ax.set_ylabel(_label("val_loss"))


def plot_scaling(ax: plt.Axes, df: pd.DataFrame, features: list[str], palette: dict) -> None:
    """Log-log final-checkpoint features against N, each normalised by its value at the
    smallest N."""
    final = df[df["step"] == df["step"].max()].groupby("model", sort=False).mean(numeric_only=True)
    final = final.loc[[m for m in palette if m in final.index]]
    for feature, marker in zip(features, "osD^v", strict=False):
        y = final[feature].to_numpy(float)
        if np.all(y > 0):
            ax.plot(final["n_params"], y / y[0], marker + "-", label=_label(feature))
    size_axis(ax, final["n_params"])
    ax.set_yscale("log")
    ax.set_xlabel(_label("n_params") + " (log)")
    ax.set_ylabel("final value / value of smallest model (log)")
    ax.legend(fontsize=7)


def figure_overview(df: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Four panels: loss curves; NP over training; H0 total vs loss; log-log scaling with size."""
    palette = model_palette(df)
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), layout="constrained")
    plot_over_steps(axes[0, 0], df, "val_loss", palette)
    axes[0, 0].set_title("a  validation loss")
    axes[0, 0].legend(fontsize=7, title="model (parameters)", title_fontsize=7)
    np_mean, tp0 = registry.of_short("NP"), registry.of_short("TP0")
    plot_over_steps(axes[0, 1], df, np_mean, palette)
    axes[0, 1].set_title("b  neural persistence over training")
    plot_feature_vs_loss(axes[1, 0], df, tp0, palette)
    axes[1, 0].set_title("c  H0 total persistence vs loss")
    plot_scaling(axes[1, 1], df, ["val_loss", tp0, np_mean], palette)
    axes[1, 1].set_title("d  scaling of final values with size")
    return save_figure(fig, png, pdf)


def figure_curves(
    df: pd.DataFrame, features: list[str], png: str | None, pdf: str | None
) -> plt.Figure:
    """One panel per feature over training steps, all models; each titled with its label."""
    palette = model_palette(df)
    fig, axes = plt.subplots(
        1, len(features), figsize=(5.5 * len(features), 4), squeeze=False, layout="constrained"
    )
    for ax, feature in zip(axes[0], features, strict=True):
        plot_over_steps(ax, df, feature, palette)
        ax.set_title(wrap_to(ax, _label(feature), 11), fontsize=11)
        if feature.endswith("loss"):
            ax.set_yscale("log")
    axes[0, 0].legend(fontsize=7, title="model (parameters)", title_fontsize=7)
    return save_figure(fig, png, pdf)


def figure_scaling_fits(
    df: pd.DataFrame, fits: pd.DataFrame, png: str | None, pdf: str | None
) -> plt.Figure:
    """Final-checkpoint values vs N with the fitted a·N^b + c, one panel per feature; a fit that
    did not converge is not drawn and its panel's title says why."""
    final = df[df["step"] == df["step"].max()].groupby("model").mean(numeric_only=True)
    final = final.sort_values("n_params")
    fits = fits[fits["feature"].isin(final.columns)]  # a feature absent from the table: no panel
    n = max(len(fits), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.3 * n, 3.8), squeeze=False, layout="constrained")
    if fits.empty:
        say_why(axes[0, 0], "no scaling fit to draw: the scaling table has no feature of the table")
        return save_figure(fig, png, pdf)
    grid = np.geomspace(final["n_params"].min(), final["n_params"].max(), 100)
    for ax, fit in zip(axes[0], fits.to_dict("records"), strict=True):
        ax.plot(final["n_params"], final[fit["feature"]], "o", color="k", label="final checkpoint")
        if str(fit["converged"]) == "True":
            a, b, c = fit["a"], fit["b"], fit["c"]
            ax.plot(grid, a * grid**b + c, "-", color="C0", label="fitted a·N^b + c")
            said = f"fit: {a:.3g}·N^{b:.3f} + {c:.3g}  (R² = {fit['r2']:.3f})"
            ax.legend(fontsize=7)
        else:
            said = f"no fit drawn (did not converge): {fit['message']}"
        ax.set_title(wrap_to(ax, said, 7.5), fontsize=7.5, loc="left")
        size_axis(ax, final["n_params"])
        ax.set_xlabel(_label("n_params") + " (log)")
        ax.set_ylabel(_label(fit["feature"]))
    return save_figure(fig, png, pdf)
