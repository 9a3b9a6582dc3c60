"""The grokking control in the report: per-seed curves and the "Positive control" section, its
sentences templates/control/*.md filled with the numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.config import ALPHA
from topotrain.config.constants import SEEDS_FOR_INTERVAL
from topotrain.report import prose
from topotrain.report.markdown import interval_text, to_markdown
from topotrain.report.plots import plt, save_figure
from topotrain.topology import registry

TP0 = registry.of_short("TP0")  # the GPT study's claim the control's power is set beside
# the checkpoint features the control's monitors name: WeightWatcher's α, the LLC
WW_ALPHA, LLC = (
    next(f.name for f in registry.entries("checkpoint") if f.kind == kind)
    for kind in ("weightwatcher", "llc")
)
CURVES = {  # column -> legend label, each scaled to [0, 1] per seed
    "test_acc": "test accuracy",
    "emb_h1_total": "embedding H1 total persistence",
    "weight_l2": "weight L2 norm",
    "fourier_top5": "Fourier measure (top-5 share)",
}
LEAD_COLUMNS = [
    "feature",
    "kind",
    "role",
    "n_grokked",
    "median_lead",
    "lead_p",
    "onset_rho",
    "onset_p",
    "contrast_rho",
    "contrast_p",
    "partial_norm_p",
    "partial_fourier_p",
    "co_p",
    "co_norm_p",
    "lead_minus_norm",
    "lead_minus_fourier",
]


def scaled(values) -> np.ndarray:
    """(v − min) / (max − min) over the finite values; zeros for a constant series; NaN stays."""
    v = np.asarray(values, float)
    span = np.nanmax(v) - np.nanmin(v)
    return (v - np.nanmin(v)) / span if span > 0 else np.where(np.isnan(v), np.nan, 0.0)


def control_curves(
    df: pd.DataFrame, seeds: pd.DataFrame, png: str | None, pdf: str | None
) -> plt.Figure:
    """One panel per seed: CURVES scaled to [0, 1], the grokking step as a dashed line."""
    groups = list(df.sort_values("step").groupby("seed", sort=True))
    cols = min(4, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False, sharex=True, sharey=True
    )
    grok = seeds.drop_duplicates("seed").set_index("seed")["grokking_step"]
    for ax, (seed, g) in zip(axes.ravel(), groups, strict=False):
        for column, label in CURVES.items():
            if column in g:
                ax.plot(g["step"], scaled(g[column]), label=label, lw=1.2)
        step = grok.get(seed)
        if pd.notna(step):
            ax.axvline(step, color="k", ls="--", lw=0.8)
        ax.set_title(f"seed {seed}" + ("" if pd.notna(step) else " (never groks)"), fontsize=9)
    for ax in axes.ravel()[len(groups) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=6, loc="center right")
    fig.supxlabel("step")
    fig.supylabel("scaled to [0, 1] per seed")
    fig.tight_layout()
    return save_figure(fig, png, pdf)


def _fmt_p(p: float) -> str:
    return "undefined" if not np.isfinite(p) else f"{p:.2g}"


KNOWN = "fourier_top5"  # the known effect: Nanda et al.'s progress measure, in closed form


def _contrast(rho: float, p: float) -> str:
    return f"ρ = {rho:.2f}, exact p = {_fmt_p(p)}"


def _interval(row: pd.Series, prefix: str) -> str:
    ends = [row.get(f"{prefix}{c}", np.nan) for c in ("effect", "effect_ci_low", "effect_ci_high")]
    if not np.isfinite(ends).all():
        return "no interval"
    return interval_text(*ends, lambda v: f"{v:.2f}")


def comove_clause(leads: pd.DataFrame, feature: str) -> str:
    """The feature's co-movement with test loss (exploratory, beside the verdicts): β_co
    [interval] plain and beyond the norm; '' where the table has none."""
    rows = leads.set_index("feature")
    if feature not in rows.index or "co_effect" not in rows:
        return ""
    row = rows.loc[feature]
    plain, norm = _interval(row, "co_"), _interval(row, "co_norm_")
    return prose.render("control/comove", plain=plain, norm=norm)


def power_sentence(
    verdicts: pd.DataFrame, leads: pd.DataFrame, primary: pd.DataFrame | None, seeds: int
) -> str:
    """What the control (``seeds`` seeds) says about the power behind the GPT study's negative
    findings: whether the between-seed contrast finds the known effect (the Fourier measure) and
    the pre-named topological feature here, beside what it gives TP0 in the GPT study."""
    row = verdicts.iloc[0]  # the positive control's own claim (emb_h1_total)
    found = row["verdict"] == "reproduced"
    contrast = _contrast(row["statistic"], row["p"])
    finds = "finds" if found else "does not find"
    parts = [prose.render("control/power_h1", finds=finds, contrast=contrast, note=row["note"])]
    if "feature" in verdicts:
        parts.append(comove_clause(leads, row["feature"]))
    known = leads.set_index("feature").loc[KNOWN] if KNOWN in set(leads["feature"]) else None
    works = known is not None and known["contrast_p"] < ALPHA
    if known is not None:
        contrast = _contrast(known["contrast_rho"], known["contrast_p"])
        finds = "finds" if works else "does not find"
        parts.append(prose.render("control/power_known", finds=finds, contrast=contrast))
    if primary is not None and TP0 in set(primary.get("feature", [])):
        tp0 = primary.set_index("feature").loc[TP0]
        parts.append(
            prose.render(
                "control/power_gpt",
                models=len(str(tp0["models"]).split(";")),
                p_clock=_fmt_p(tp0["p_clock"]),
                p_scale=_fmt_p(tp0["p_scale"]),
                p_bh=_fmt_p(tp0["p_bh"]),
            )
        )
    if works:  # the test finds the known effect: the GPT study's power is what limits it
        parts.append(prose.render("control/power_shown", seeds=seeds))
    else:
        parts.append(prose.render("control/power_not_shown"))
    return "; ".join(filter(None, parts)) + "."


def _found(row: pd.Series, alpha: float) -> bool:
    return bool(np.isfinite(row["contrast_p"]) and row["contrast_p"] < alpha)


def _said(row: pd.Series, alpha: float) -> str:
    ends = (row["effect"], row["effect_ci_low"], row["effect_ci_high"])
    effect = (
        f"effect {interval_text(*ends, lambda v: f'{v:.2f}')}"
        if np.isfinite(ends[0]) and np.isfinite(ends[1])
        else prose.render("control/no_effect_interval")
    )
    return prose.render(
        "control/tracks",
        tracks="tracks" if _found(row, alpha) else "does not track",
        rho=f"{row['contrast_rho']:.2f}",
        p=f"{row['contrast_p']:.2g}",
        effect=effect,
    )


def monitor_sentence(table: pd.DataFrame, alpha: float = ALPHA) -> str:
    """One sentence, with its numbers: the Fourier measure's between-seed contrast (the known
    answer) beside WeightWatcher's α's, and whether α's survives the Fourier measure."""
    rows = table.set_index("feature")
    if KNOWN not in rows.index:
        return prose.render("control/monitor_no_fourier")
    known = rows.loc[KNOWN]
    text = prose.render("control/monitor_known", said=_said(known, alpha))
    if WW_ALPHA not in rows.index:
        return prose.render("control/monitor_no_alpha", known=text)
    a = rows.loc[WW_ALPHA]
    if not _found(known, alpha):
        judged = prose.render("control/judged_cannot")
    elif _found(a, alpha):
        judged = prose.render("control/judged_agrees")
    else:
        judged = prose.render("control/judged_misses")
    p = f"p {a['p_fourier']:.2g}" if np.isfinite(a["p_fourier"]) else "undefined"
    return prose.render(
        "control/monitor",
        known=text,
        said=_said(a, alpha),
        raw_rho=f"{a['raw_rho']:.2f}",
        beyond=prose.render("control/beyond_fourier", p=p),
        judged=judged,
    )


