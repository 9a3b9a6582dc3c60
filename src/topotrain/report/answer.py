"""The answer's figures: what the between-seed test permutes (each claim's seed deviations, per
model and view) and every effect against Δ (a forest: β with its interval per view, the band ±Δ,
the verdict and the power at Δ beside each claim)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from topotrain.config.constants import CONFIDENCE
from topotrain.report.bottom_line import NAMES
from topotrain.report.plots import _label, plt, save_figure

# the forest's views: primary.csv's condition -> (label, whose Δ)
FOREST_VIEWS = {
    "clock": ("level, beyond the clock", "sesoi"),
    "scale": ("level, beyond the scale", "sesoi"),
    "co_clock": ("co-movement, beyond the clock", "sesoi_co"),
    "co_scale": ("co-movement, beyond the scale", "sesoi_co"),
}
# the question each condition answers (primary.QUESTIONS): its verdict is verdict_<question>
FOREST_QUESTIONS = {"clock": "ranks", "scale": "ranks", "co_clock": "moves_with"}
FOREST_QUESTIONS["co_scale"] = "moves_with"
QUESTION_SAID = {"ranks": "ranks", "moves_with": "moves with"}
# the diagnostics' partial contrasts of a claim's feature: name -> the forest's view label
BEYOND_LABELS = {
    "grad": "beyond the gradient norm (pooled ρ, as measured)",
    "wvar": "beyond the weight variance (pooled ρ, as measured)",
}
VIEW_TITLES = {
    "clock": "level, beyond the clock",
    "scale": "level, beyond the scale (L2 norm partialled)",
    "norm": "beyond the weight norm (partialled)",
    "co_clock": "co-movement, beyond the clock",
    "co_scale": "co-movement, beyond the scale",
}


GROUP_COLOURS = {"primary": "C0", "partial": "C0", "diagnostics": "C2"}


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
    png: str,
    pdf: str | None = None,
    title: str | None = None,
) -> None:
    """One row per model, one column per (view, condition) of ``points`` (``seed_points``): each
    seed's feature deviation against its loss deviation (SD units), a colour per seed, the
    model's least-squares line and the test's ρ in the panel's title beside the paper's sign for
    the model (``design["claimed"]``: model → "+" or "−"); ``design`` gives the title's Δ, Δ_co
    and seeds (``title``: the figure's subject, else the feature's name and label; a model the
    claim leaves out says ``design["unclaimed"]``, "not in the claim" by default)."""
    cells = list(dict.fromkeys(zip(points["view"], points["condition"], strict=True)))
    models = [m for m in model_order_of(points, design) if m in set(points["model"])]
    if not cells or not models:
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, f"{feature}: no model has two seeds to compare", ha="center")
        save_figure(fig, png, pdf)
        return
    fig, axes = plt.subplots(
        len(models),
        len(cells),
        figsize=(3.1 * len(cells), 2.5 * len(models)),
        squeeze=False,
        sharex="col",
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
            if g.empty:
                ax.axis("off")
                continue
            for seed, s in g.groupby("seed"):
                ax.scatter(s["loss"], s["feature"], s=6, alpha=0.6, color=colours[seed])
            x, y = g["loss"].to_numpy(), g["feature"].to_numpy()
            if (x * x).sum() > 0:
                xs = np.linspace(x.min(), x.max(), 2)
                ax.plot(xs, (x * y).sum() / (x * x).sum() * xs, color="k", lw=1)
            ax.axhline(0, color="0.8", lw=0.5)
            ax.axvline(0, color="0.8", lw=0.5)
            claimed = design.get("claimed", {}).get(model)
            said = f"paper: {claimed}" if claimed else design.get("unclaimed", "not in the claim")
            ax.set_title(f"{model}: ρ = {g['rho'].iloc[0]:.2f} ({said})", fontsize=8)
            if i == 0:
                ax.annotate(
                    VIEW_TITLES.get(condition, f"{view} {condition}"),
                    (0.5, 1.25),
                    xycoords="axes fraction",
                    ha="center",
                    fontsize=9,
                    weight="bold",
                )
            if j == 0:
                ax.set_ylabel("feature deviation (SD)", fontsize=7)
            if i == len(models) - 1:
                ax.set_xlabel("loss deviation (SD)", fontsize=7)
            ax.tick_params(labelsize=6)
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=colours[s], label=f"seed {s}") for s in seeds
    ]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(seeds), 8), fontsize=7)
    name = title or f"{NAMES.get(feature, feature)} ({_label(feature)})"
    said = (
        f"{name}: each seed against its siblings at the same step — "
        f"{design['seeds']} seeds per model; Δ = {design['sesoi']:g} (level), "
        f"Δ_co = {design['sesoi_co']:g} (co-movement)"
    )
    fig.suptitle(textwrap.fill(said, width=max(60, 45 * len(cells))), fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    save_figure(fig, png, pdf)


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


def forest_rows(
    primary: pd.DataFrame | None, diagnostics: pd.DataFrame | None, power: pd.DataFrame | None
) -> pd.DataFrame:
    """One row per (claim or diagnostic, view) with an effect: label, view label, effect, its
    interval, Δ of its view, the verdict of the question its view answers and the power at Δ
    (primary claims; ``question``), in drawing order —
    the primary claims first (every view of primary.csv), then each claim's feature beyond the
    gradient norm and the weight variance (the diagnostics' partial contrasts: pooled ρ as
    measured, no interval, their p as the verdict), then the diagnostics' WeightWatcher rows and
    the gradient norm's own (beyond the clock and the scale)."""
    rows = []
    for r in (primary if primary is not None else pd.DataFrame()).to_dict("records"):
        name = NAMES.get(r["feature"], r["feature"])
        for cond, (label, delta) in FOREST_VIEWS.items():
            if f"effect_{cond}" not in r:
                continue
            rows.append(
                dict(
                    group="primary",
                    name=name,
                    view=label,
                    effect=r[f"effect_{cond}"],
                    low=r[f"effect_{cond}_ci_low"],
                    high=r[f"effect_{cond}_ci_high"],
                    delta=r.get(delta, np.nan),
                    verdict=_question_verdict(r, FOREST_QUESTIONS[cond]),
                    power=_power(power, r["feature"]),
                    question=FOREST_QUESTIONS[cond],
                )
            )
    diag = diagnostics if diagnostics is not None else pd.DataFrame(columns=["kind", "feature"])
    claims = list(primary["feature"]) if primary is not None and len(primary) else []
    for r in diag[diag["feature"].isin(claims)].to_dict("records"):
        for name, label in BEYOND_LABELS.items():
            if not np.isfinite(r.get(f"rho_{name}", np.nan)):
                continue
            rows.append(
                dict(
                    group="partial",
                    name=NAMES.get(r["feature"], r["feature"]),
                    view=label,
                    effect=r[f"rho_{name}"],
                    low=np.nan,
                    high=np.nan,
                    delta=_sesoi(primary),
                    verdict=f"p {r[f'p_{name}']:.2g}",
                    power="",
                )
            )
    for r in diag[diag["kind"].isin(["weightwatcher", "baseline"])].to_dict("records"):
        for cond in ("clock", "scale"):
            if f"effect_{cond}" not in r:
                continue
            rows.append(
                dict(
                    group="diagnostics",
                    name=_label(r["feature"]),
                    view=FOREST_VIEWS[cond][0],
                    effect=r[f"effect_{cond}"],
                    low=r[f"effect_ci_low_{cond}"],
                    high=r[f"effect_ci_high_{cond}"],
                    delta=_sesoi(primary),
                    verdict=r.get("verdict", ""),
                    power="",
                )
            )
    return pd.DataFrame(rows)


