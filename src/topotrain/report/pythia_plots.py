"""Figures of the Pythia branch: the weights' NP and H0 over training, perplexity, the embedding
features over log-step and against perplexity, their |ρ| with perplexity, and the H1 diagrams'
Wasserstein rate of change. Every ``figure_*`` saves its files and returns the Figure."""

from __future__ import annotations

import pandas as pd

from topotrain.report.figure_kit import _label, plt, save_figure, say_why, sparse_log
from topotrain.topology import registry
from topotrain.topology.spectral import SPECTRAL

# the embedding features drawn: both totals, then H1's count and entropy (topology.registry's)
PYTHIA_TOPOLOGICAL = registry.columns("h{k}_total", "embedding") + [
    registry.columns(name, "embedding")[1] for name in ("h{k}_count", "h{k}_entropy")
]
NP_MEAN, NP_STD = registry.columns("np_total")  # the weights' NP, mean and SD over layers
TP0 = registry.of_short("TP0")
PYTHIA_SPECTRAL = list(SPECTRAL)
EMBEDDING_LABELS = {  # features of the embedding cloud (topology.registry's), the spectrum's
    **registry.embedding_labels(),
    "effective_rank": "effective rank",
    "participation_ratio": "participation ratio",
    "spectral_alpha": "eigenspectrum decay α",
}


def pythia_palette(df: pd.DataFrame) -> dict[str, tuple]:
    """One colour per Pythia model, in the order the table lists them (config order)."""
    import seaborn as sns  # here, not at import: 1.3 s a job

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
    sparse_log(ax.xaxis)
    ax.set_xlabel("training step + 1 (log)")
    ax.set_ylabel(_label(feature))


def figure_pythia_weights(df: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Mean NP (± std over layers) and H0 total of the weights over Pythia's training steps."""
    palette = pythia_palette(df)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    _over_log_steps(axes[0], df, NP_MEAN, palette)
    for model, colour in palette.items():
        rows = df[df["model"] == model].sort_values("step")
        mean, std = rows[NP_MEAN], rows[NP_STD]
        axes[0].fill_between(rows["step"] + 1, mean - std, mean + std, color=colour, alpha=0.2)
    _over_log_steps(axes[1], df, TP0, palette)
    axes[0].legend(fontsize=7)
    return save_figure(fig, png, pdf)


def figure_pythia_perplexity(df: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Validation perplexity over training steps (both axes log)."""
    palette = pythia_palette(df)
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    _over_log_steps(ax, df, "perplexity", palette)
    ax.set_yscale("log")
    ax.set_ylabel("WikiText-2 validation perplexity (log)")
    ax.legend(fontsize=7)
    return save_figure(fig, png, pdf)


def figure_pythia_features(df: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Topological (top row) and spectral (bottom row) embedding features over log-step."""
    palette = pythia_palette(df)
    n = max(len(PYTHIA_TOPOLOGICAL), len(PYTHIA_SPECTRAL))
    fig, axes = plt.subplots(2, n, figsize=(4 * n, 7), squeeze=False, layout="constrained")
    for row, features in enumerate((PYTHIA_TOPOLOGICAL, PYTHIA_SPECTRAL)):
        for col in range(n):
            ax = axes[row, col]
            if col < len(features) and features[col] in df:
                _over_log_steps(ax, df, features[col], palette)
                ax.set_ylabel(EMBEDDING_LABELS[features[col]])
            else:
                ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    return save_figure(fig, png, pdf)


def figure_pythia_scatter(df: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Each embedding feature against perplexity (log x), one colour per model."""
    palette = pythia_palette(df)
    features = [f for f in PYTHIA_TOPOLOGICAL + PYTHIA_SPECTRAL if f in df]
    cols = max((len(features) + 1) // 2, 1)
    fig, axes = plt.subplots(2, cols, figsize=(4 * cols, 7), squeeze=False, layout="constrained")
    for ax, feature in zip(axes.flat, features, strict=False):
        for model, colour in palette.items():
            rows = df[df["model"] == model]
            ax.scatter(rows["perplexity"], rows[feature], s=12, color=colour, label=model)
        ax.set_xscale("log")
        sparse_log(ax.xaxis)
        ax.set_xlabel("perplexity (log)")
        ax.set_ylabel(EMBEDDING_LABELS[feature])
    for ax in list(axes.flat)[len(features) :]:
        ax.axis("off")
    if features:
        axes[0, 0].legend(fontsize=7)
    else:
        say_why(axes[0, 0], "no embedding feature in the table to draw against perplexity")
    return save_figure(fig, png, pdf)


def figure_pythia_rho(corr: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """|Spearman ρ| of each feature with perplexity, per model, topological vs spectral."""
    import seaborn as sns  # here, not at import: 1.3 s a job

    data = corr.assign(abs_rho=corr["rho"].abs())
    order = data.groupby("feature")["abs_rho"].mean().sort_values(ascending=False).index
    fig, ax = plt.subplots(figsize=(9, 4.5), layout="constrained")
    sns.barplot(data=data, x="feature", y="abs_rho", hue="model", order=order, ax=ax)
    kinds = data.drop_duplicates("feature").set_index("feature")["kind"]
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([f"{f}\n({kinds[f]})" for f in order], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("|Spearman ρ| with perplexity")
    ax.set_xlabel("")
    ax.set_ylim(0, 1)
    return save_figure(fig, png, pdf)


def figure_pythia_wasserstein(df: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Wasserstein distance between consecutive revisions' H1 diagrams, per step interval."""
    palette = pythia_palette(df)
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    moves = df.dropna(subset=["wasserstein_h1"])
    if moves.empty:
        say_why(ax, "no Wasserstein distance: each model has a single revision")
        return save_figure(fig, png, pdf)
    drawn = {m: c for m, c in palette.items() if m in set(moves["model"])}  # the legend's
    _over_log_steps(ax, moves, "wasserstein_h1", drawn)
    ax.set_ylabel("W₂(H1 at step, H1 at previous step)")
    ax.legend(fontsize=7)
    return save_figure(fig, png, pdf)
