"""Every effect against Δ: the forest's rows (each primary claim's β per view, its features
beyond the gradient norm and the weight variance, WeightWatcher's metrics and the gradient norm,
from primary.csv, diagnostics.csv and power.csv), the forest drawn from them, and the
co-movement's profile across horizons H. A row or a panel with nothing estimated says so and
why; a title names only what is drawn. Every ``figure_*`` saves its files and returns the
Figure."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from topotrain.config.constants import CONFIDENCE
from topotrain.report.bottom_line import NAMES
from topotrain.report.figure_kit import _label, fig_title, plt, save_figure, say_why
from topotrain.report.question_phrases import question_word

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
GROUP_COLOURS = {"primary": "C0", "partial": "C0", "diagnostics": "C2"}
GROUP_SAID = {  # how the title names each group whose effects are drawn
    "primary": "primary claims (blue)",
    "partial": "their features beyond the gradient norm and the weight variance (hollow)",
    "diagnostics": "WeightWatcher's metrics and the gradient norm (green)",
}
NOT_ESTIMATED = "not estimated"


def forest_rows(
    primary: pd.DataFrame | None, diagnostics: pd.DataFrame | None, power: pd.DataFrame | None
) -> pd.DataFrame:
    """One row per (claim or diagnostic, view) with an effect: label, view label, effect, its
    interval, Δ of its view, the verdict of the question its view answers and the power at Δ
    (primary claims; ``question``, and primary.csv's ``note``: why an effect is missing), in
    drawing order —
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
                    note=r.get("note", ""),
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
    """'moves with: undecided', the question's word of a primary.csv row as the bottom line says
    it (``question_phrases.question_word``, with why where it cannot be measured; '' without
    it); the bottom line's question is marked (bottom line)."""
    verdict = question_word(row, question)
    if not verdict:
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
            if len(row) and np.isfinite(row["power_at_sesoi"].iloc[0]):
                said.append(f"{row['power_at_sesoi'].iloc[0]:.2f} at {delta}")
        if said:
            return 'power of "reproduced" ' + ", ".join(said)
    family = power[power["planted"].isna()] if "planted" in power else power
    rows = family[(family["feature"] == feature) & family["power_at_sesoi"].notna()]
    return f"power at Δ {rows['power_at_sesoi'].iloc[0]:.2f}" if len(rows) else ""


def figure_effects_forest(
    rows: pd.DataFrame, png: str | None, pdf: str | None = None
) -> plt.Figure:
    """Every effect of ``forest_rows`` as a point with its interval, one line each, the band ±Δ
    of its view shaded behind an estimated one ("not estimated" where none), and at the right
    the claim's verdict and power at Δ; the title names the groups drawn. With no effect
    estimated at all, the panel says why (primary.csv's notes)."""
    drawn = rows[np.isfinite(rows["effect"].astype(float))] if len(rows) else rows
    if drawn.empty:
        fig, ax = plt.subplots(figsize=(9, 3), layout="constrained")
        say_why(ax, _nothing_estimated(rows))
        return save_figure(fig, png, pdf)
    n = len(rows)
    fig, ax = plt.subplots(figsize=(10, 0.32 * n + 2), layout="constrained")
    ys = np.arange(n)[::-1]
    for y, r in zip(ys, rows.itertuples(index=False), strict=True):
        if not np.isfinite(r.effect):
            box = {"facecolor": "white", "edgecolor": "none", "pad": 1}  # over the zero line
            ax.text(
                0, y, NOT_ESTIMATED, ha="center", va="center", fontsize=6.5, color="0.45", bbox=box
            )
            continue
        if np.isfinite(r.delta):
            ax.fill_betweenx([y - 0.45, y + 0.45], -r.delta, r.delta, color="0.9", lw=0)
        colour = GROUP_COLOURS.get(r.group, "C2")
        if np.isfinite(r.low) and np.isfinite(r.high):
            ax.plot([r.low, r.high], [y, y], color=colour, lw=1.5)
        hollow = r.group == "partial"
        ax.plot(r.effect, y, "o", color=colour, ms=4, mfc="white" if hollow else colour)
    ax.axvline(0, color="k", lw=0.6)
    ax.set_yticks(ys, [f"{r.name}: {r.view}" for r in rows.itertuples(index=False)], fontsize=7)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlim(-1, 1)
    _forest_verdicts(ax, rows, ys)
    ax.set_xlabel(_forest_axis(drawn), fontsize=8)
    deltas = sorted({f"{d:g}" for d in drawn["delta"] if np.isfinite(d)})
    against = f"Δ ({', '.join(deltas)})" if deltas else "0 (no Δ)"
    groups = [GROUP_SAID[g] for g in GROUP_SAID if g in set(drawn["group"])]
    fig_title(fig, f"Effects against {against}: " + ", ".join(groups), fontsize=9)
    return save_figure(fig, png, pdf)


def _nothing_estimated(rows: pd.DataFrame) -> str:
    """Why the forest is empty: no row, or no row with an effect (the notes' distinct parts, the
    most shared first)."""
    if rows.empty:
        return "no effect to show: primary.csv and diagnostics.csv have no row"
    notes = rows["note"].dropna().astype(str) if "note" in rows else pd.Series(dtype=str)
    parts = Counter(p.strip() for n in notes.unique() for p in n.split(";") if p.strip())
    why = "; ".join(p for p, _ in parts.most_common())
    why = why or "every effect is undefined in primary.csv and diagnostics.csv"
    return f"no effect was estimated ({len(rows)} rows, none with a value): {why}"


def _forest_verdicts(ax: plt.Axes, rows: pd.DataFrame, ys: np.ndarray) -> None:
    """At the right of each claim's first row per question (and each partial row): the verdict
    and the power at Δ."""
    keys = ["group", "name", "question"] if "question" in rows else ["group", "name"]
    first = rows[rows["group"] != "partial"].drop_duplicates(keys)
    for r in [*first.itertuples(), *rows[rows["group"] == "partial"].itertuples()]:
        said = f"{r.verdict}\n{r.power}" if r.power else r.verdict
        if said:
            ax.annotate(
                said,
                (1.02, ys[r.Index]),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                va="center",
            )


def _forest_axis(drawn: pd.DataFrame) -> str:
    """The x axis' label, naming the interval and the band only where drawn."""
    said = "effect β (correlation of the seeds' deviations)"
    if (np.isfinite(drawn["low"].astype(float)) & np.isfinite(drawn["high"].astype(float))).any():
        said += f" with its {100 * CONFIDENCE:g} % interval"
    if np.isfinite(drawn["delta"].astype(float)).any():
        said += ", shaded ±Δ of its view"
    groups = set(drawn["group"])
    signs = ["primary claims in the paper's sign (> 0 as claimed)"] if "primary" in groups else []
    signs += ["WeightWatcher's as measured"] if "diagnostics" in groups else []
    return said + (";\n" + ", ".join(signs) if signs else "")


def figure_horizon_profile(
    table: pd.DataFrame, sesoi_co: float, horizon: float, png: str | None, pdf: str | None = None
) -> plt.Figure:
    """Each primary claim's β_co with its interval per horizon H (``horizons.horizon_profile``),
    beyond the clock (filled) and beyond the norm (hollow), the band ±Δ_co shaded and the
    registered H marked; exploratory: the registered H decides. A claim with no β_co at any H
    says why in its panel (the table's notes); the legend names the views drawn."""
    claims = list(dict.fromkeys(table["feature"])) if len(table) else []
    n = max(len(claims), 1)
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 3.8), squeeze=False, layout="constrained")
    axes = axes[0]
    if not claims:
        say_why(
            axes[0],
            "no co-movement to profile: no primary claim names its models and signs in "
            "primary.csv (a claim that could not be measured names none)",
        )
        return save_figure(fig, png, pdf)
    for ax, feature in zip(axes, claims, strict=True):
        rows = table[table["feature"] == feature]
        name = NAMES.get(feature, _label(feature))
        if not np.isfinite(rows["effect"].astype(float)).any():
            notes = "; ".join(dict.fromkeys(rows["note"].dropna().astype(str))) or "undefined"
            say_why(ax, f"{name}: no β_co at any horizon — {notes}", fontsize=8)
            continue
        _horizon_panel(ax, rows, sesoi_co, horizon)
        ax.set_title(name, fontsize=9)
    axes[0].set_ylabel(f"β_co with its {100 * CONFIDENCE:g} % interval", fontsize=8)
    drawn = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if drawn:
        drawn[0].legend(fontsize=7, loc="best")
    fig_title(
        fig,
        f"Co-movement at each horizon (exploratory; the registered H = {horizon:g}, dashed, "
        f"decides); ±Δ_co = {sesoi_co:g} shaded",
        fontsize=9,
    )
    return save_figure(fig, png, pdf)