def _question_verdict(row: dict, question: str) -> str:
    """'moves with: undecided', the question's verdict of a primary.csv row ('' without it);
    the bottom line's question is marked (bottom line)."""
    verdict = row.get(f"verdict_{question}")
    if not isinstance(verdict, str):
        return ""
    mark = " (bottom line)" if row.get("question") == question else ""
    return f"{QUESTION_SAID[question]}{mark}: {verdict}"


def _sesoi(primary: pd.DataFrame | None) -> float:
    if primary is None or "sesoi" not in primary or primary.empty:
        return np.nan
    return float(primary["sesoi"].iloc[0])


def _power(power: pd.DataFrame | None, feature: str) -> str:
    """The design's power of "reproduced" for ``feature``'s claim from power.csv's rows of this
    design: at Δ_co (innovation coupling) and at Δ (the stated model); else the level family's
    power at Δ; '' without power.csv."""
    if power is None or power.empty:
        return ""
    if "this_design" in power:
        here = power[power["this_design"].astype(str).eq("True") & (power["feature"] == feature)]
        said = []
        for coupling, delta in (("innovation", "Δ_co"), ("level", "Δ")):
            row = here[(here["coupling"] == coupling) & (here["view"] == "reproduced")]
            if len(row):
                said.append(f"{row['power_at_sesoi'].iloc[0]:.2f} at {delta}")
        if said:
            return 'power of "reproduced" ' + ", ".join(said)
    family = power[power["planted"].isna()] if "planted" in power else power
    rows = family[family["feature"] == feature]
    return f"power at Δ {rows['power_at_sesoi'].iloc[0]:.2f}" if len(rows) else ""


