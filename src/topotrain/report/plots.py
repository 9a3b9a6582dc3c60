"""Figures of the weight-space study (seaborn/matplotlib, written as PNG and PDF).

One colour per model, ordered by parameter count (viridis, small = dark), the same in every figure.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from topotrain.io import atomic_write  # noqa: E402
from topotrain.topology import registry  # noqa: E402
from topotrain.topology.spectral import SPECTRAL  # noqa: E402

LABELS = {  # the feature table's columns that are no feature (the features': topology.registry)
    "val_loss": "validation loss (nats/char)",
    "train_loss": "train loss (nats/char)",
    "grad_norm": "gradient norm (baseline)",
    "lr": "learning rate (baseline)",
    "step": "training step",
    "n_params": "parameters N",
}


def model_order(df: pd.DataFrame) -> list[str]:
    """Model names ordered by parameter count."""
    return df.drop_duplicates("model").sort_values("n_params")["model"].tolist()


def model_palette(df: pd.DataFrame) -> dict[str, tuple]:
    """A fixed colour per model, ordered by size."""
    order = model_order(df)
    colours = sns.color_palette("viridis", n_colors=max(len(order), 2))
    return dict(zip(order, colours, strict=False))


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path | None = None) -> None:
    """Save PNG (and PDF) atomically (io.atomic_write); the format follows each path's suffix."""
    for path in filter(None, (png, pdf)):
        fmt = Path(path).suffix.lstrip(".")
        atomic_write(
            path, lambda fh, fmt=fmt: fig.savefig(fh, format=fmt, dpi=150, bbox_inches="tight")
        )
    plt.close(fig)


def _label(feature: str) -> str:
    """A column's label: the registry's for a feature, LABELS' for the rest, else its name."""
    return {**registry.labels(), **LABELS}.get(feature, feature.replace("_", " "))


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
            ax.loglog(final["n_params"], y / y[0], marker + "-", label=_label(feature))
    ax.set_xlabel(_label("n_params") + " (log)")
    ax.set_ylabel("final value / value of smallest model (log)")
    ax.legend(fontsize=7)