def llc_sentences(table: pd.DataFrame, primary: str | None, alpha: float = ALPHA) -> str:
    """Two sentences, with their numbers, where the control has the LLC (``baselines.llc``):
    whether it moves with each seed's test loss beyond the weight norm and the Fourier measure,
    and whether the control's ``primary`` embedding-topology feature (its own claim's) goes
    beyond it; '' without the LLC."""
    rows = table.set_index("feature")
    if LLC not in rows.index:
        return ""
    r = rows.loc[LLC]
    both = _found(r, alpha) and all(bool(r.get(f"beats_{n}", False)) for n in ("norm", "fourier"))
    text = prose.render(
        "control/llc",
        said=_said(r, alpha),
        moves="moves" if both else "does not move",
        rho_norm=f"{r.get('rho_norm', np.nan):.2f}",
        p_norm=_fmt_p(r.get("p_norm", np.nan)),
        rho_fourier=f"{r.get('rho_fourier', np.nan):.2f}",
        p_fourier=_fmt_p(r.get("p_fourier", np.nan)),
    )
    if primary not in rows.index:
        return text
    e = rows.loc[primary]
    split_r, p = e.get("split_r_llc", np.nan), e.get("p_llc", np.nan)
    if np.isfinite(p):
        goes = "goes" if bool(e.get("beats_llc", False)) else "does not go"
        result = f"ρ {e['rho_llc']:.2f}, exact p {_fmt_p(p)} (halves agree r = {split_r:.2f})"
        result += f": it {goes} beyond the LLC"
    elif np.isfinite(split_r):
        result = f"undefined (halves agree r = {split_r:.2f} < 0.5: not calibrated there)"
    else:
        result = "undefined (no LLC halves at the checkpoints every seed shares)"
    return text + " " + prose.render("control/beyond_llc", feature=primary, result=result)


