"""Neural persistence against its own scale control (Girrbach et al., TMLR 2023).

NP of a layer is close to a function of the variance of its normalised weights |W| / max|W|
(``np_wvar``; the checkpoint table's ``np_wvar_mean`` is its mean over the layers NP is averaged
over). For each NP feature, per model and pooled over models: the between-seed contrast with loss
(``seed_contrast``), and the same contrast partial on the weight variance's deviations (the
feature re-regressed on it under every permutation of seed labels: the partial contrast the
calibration suite checks with the L2 norm as the conditioning variable). NP beats its weight
variance when the partial p < α with the plain contrast's sign.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    POOLED,
    contrast_cell,
    model_matrices,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.stats import ALPHA
from topotrain.config import LOSSES

WVAR = "np_wvar_mean"
NP_FEATURES = ["np_mean", "np_p2_mean", "np_rieck_mean"]
COLUMNS = [
    "model",
    "feature",
    "target",
    "n_seeds",
    "plain_rho",
    "plain_p",
    "rho",
    "p",
    "beats_wvar",
    "note",
]


def _beats(plain_rho: float, plain_p: float, rho: float, p: float, alpha: float) -> bool:
    return bool(p < alpha and plain_p < alpha and np.sign(rho) == np.sign(plain_rho))


def _model_rows(df, features, targets, nulls) -> list[dict]:
    rows = []
    for model, g in df.groupby("model", sort=False):
        mats = model_matrices(g, sorted({*features, *targets, WVAR}))
        perms = seed_permutations(g["seed"].nunique())
        for feature in features:
            for target in targets:
                plain, pn = contrast_cell(mats, feature, target, "seed_contrast", perms)
                part, qn = contrast_cell(mats, feature, target, PARTIAL, perms, cond=WVAR)
                nulls.setdefault((feature, target), []).append((pn, qn))
                rows.append(
                    {
                        "model": model,
                        "feature": feature,
                        "target": target,
                        "n_seeds": g["seed"].nunique(),
                        "plain_rho": plain["rho"],
                        "plain_p": plain["p"],
                        "rho": part["rho"],
                        "p": part["p"],
                        "note": part["note"] or plain["note"],
                    }
                )
    return rows


def np_variance_table(df: pd.DataFrame, targets=LOSSES, alpha: float = ALPHA) -> pd.DataFrame:
    """COLUMNS per (model, NP feature, target), then pooled over models; an empty table with a
    note when the checkpoint table has no ``np_wvar_mean`` (records of an older topotrain)."""
    features = [f for f in NP_FEATURES if f in df]
    targets = [t for t in targets if t in df]
    if WVAR not in df or not features:
        note = f"no {WVAR} column: rerun weight_topology (snakemake --forcerun weight_topology)"
        return pd.DataFrame([dict.fromkeys(COLUMNS, np.nan) | {"note": note}], columns=COLUMNS)
    nulls: dict = {}
    rows = _model_rows(df, features, targets, nulls)
    for (feature, target), per_model in nulls.items():
        plain = pooled_row([n for n, _ in per_model], "seed_contrast", "two-sided")
        part = pooled_row([n for _, n in per_model], PARTIAL, "two-sided", cond=WVAR)
        rows.append(
            {
                "model": POOLED,
                "feature": feature,
                "target": target,
                "n_seeds": df["seed"].nunique(),
                "plain_rho": plain["rho"],
                "plain_p": plain["p"],
                "rho": part["rho"],
                "p": part["p"],
                "note": part["note"],
            }
        )
    out = pd.DataFrame(rows)
    out["beats_wvar"] = [
        _beats(*vals, alpha) for vals in out[["plain_rho", "plain_p", "rho", "p"]].to_numpy(float)
    ]
    return out[COLUMNS]
