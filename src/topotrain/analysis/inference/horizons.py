"""The co-movement's horizon profile (issue 56, item 2; exploratory): each primary claim's β_co
with its 95 % interval at every horizon H of ``HORIZONS``, beyond the clock and beyond the norm,
through the report's own code path (``primary.claim_views`` on ``model_matrices`` at that H).
The registered H (``analysis.horizon``) decides; the others show how the answer depends on it.
An H shorter than the checkpoint spacing, or too long for two moves, has no row values and a note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.primary import CLAIMS, CO_TARGET, SCALE, VIEWS, claim_views
from topotrain.analysis.inference.seed_contrast import (
    HORIZON,
    horizon_lag,
    horizon_note,
    model_matrices,
    seed_permutations,
)

HORIZONS = (25, 50, 100, 200, 400)  # steps: a quarter of the paper's spacing to four times it
CONDITIONS = VIEWS["comove"][1]  # co_clock (beyond the clock), co_scale (beyond the norm)
COLUMNS = [
    "feature",
    "horizon",
    "lag",
    "condition",
    "effect",
    "ci_low",
    "ci_high",
    "p",
    "note",
]


def horizon_profile(
    df: pd.DataFrame, signs: dict[str, dict[str, float]], horizons=HORIZONS, seed: int = 0
) -> pd.DataFrame:
    """COLUMNS, one row per claim (``signs``: feature → model → the paper's sign, ±1) × H ×
    condition: β_co, its equal-tailed 95 % interval and the one-sided p in the claimed signs
    (``claim_views``), and the checkpoints per move (lag; 0: none at that H); where no move
    spans H, the note says why."""
    rows = []
    for feature in (f for f in CLAIMS if f in signs and f in df):
        models = [m for m in signs[feature] if m in set(df["model"])]
        columns = [c for c in (feature, CO_TARGET, SCALE) if c in df]
        if not models or CO_TARGET not in df:
            continue
        parts = [df[df["model"] == m] for m in models]
        perms = [seed_permutations(p["seed"].nunique(), seed) for p in parts]
        claimed = [float(signs[feature][m]) for m in models]
        steps = np.sort(parts[0]["step"].unique()).astype(float)
        base = [model_matrices(p, columns) for p in parts]  # read once; each H sets its own
        for h in horizons:
            mats = [m | {HORIZON: np.asarray(h, float)} for m in base]
            head = {"feature": feature, "horizon": h, "lag": horizon_lag(steps, h)}
            note = horizon_note(mats[0])
            if note:
                rows += [head | {"condition": c, "note": note} for c in CONDITIONS]
                continue
            res = claim_views(mats, perms, claimed, feature, CO_TARGET, seed, CONDITIONS)
            for c in CONDITIONS:
                rows.append(
                    head
                    | {"condition": c, "effect": res[f"effect_{c}"]}
                    | {"ci_low": res[f"effect_{c}_ci_low"], "ci_high": res[f"effect_{c}_ci_high"]}
                    | {"p": res[f"p_{c}"], "note": res.get("note", "")}
                )
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


def signs_from_primary(primary: pd.DataFrame | None) -> dict[str, dict[str, float]]:
    """feature → model → the claimed sign (±1), from primary.csv's models and signs columns."""
    if primary is None or primary.empty:
        return {}
    out = {}
    for row in primary.itertuples(index=False):
        models, signs = str(row.models), str(row.signs)
        if models in ("", "nan") or signs in ("", "nan"):
            continue
        out[row.feature] = dict(
            zip(models.split(";"), (float(s) for s in signs.split(";")), strict=True)
        )
    return out