def control_section(
    tables: dict[str, str], primary: pd.DataFrame | None, np_variance: pd.DataFrame | None
) -> str:
    """The report's Positive control body (figure, verdicts, leads, NP against its variance):
    templates/control/section.md filled."""
    verdicts = pd.read_csv(tables["control_verdicts_csv"])
    leads = pd.read_csv(tables["control_csv"])
    seeds = pd.read_csv(tables["control_seeds_csv"]).drop_duplicates("seed")
    never = seeds[seeds["grokking_step"].isna()]["seed"].tolist()
    groks = ", ".join(
        f"{int(s)}: {int(g)}"
        for s, g in seeds.dropna(subset=["grokking_step"])[["seed", "grokking_step"]].to_numpy()
    )
    figure = Path(tables["control_curves_png"]).name
    between = ""
    if tables.get("control_between_seeds_png"):  # what the control's between-seed test permutes
        name = Path(tables["control_between_seeds_png"]).name
        between = "\n\n" + prose.render("control/between_seeds", figure=name)
    variance = ""
    if np_variance is not None:
        pooled = np_variance[np_variance["model"] == "pooled"]
        table = to_markdown(pooled.drop(columns=["model"]))
        variance = "\n\n" + prose.render("control/np_variance", table=table)
    diagnostics, own = "", verdicts.iloc[0].get("feature") if len(verdicts) else None
    if tables.get("control_diagnostics_csv"):  # written by control_analysis beside the others
        diag = pd.read_csv(tables["control_diagnostics_csv"])
        diagnostics = "\n\n" + prose.render(
            "control/diagnostics",
            sentence=" ".join(filter(None, [monitor_sentence(diag), llc_sentences(diag, own)])),
            table=to_markdown(diag),
            min_seeds=SEEDS_FOR_INTERVAL,
        )
    text = prose.render(
        "control/section",
        figure=figure,
        between=between,
        groks=groks or "none",
        never=" " + prose.render("control/never", seeds=never) if never else "",
        power=power_sentence(verdicts, leads, primary, len(seeds)),
        verdicts=to_markdown(verdicts.drop(columns=["rule"])),
        rules=prose.lines([f"- *{c}*: {r}" for c, r in verdicts[["claim", "rule"]].to_numpy()]),
        leads=to_markdown(leads[[c for c in LEAD_COLUMNS if c in leads]]),
        np_variance=variance,
        diagnostics=diagnostics,
    )
    return text + named_section(tables) + "\n"


def named_section(tables: dict[str, str]) -> str:
    """The control's named hypotheses on its fresh seeds (``confirm.hypotheses`` with a kind:
    the LLC's findings), from its confirmation table when the report has one; '' otherwise."""
    from topotrain.report.confirm import named_body, read_confirmation

    if not tables.get("control_confirmation_csv"):
        return ""
    body = named_body(read_confirmation(tables["control_confirmation_csv"]))
    return f"\n### Named hypotheses on fresh seeds\n\n{body}" if body else ""