def figure_overview(df: pd.DataFrame, png: str, pdf: str) -> None:
    """Four panels: loss curves; NP over training; H0 total vs loss; log-log scaling with size."""
    palette = model_palette(df)
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    plot_over_steps(axes[0, 0], df, "val_loss", palette)
    axes[0, 0].set_title("a  validation loss")
    axes[0, 0].legend(fontsize=7, title="model (parameters)", title_fontsize=7)
    plot_over_steps(axes[0, 1], df, "np_mean", palette)
    axes[0, 1].set_title("b  neural persistence over training")
    plot_feature_vs_loss(axes[1, 0], df, "h0_total", palette)
    axes[1, 0].set_title("c  H0 total persistence vs loss")
    plot_scaling(axes[1, 1], df, ["val_loss", "h0_total", "np_mean"], palette)
    axes[1, 1].set_title("d  scaling of final values with size")
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_curves(df: pd.DataFrame, features: list[str], png: str, pdf: str) -> None:
    """One panel per feature over training steps, all models."""
    palette = model_palette(df)
    fig, axes = plt.subplots(1, len(features), figsize=(5.5 * len(features), 4), squeeze=False)
    for ax, feature in zip(axes[0], features, strict=True):
        plot_over_steps(ax, df, feature, palette)
        ax.set_title(_label(feature))
        if feature.endswith("loss"):
            ax.set_yscale("log")
    axes[0, 0].legend(fontsize=7, title="model (parameters)", title_fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_correlation_heatmap(corr: pd.DataFrame, png: str, pdf: str) -> None:
    """Spearman ρ(feature, validation loss) per feature × model; * marks BH-significant cells."""
    mean = corr.groupby(["feature", "model"], sort=False)["rho"].mean().unstack("model")
    sig = corr.groupby(["feature", "model"], sort=False)["significant"].all().unstack("model")
    order = corr.drop_duplicates("model").sort_values("n_params")["model"].tolist()
    mean, sig = mean[order], sig[order]
    # NaN: ρ undefined (e.g. a feature that is constant over training, such as the H0 count)
    annot = mean.map(lambda v: "n/a" if np.isnan(v) else f"{v:.2f}") + sig.map(
        lambda s: "*" if s else ""
    )
    fig, ax = plt.subplots(figsize=(1.3 * len(order) + 3, 0.45 * len(mean) + 1.5))
    sns.heatmap(
        mean,
        annot=annot,
        fmt="",
        cmap="vlag",
        vmin=-1,
        vmax=1,
        ax=ax,
        cbar_kws={"label": "Spearman ρ with validation loss"},
    )
    ax.set_facecolor("0.9")
    ax.set_xlabel("model (ordered by size)")
    ax.set_ylabel("feature")
    ax.set_title("ρ(feature, loss) across checkpoints; * = significant after Benjamini–Hochberg")
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_prediction_mae(summary: pd.DataFrame, png: str, pdf: str) -> None:
    """MAE of final-loss prediction by method and training fraction used."""
    data = summary.assign(percent=(100 * summary["fraction"]).round().astype(int).astype(str) + "%")
    fig, ax = plt.subplots(figsize=(11, 4.5))
    sns.barplot(data=data, x="percent", y="mae", hue="method", ax=ax)
    ax.legend(fontsize=7, ncol=2, title="method")
    ax.set_yscale("log")  # placebos and baselines can be far worse than the predictors
    ax.set_xlabel("fraction of training observed")
    ax.set_ylabel("MAE of predicted final loss (nats/char, log)")
    ax.set_title("Final-loss prediction from early training")
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_stopping(table: pd.DataFrame, png: str, pdf: str) -> None:
    """Compute saved vs final-loss penalty: each rule's mean over runs (labelled, the Pareto front
    joined) over the runs themselves (faint), coloured by rule family."""
    fig, ax = plt.subplots(figsize=(8, 5))
    families = sorted(table["family"].unique())
    colours = dict(zip(families, sns.color_palette("colorblind", len(families)), strict=True))
    for family, rows in table.groupby("family"):
        ax.scatter(rows["compute_saved"], rows["penalty"], s=8, alpha=0.25, color=colours[family])
    means = table.drop_duplicates("rule")
    for _, r in means.iterrows():
        ax.scatter(
            r["mean_compute_saved"],
            r["mean_penalty"],
            s=50,
            color=colours[r["family"]],
            edgecolor="black" if r["pareto_rank"] == 1 else "none",
            label=r["family"],
        )
        ax.annotate(
            r["rule"],
            (r["mean_compute_saved"], r["mean_penalty"]),
            fontsize=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    front = means[means["pareto_rank"] == 1].sort_values("mean_compute_saved")
    ax.plot(front["mean_compute_saved"], front["mean_penalty"], color="black", lw=0.8)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=7, title="rule family")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("compute saved (fraction of steps)")
    ax.set_ylabel("validation loss at stop − at the end (nats/char)")
    ax.set_title("Causal stopping rules: mean over runs (outlined: Pareto front), runs faint")
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_layer_types(summary: pd.DataFrame, png: str, pdf: str) -> None:
    """ρ with validation loss of the summary's view (the between-seed contrast by default; a run
    view's mean over seeds): models and ``pooled`` × (split group, feature)."""
    part = summary[summary["target"] == "val_loss"].sort_values("n_params", kind="stable")
    part = part.assign(column=part["group"] + " · " + part["feature"])
    grid = part.pivot_table(index="model", columns="column", values="mean_rho", sort=False)
    grid = grid.reindex(part.drop_duplicates("model")["model"])
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * grid.shape[1] + 2), 0.5 * len(grid) + 2))
    sns.heatmap(
        grid,
        annot=True,
        fmt=".2f",
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        ax=ax,
        annot_kws={"fontsize": 6},
    )
    ax.set_xlabel("layer group · feature")
    ax.set_ylabel("")
    view = str(part["view"].iloc[0]) if "view" in part and len(part) else "detrended"
    ax.set_title(f"{view} ρ(feature, validation loss) by layer type and depth")
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_scaling_fits(df: pd.DataFrame, fits: pd.DataFrame, png: str, pdf: str) -> None:
    """Final-checkpoint values vs N with the fitted a·N^b + c, one panel per feature."""
    final = df[df["step"] == df["step"].max()].groupby("model").mean(numeric_only=True)
    final = final.sort_values("n_params")
    fits = fits[fits["feature"].isin(final.columns)]  # a feature absent from the table: no panel
    fig, axes = plt.subplots(1, len(fits), figsize=(5 * len(fits), 4), squeeze=False)
    grid = np.geomspace(final["n_params"].min(), final["n_params"].max(), 100)
    for ax, (_, fit) in zip(axes[0], fits.iterrows(), strict=True):
        ax.plot(final["n_params"], final[fit["feature"]], "o", color="k", label="final checkpoint")
        if fit["converged"]:
            ax.plot(
                grid,
                fit["a"] * grid ** fit["b"] + fit["c"],
                "-",
                label=(f"{fit['a']:.3g}·N^{fit['b']:.3f} + {fit['c']:.3g}  (R²={fit['r2']:.3f})"),
            )
        else:
            ax.text(
                0.05,
                0.05,
                f"fit did not converge: {fit['message']}",
                transform=ax.transAxes,
                fontsize=7,
            )
        ax.set_xscale("log")
        ax.set_xlabel(_label("n_params") + " (log)")
        ax.set_ylabel(_label(fit["feature"]))
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


# ---- Pythia branch ---------------------------------------------------------------------------
PYTHIA_TOPOLOGICAL = ["h0_total", "h1_total", "h1_count", "h1_entropy"]
PYTHIA_SPECTRAL = list(SPECTRAL)
EMBEDDING_LABELS = {  # features of the embedding cloud (not summed over layers)
    "h0_total": "H0 total persistence (embeddings)",
    "h1_total": "H1 total persistence (embeddings)",
    "h1_count": "number of H1 bars (embeddings)",
    "h1_entropy": "H1 persistence entropy (embeddings)",
    "effective_rank": "effective rank",
    "participation_ratio": "participation ratio",
    "spectral_alpha": "eigenspectrum decay α",
}


