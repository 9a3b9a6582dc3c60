"""The answer's figures: what the between-seed test permutes (each claim's seed deviations, per
model and view), and the bottom line's links to them and to every effect against Δ (the forest
and the horizon profile: ``report.effects``, importable from here as the jobs call them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.report.bottom_line import NAMES
from topotrain.report.effects import (  # noqa: F401  (the jobs and tests import them from here)
    figure_effects_forest,
    figure_horizon_profile,
    forest_rows,
)
from topotrain.report.figure_kit import _label, fig_title, plt, save_figure, say_why, wrap_to

SEED_DOT = 3  # pt² of a between-seed dot: 6 seeds × 201 steps per panel stay apart
# the between-seed figure's PNG colours: its seeds' flat colours, black, greys and their edges
# (half the bytes of 128 colours in this figure, for the 2 MB report)
SEED_COLOURS = 32

VIEW_TITLES = {
    "clock": "level, beyond the clock",
    "scale": "level, beyond the scale (L2 norm partialled)",
    "norm": "beyond the weight norm (partialled)",
    "co_clock": "co-movement, beyond the clock",
    "co_scale": "co-movement, beyond the scale",
}


def answer_links(figures: dict[str, str]) -> str:
    """The bottom line's figures (``figures``: the report's inputs, name → PNG path): the forest
    shown, each claim's between-seed picture linked; '' without the forest."""
    from pathlib import Path

    from topotrain.report import prose

    if "effects_forest_png" not in figures:
        return ""
    pictures = [
        (NAMES.get(key[len("between_seeds_") : -len("_png")], key), Path(p).name)
        for key, p in figures.items()
        if key.startswith("between_seeds_") and key.endswith("_png")
    ]
    between = ", ".join(f"[{name}](figures/{file})" for name, file in pictures) or "none"
    first = ""
    if pictures:  # the first claim's picture shown, every claim's linked
        first = prose.render("answer/first_picture", name=pictures[0][0], file=pictures[0][1])
    forest = Path(figures["effects_forest_png"]).name
    horizon = ""
    if "horizon_profile_png" in figures:
        horizon = prose.render("answer/horizon", file=Path(figures["horizon_profile_png"]).name)
    said = (prose.render("answer/figures", forest=forest, between=between), first, horizon)
    return "\n\n".join(t for t in said if t)


def figure_between_seeds(
    points: pd.DataFrame,
    feature: str,
    design: dict,
    png: str | None,
    pdf: str | None = None,
    title: str | None = None,
) -> plt.Figure:
    """One row per model, one column per (view, condition) of ``points`` (``seed_points``): each
    seed's feature deviation against its loss deviation (SD units), a colour per seed, the
    model's least-squares line and the test's ρ in the panel's title beside the paper's sign for
    the model (``design["claimed"]``: model → "+" or "−"); ``design`` gives the title's Δ, Δ_co
    and seeds (``title``: the figure's subject, else the feature's name and label; a model the
    claim leaves out says ``design["unclaimed"]``, "not in the claim" by default). Without two
    seeds of a model the panel says so."""
    name = title or f"{NAMES.get(feature, feature)} ({_label(feature)})"
    cells = list(dict.fromkeys(zip(points["view"], points["condition"], strict=True)))
    models = [m for m in model_order_of(points, design) if m in set(points["model"])]
    if not cells or not models:
        fig, ax = plt.subplots(figsize=(6, 2), layout="constrained")
        say_why(
            ax,
            f"{name}: no between-seed picture — no model has two seeds to compare (each seed is "
            "compared with its siblings at the same step)",
        )
        return save_figure(fig, png, pdf)
    fig, axes = plt.subplots(
        len(models),
        len(cells),
        figsize=(3.0 * len(cells), 2.4 * len(models) + 1.2),
        squeeze=False,
        sharex="col",
        layout="constrained",
    )
    seeds = sorted(points["seed"].unique())
    colours = dict(zip(seeds, plt.get_cmap("tab10").colors * 3, strict=False))
    for i, model in enumerate(models):
        for j, (view, condition) in enumerate(cells):
            ax = axes[i, j]
            g = points[
                (points["model"] == model)
                & (points["view"] == view)
                & (points["condition"] == condition)
            ]
            if i == 0:
                ax.annotate(
                    wrap_to(ax, VIEW_TITLES.get(condition, f"{view} {condition}"), 9),
                    (0.5, 1.25),
                    xycoords="axes fraction",
                    ha="center",
                    fontsize=9,
                    weight="bold",
                )
            if g.empty:
                say_why(ax, f"{model}: no points in this view", fontsize=7)
                continue
            _seed_panel(ax, g, colours)
            claimed = design.get("claimed", {}).get(model)
            said = f"paper: {claimed}" if claimed else design.get("unclaimed", "not in the claim")
            text = f"{model}: ρ = {g['rho'].iloc[0]:.2f} ({said})"
            ax.set_title(wrap_to(ax, text, 8), fontsize=8)
            if j == 0:
                ax.set_ylabel("feature deviation (SD)", fontsize=7)
            if i == len(models) - 1:
                ax.set_xlabel("loss deviation (SD)", fontsize=7)
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=colours[s], label=f"seed {s}") for s in seeds
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(seeds), 8), fontsize=7)
    said = (
        f"{name}: each seed against its siblings at the same step — "
        f"{design['seeds']} seeds per model; Δ = {design['sesoi']:g} (level), "
        f"Δ_co = {design['sesoi_co']:g} (co-movement)"
    )
    fig_title(fig, said)
    return save_figure(fig, png, pdf, colours=SEED_COLOURS)


def _seed_panel(ax: plt.Axes, g: pd.DataFrame, colours: dict) -> None:
    """One model × view's points, a colour per seed (opaque 3-pt² dots, drawn in one fixed
    shuffled order so that no seed always lies on top), and its least-squares line through 0."""
    order = np.random.default_rng(0).permutation(len(g))
    x, y = g["loss"].to_numpy(), g["feature"].to_numpy()
    c = [colours[s] for s in g["seed"].to_numpy()[order]]
    ax.scatter(x[order], y[order], s=SEED_DOT, c=c, linewidths=0, rasterized=True)
    if (x * x).sum() > 0:
        xs = np.linspace(x.min(), x.max(), 2)
        ax.plot(xs, (x * y).sum() / (x * x).sum() * xs, color="k", lw=1)
    ax.axhline(0, color="0.8", lw=0.5)
    ax.axvline(0, color="0.8", lw=0.5)
    ax.tick_params(labelsize=6)


def claimed_signs(primary: pd.DataFrame | None, feature: str) -> dict[str, str]:
    """model → the paper's sign ("+" or "−") of ``feature``'s claim, from primary.csv's models
    and signs ({} without the claim)."""
    if primary is None or primary.empty or feature not in set(primary["feature"]):
        return {}
    row = primary.set_index("feature").loc[feature]
    signs = ["+" if float(s) > 0 else "−" for s in str(row["signs"]).split(";")]
    return dict(zip(str(row["models"]).split(";"), signs, strict=True))


def model_order_of(points: pd.DataFrame, design: dict) -> list[str]:
    """The models in ``design["models"]`` order (by size), else in the points' order."""
    given = list(design.get("models") or [])
    return given or list(dict.fromkeys(points["model"]))