def _horizon_panel(ax: plt.Axes, rows: pd.DataFrame, sesoi_co: float, horizon: float) -> None:
    """One claim's β_co per H: beyond the clock (filled, C0) and the norm (hollow, C1)."""
    hs = sorted(rows["horizon"].unique())
    ax.axhspan(-sesoi_co, sesoi_co, color="0.9", lw=0)
    ax.axhline(0, color="k", lw=0.6)
    ax.axvline(horizon, color="0.5", lw=0.8, ls="--")
    for shift, cond, hollow in ((-0.06, "co_clock", False), (0.06, "co_scale", True)):
        part = rows[rows["condition"] == cond].set_index("horizon").reindex(hs)
        x = np.asarray(hs, float) * np.exp(shift)
        ok = np.isfinite(part["effect"].to_numpy(float))
        if not ok.any():
            continue
        colour = "C1" if hollow else "C0"
        lo, hi = part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float)
        for xi, a, b in zip(x[ok], lo[ok], hi[ok], strict=True):
            ax.plot([xi, xi], [a, b], color=colour, lw=1.4)
        ax.plot(
            x[ok],
            part["effect"].to_numpy(float)[ok],
            "o",
            color=colour,
            mfc="white" if hollow else None,
            label="beyond the norm" if hollow else "beyond the clock",
        )
    ax.set_xscale("log")
    ax.minorticks_off()  # the horizons alone label the axis
    ax.set_xticks(hs, [f"{h:g}" for h in hs])
    ax.set_xlabel("horizon H (steps)", fontsize=8)
