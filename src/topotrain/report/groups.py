"""A group of your runs (seeds of one recipe) in REPORT.md: its seeds, the steps they share,
what p can reach with them, the pre-named family's verdicts and the exploratory rows that reject;
beside each row's level effects, the co-movement view's β_co [interval] (exploratory)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from topotrain.config import ALPHA
from topotrain.report import prose
from topotrain.report.markdown import interval_text, to_markdown

FAMILY_COLUMNS = [
    "feature",
    "target",
    "sign",
    "rho_clock",
    "p_clock",
    "effect_clock",
    "rho_scale",
    "p_scale",
    "effect_scale",
    "effect_co_clock",
    "effect_co_scale",
    "p_bh",
    "verdict",
]


def _effect(row: pd.Series, view: str) -> str:
    e = row.get(f"effect_{view}", np.nan)
    low, high = row.get(f"effect_{view}_ci_low"), row.get(f"effect_{view}_ci_high")
    if view.startswith("co_") and pd.isna(row.get("co_target")):
        return "none (no val_loss)"
    if not np.isfinite(e):
        return "no interval (under 40 seed orders)"
    return interval_text(e, low, high, lambda v: f"{v:.2f}")


def _shown(rows: pd.DataFrame) -> pd.DataFrame:
    shown = rows.copy()
    for view in ("clock", "scale", "co_clock", "co_scale"):
        shown[f"effect_{view}"] = [_effect(r, view) for _, r in rows.iterrows()]
    return shown[FAMILY_COLUMNS]


def group_section(
    group: str,
    members: pd.DataFrame,
    contrasts: pd.DataFrame,
    notes: Sequence[str],
    power: str,
    checked: Sequence[str],
    primary: Sequence,
) -> str:
    """templates/groups/section.md filled."""
    sizes = members.groupby("model", sort=False).agg(
        seeds=("seed", "nunique"), shared=("shared_steps", "first")
    )
    steps = "; ".join(
        f"{m}: {int(r.seeds)} seeds share {int(r.shared)} steps" for m, r in sizes.iterrows()
    )
    family = contrasts[contrasts["role"] == "primary"]
    if len(family):
        family_text = prose.render("groups/family", group=group, table=to_markdown(_shown(family)))
    else:
        family_text = prose.render("groups/no_family", group=group)
    explore = contrasts[contrasts["role"] == "exploratory"]
    both = explore[explore["p"] < ALPHA]  # p < α in both views, of one sign (claim_p)
    if len(both):
        exploratory = to_markdown(_shown(both).drop(columns=["p_bh", "verdict"]))
    else:
        exploratory = "None."
    return (
        prose.render(
            "groups/section",
            group=group,
            n_runs=len(members),
            members=to_markdown(members),
            steps=steps,
            notes=prose.lines([f"- {n}" for n in notes]),
            power=power,
            checked=", ".join(checked)
            if checked
            else "nothing (no metadata, config.json or trainer_state.json)",
            family=family_text,
            n_explore=len(explore),
            n_both=len(both),
            exploratory=exploratory,
        )
        + "\n"
    )
