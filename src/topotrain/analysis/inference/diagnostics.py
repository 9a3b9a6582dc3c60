"""Topology beside the field's weight diagnostics: one row per topological feature and per
WeightWatcher metric (``ww_*_mean``), pooled over the study's models, from the associations
table: raw ρ with the loss, the between-seed effect with its 95 % interval in the clock's view
(``seed_contrast``) and the scale's (``seed_contrast_l2``), whether each beats them (exact p < α
with the raw ρ's sign), and the verdict words of ``verdicts.decide_claim`` at Δ: the feature
tracks the loss beyond both ("beyond clock and scale"), the effect is shown below Δ in either view
("below Δ"), or neither ("inconclusive"). Every row is exploratory (no correction across features).

Beyond α (WeightWatcher's) is not here: the calibration suite measured the partial contrast on α and
it fails when α is a noisy measurement of what it stands for (docs/calibration.md, "The partial
contrast on WeightWatcher's α"); beyond the weight variance and the gradient norm wait for theirs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.seed_contrast import POOLED
from topotrain.analysis.inference.seed_effect import effect_text
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    REPRODUCED,
    REPRODUCED_SMALL,
    decide_claim,
)

KINDS = ("topological", "weightwatcher")
WORDS = {  # decide_claim's verdicts as words for one exploratory feature
    REPRODUCED: "beyond clock and scale",
    REPRODUCED_SMALL: "beyond clock and scale, below Δ",
    ARTEFACT: "below Δ in raw ρ's sign",
}
VIEWS = {"clock": "seed_contrast", "scale": "seed_contrast_l2"}
DIAGNOSTICS_COLUMNS = [
    "feature",
    "kind",
    "target",
    "raw_rho",
    *[f"{c}_{v}" for v in VIEWS for c in ("effect", "effect_ci_low", "effect_ci_high", "p")],
    "beats_clock",
    "beats_scale",
    "verdict",
]


def diagnostics_table(assoc: pd.DataFrame, sesoi: float, target: str = "val_loss") -> pd.DataFrame:
    """DIAGNOSTICS_COLUMNS for every feature of KINDS in ``assoc`` (ASSOCIATION_COLUMNS) and
    ``target``: raw ρ averaged over runs, the pooled contrasts' effects, p's and flags, the verdict
    at Δ = ``sesoi``; topological features first, then WeightWatcher's, each by |raw ρ|."""
    rows = assoc[(assoc["target"] == target) & assoc["kind"].isin(KINDS)]
    raw = rows[rows["view"] == "raw"].groupby("feature", sort=False)["rho"].mean()
    pooled = rows[rows["model"] == POOLED].set_index(["feature", "view"])
    out = []
    for feature, kind in rows[["feature", "kind"]].drop_duplicates().itertuples(index=False):
        row = {"feature": feature, "kind": kind, "target": target, "raw_rho": raw.get(feature)}
        for name, view in VIEWS.items():
            cell = pooled.loc[(feature, view)] if (feature, view) in pooled.index else None
            for col in ("effect", "effect_ci_low", "effect_ci_high", "p"):
                row[f"{col}_{name}"] = float(cell[col]) if cell is not None else np.nan
            row[f"beats_{name}"] = bool(cell is not None and cell[f"beats_{name}"])
        row["verdict"] = verdict(row, sesoi)
        out.append(row)
    table = pd.DataFrame(out, columns=DIAGNOSTICS_COLUMNS)
    order = table.assign(
        _kind=table["kind"].map(KINDS.index), _rho=-table["raw_rho"].abs()
    ).sort_values(["_kind", "_rho"], kind="stable")
    return table.loc[order.index].reset_index(drop=True)


def verdict(row: dict, sesoi: float) -> str:
    """``decide_claim`` of one feature in the sign of its raw ρ: it rejects when it beats both
    the clock and the scale; the effect is shown small when an interval's end on the raw ρ's side
    lies within Δ of 0 (|β| < Δ there); inconclusive when no contrast is defined."""
    if not np.isfinite(row["p_clock"]) or not np.isfinite(row["p_scale"]):
        return "inconclusive"
    sign = np.sign(row["raw_rho"]) or 1.0
    ends = [row[f"effect_ci_{'high' if sign > 0 else 'low'}_{v}"] for v in VIEWS]
    decided = decide_claim(
        row["beats_clock"] and row["beats_scale"], [sign * e for e in ends], sesoi
    )
    return WORDS.get(decided, "inconclusive")


def alpha_sentence(table: pd.DataFrame, feature: str = "ww_alpha_mean") -> str:
    """One sentence, with its numbers, on WeightWatcher's α as a training monitor (its GitHub issue
    #307's question): its raw ρ with the loss and whether it tracks the loss beyond the clock."""
    if feature not in set(table["feature"]):
        return "WeightWatcher's α is not in this study's tables (topology.weightwatcher is off)."
    r = table.set_index("feature").loc[feature]
    effect = effect_text(r["effect_clock"], r["effect_ci_low_clock"], r["effect_ci_high_clock"])
    beyond = "does" if r["beats_clock"] else "does not"
    return (
        f"As a training monitor, WeightWatcher's α (mean over layers) follows the {r['target']} "
        f"with raw ρ {r['raw_rho']:.2f} over each run's checkpoints, but between seeds at the same "
        f"step its effect is {effect} (exact p {r['p_clock']:.3g}): it {beyond} track the loss "
        f"beyond the training clock; verdict: {r['verdict']}."
    )