def pythia_palette(df: pd.DataFrame) -> dict[str, tuple]:
    """One colour per Pythia model, in the order the table lists them (config order)."""
    models = list(dict.fromkeys(df["model"]))
    return dict(
        zip(models, sns.color_palette("rocket", n_colors=max(len(models), 2)), strict=False)
    )


def _over_log_steps(ax: plt.Axes, df: pd.DataFrame, feature: str, palette: dict) -> None:
    """A feature against step + 1 on a log axis, one line per model."""
    for model, colour in palette.items():
        rows = df[df["model"] == model].sort_values("step")
        ax.plot(rows["step"] + 1, rows[feature], "o-", ms=3, color=colour, label=model)
    ax.set_xscale("log")
    ax.set_xlabel("training step + 1 (log)")
    ax.set_ylabel(_label(feature))


def figure_pythia_weights(df: pd.DataFrame, png: str, pdf: str) -> None:
    """Mean NP (± std over layers) and H0 total of the weights over Pythia's training steps."""
    palette = pythia_palette(df)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    _over_log_steps(axes[0], df, "np_mean", palette)
    for model, colour in palette.items():
        rows = df[df["model"] == model].sort_values("step")
        mean, std = rows["np_mean"], rows["np_std"]
        axes[0].fill_between(rows["step"] + 1, mean - std, mean + std, color=colour, alpha=0.2)
    _over_log_steps(axes[1], df, "h0_total", palette)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_pythia_perplexity(df: pd.DataFrame, png: str, pdf: str) -> None:
    """Validation perplexity over training steps (both axes log)."""
    palette = pythia_palette(df)
    fig, ax = plt.subplots(figsize=(6, 4))
    _over_log_steps(ax, df, "perplexity", palette)
    ax.set_yscale("log")
    ax.set_ylabel("WikiText-2 validation perplexity (log)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_pythia_features(df: pd.DataFrame, png: str, pdf: str) -> None:
    """Topological (top row) and spectral (bottom row) embedding features over log-step."""
    palette = pythia_palette(df)
    n = max(len(PYTHIA_TOPOLOGICAL), len(PYTHIA_SPECTRAL))
    fig, axes = plt.subplots(2, n, figsize=(4 * n, 7), squeeze=False)
    for row, features in enumerate((PYTHIA_TOPOLOGICAL, PYTHIA_SPECTRAL)):
        for col in range(n):
            ax = axes[row, col]
            if col < len(features) and features[col] in df:
                _over_log_steps(ax, df, features[col], palette)
                ax.set_ylabel(EMBEDDING_LABELS[features[col]])
            else:
                ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_pythia_scatter(df: pd.DataFrame, png: str, pdf: str) -> None:
    """Each embedding feature against perplexity (log x), one colour per model."""
    palette = pythia_palette(df)
    features = [f for f in PYTHIA_TOPOLOGICAL + PYTHIA_SPECTRAL if f in df]
    fig, axes = plt.subplots(2, (len(features) + 1) // 2, figsize=(16, 7), squeeze=False)
    for ax, feature in zip(axes.flat, features, strict=False):
        for model, colour in palette.items():
            rows = df[df["model"] == model]
            ax.scatter(rows["perplexity"], rows[feature], s=12, color=colour, label=model)
        ax.set_xscale("log")
        ax.set_xlabel("perplexity (log)")
        ax.set_ylabel(EMBEDDING_LABELS[feature])
    for ax in list(axes.flat)[len(features) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_pythia_rho(corr: pd.DataFrame, png: str, pdf: str) -> None:
    """|Spearman ρ| of each feature with perplexity, per model, topological vs spectral."""
    data = corr.assign(abs_rho=corr["rho"].abs())
    order = data.groupby("feature")["abs_rho"].mean().sort_values(ascending=False).index
    fig, ax = plt.subplots(figsize=(9, 4.5))
    sns.barplot(data=data, x="feature", y="abs_rho", hue="model", order=order, ax=ax)
    kinds = data.drop_duplicates("feature").set_index("feature")["kind"]
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([f"{f}\n({kinds[f]})" for f in order], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("|Spearman ρ| with perplexity")
    ax.set_xlabel("")
    ax.set_ylim(0, 1)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_pythia_wasserstein(df: pd.DataFrame, png: str, pdf: str) -> None:
    """Wasserstein distance between consecutive revisions' H1 diagrams, per step interval."""
    palette = pythia_palette(df)
    fig, ax = plt.subplots(figsize=(6, 4))
    _over_log_steps(ax, df.dropna(subset=["wasserstein_h1"]), "wasserstein_h1", palette)
    ax.set_ylabel("W₂(H1 at step, H1 at previous step)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)