def figure_effects_forest(rows: pd.DataFrame, png: str, pdf: str | None = None) -> None:
    """Every effect of ``forest_rows`` as a point with its interval, one line each, the band ±Δ
    of its view shaded, and at the right the claim's verdict and power at Δ."""
    n = max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(9, 0.32 * n + 1.6))
    if rows.empty:
        ax.axis("off")
        ax.text(0.5, 0.5, "no effect to show (primary.csv and diagnostics.csv absent)", ha="center")
        save_figure(fig, png, pdf)
        return
    ys = np.arange(n)[::-1]
    for y, r in zip(ys, rows.itertuples(index=False), strict=True):
        if np.isfinite(r.delta):
            ax.fill_betweenx([y - 0.45, y + 0.45], -r.delta, r.delta, color="0.9", lw=0)
        colour = GROUP_COLOURS.get(r.group, "C2")
        if np.isfinite(r.low) and np.isfinite(r.high):
            ax.plot([r.low, r.high], [y, y], color=colour, lw=1.5)
        if np.isfinite(r.effect):
            hollow = r.group == "partial"
            ax.plot(r.effect, y, "o", color=colour, ms=4, mfc="white" if hollow else colour)
    ax.axvline(0, color="k", lw=0.6)
    ax.set_yticks(ys, [f"{r.name}: {r.view}" for r in rows.itertuples(index=False)], fontsize=7)
    ax.set_xlabel(
        f"effect β (correlation of the seeds' deviations) with its {100 * CONFIDENCE:g} % "
        "interval, shaded ±Δ of its view;\nprimary claims in the paper's sign (> 0 as claimed), "
        "WeightWatcher's as measured",
        fontsize=8,
    )
    ax.set_xlim(-1, 1)
    keys = ["group", "name", "question"] if "question" in rows else ["group", "name"]
    first = rows[rows["group"] != "partial"].drop_duplicates(keys)  # a claim: each question's
    for r in [*first.itertuples(), *rows[rows["group"] == "partial"].itertuples()]:
        y = ys[r.Index]
        said = f"{r.verdict}\n{r.power}" if r.power else r.verdict
        ax.annotate(said, (1.02, y), xycoords=("axes fraction", "data"), fontsize=7, va="center")
    deltas = sorted({f"{d:g}" for d in rows["delta"] if np.isfinite(d)})
    ax.set_title(
        f"Effects against Δ ({', '.join(deltas) or 'none'}): primary claims (blue), their "
        "features beyond the gradient norm and the weight variance (hollow),\nWeightWatcher's "
        "metrics and the gradient norm (green)",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, png, pdf)


def figure_horizon_profile(
    table: pd.DataFrame, sesoi_co: float, horizon: float, png: str, pdf: str | None = None
) -> None:
    """Each primary claim's β_co with its interval per horizon H (``horizons.horizon_profile``),
    beyond the clock (filled) and beyond the norm (hollow), the band ±Δ_co shaded and the
    registered H marked; exploratory: the registered H decides."""
    claims = list(dict.fromkeys(table["feature"])) if len(table) else []
    fig, axes = plt.subplots(1, max(len(claims), 1), figsize=(4 * max(len(claims), 1), 3.6))
    axes = np.atleast_1d(axes)
    if not claims:
        axes[0].axis("off")
        axes[0].text(0.5, 0.5, "no co-movement to profile", ha="center")
        save_figure(fig, png, pdf)
        return
    for ax, feature in zip(axes, claims, strict=True):
        rows = table[table["feature"] == feature]
        hs = sorted(rows["horizon"].unique())
        ax.axhspan(-sesoi_co, sesoi_co, color="0.9", lw=0)
        ax.axhline(0, color="k", lw=0.6)
        ax.axvline(horizon, color="0.5", lw=0.8, ls="--")
        for shift, cond, hollow in ((-0.06, "co_clock", False), (0.06, "co_scale", True)):
            part = rows[rows["condition"] == cond].set_index("horizon").reindex(hs)
            x = np.asarray(hs, float) * np.exp(shift)
            ok = np.isfinite(part["effect"].to_numpy(float))
            lo, hi = part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float)
            for xi, a, b in zip(x[ok], lo[ok], hi[ok], strict=True):
                ax.plot([xi, xi], [a, b], color="C0" if not hollow else "C1", lw=1.4)
            ax.plot(
                x[ok],
                part["effect"].to_numpy(float)[ok],
                "o",
                color="C0" if not hollow else "C1",
                mfc="white" if hollow else None,
                label="beyond the norm" if hollow else "beyond the clock",
            )
        ax.set_xscale("log")
        ax.minorticks_off()  # the horizons alone label the axis
        ax.set_xticks(hs, [f"{h:g}" for h in hs])
        ax.set_xlabel("horizon H (steps)", fontsize=8)
        ax.set_title(NAMES.get(feature, _label(feature)), fontsize=9)
    axes[0].set_ylabel(f"β_co with its {100 * CONFIDENCE:g} % interval", fontsize=8)
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(
        f"Co-movement at each horizon (exploratory; the registered H = {horizon:g}, dashed, "
        f"decides); ±Δ_co = {sesoi_co:g} shaded",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, png, pdf)
