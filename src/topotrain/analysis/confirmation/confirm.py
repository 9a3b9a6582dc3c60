"""Discovery, then confirmation on fresh seeds: the exploratory hits, frozen, then tested once.

Discovery (``hypotheses_table``) reads only the discovery seeds' feature table. A **hit** is a
(feature, target) cell whose plain between-seed contrast and every partial view its branch reports
(the GPT study: the scale ``l2_norm_mean``; the control: the weight norm and the Fourier measure)
have two-sided p < α, pooled over models with signs +1 (as ``associations``), all of one sign; a
view partial on the feature itself does not exist and is left out. That sign is **frozen**. Named
hypotheses (``confirm.hypotheses``) come with their own sign. Each row keeps, per view and in the
frozen sign (ρ > 0 and effect > 0: the frozen direction), the discovery ρ, two-sided p and effect
[95 % interval] (``seed_effect``), the discovery seeds and the sha256 of the discovery table.

Confirmation (``confirmation_table``) reads those rows and the confirmation seeds' table only,
and tests exactly those rows as one family: per view the pooled contrast one-sided in the frozen
sign; p = the largest over the views (intersection–union: every view must hold);
Benjamini–Hochberg over the family; every view's effect [95 % interval]; the verdict of
``decide_claim`` at Δ (and Δ/2, 2Δ) from the upper ends of the clock's and the scale's (the
control: the norm's) intervals; beside it the discovery effect of the view whose p is the row's.
The same test in the other sign (``p_reversed``, BH over the family as ``p_bh_reversed``) reads
REVERSED when it holds: the frozen direction is refuted, not merely shown small. Both directions
decide by ``signs.holds_in_one_sign`` (every view p < α, every ρ of the one sign).

A named hypothesis with a ``kind`` (name, kind, beyond) is decided by its own test, fixed before
the fresh data, in words of its own (``named``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from topotrain.analysis.confirmation.discovery import (  # noqa: F401  (imported from here)
    BRANCHES,
    HEAD,
    NAMED,
    SCREEN,
    TAIL,
    Branch,
    Design,
    _extra_views,
    design,
    discovery_screen,
    feature_views,
    frozen_views,
    hypotheses_columns,
    hypotheses_table,
    is_hit,
    left_out,
    row_views,
    view_columns,
)
from topotrain.analysis.confirmation.named import (
    NOT_BEYOND,
    beyond_list,
    beyond_test,
    family_level,
    kind_of,
    named_verdict,
    text_of,
    tracks_statistic,
    with_halves,
)
from topotrain.analysis.inference.primary import EFFECT
from topotrain.analysis.inference.signs import holds_in_one_sign
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg
from topotrain.analysis.inference.verdicts import decide_claim

REVERSED = "reversed"  # significant on the fresh seeds in the sign opposite to the frozen one


SUMMARY = ["view", "discovery_p", "discovery_effect", "discovery_effect_ci_low"]
SUMMARY += ["discovery_effect_ci_high", *EFFECT, "p", "p_bh", "rejected", "p_reversed"]
SUMMARY += ["p_bh_reversed", "sesoi", "verdict", "verdict_half_sesoi", "verdict_double_sesoi"]
PROVENANCE = ["discovery_seeds", "discovery_table_sha256", "hypotheses_sha256"]


def confirmation_columns(branch: Branch, extra: Sequence[str] = ()) -> list[str]:
    views = view_columns(branch, extra)
    return [*HEAD, *SUMMARY, *views, *TAIL[:-1], *PROVENANCE, *NAMED, "note"]


def fresh_seeds(hypotheses: pd.DataFrame, df: pd.DataFrame) -> list[int]:
    """The confirmation table's seeds; ValueError when one is among the discovery seeds."""
    seeds = sorted(int(s) for s in df["seed"].unique())
    found = {int(s) for text in hypotheses["seeds"].dropna() for s in str(text).split(";")}
    if shared := sorted(found & set(seeds)):
        raise ValueError(
            f"seeds {shared} are both discovery and confirmation seeds: confirmation needs fresh "
            "seeds (confirm.seeds / confirm.control_seeds)"
        )
    return seeds


def confirmation_table(
    hypotheses: pd.DataFrame,
    df: pd.DataFrame,
    branch: Branch,
    sesoi: float,
    hypotheses_sha256: str = "",
    alpha: float = ALPHA,
    seed: int = 0,
) -> pd.DataFrame:
    """confirmation_columns(branch): one row per hypothesis, tested on ``df`` alone (module
    docstring); rows whose cell cannot be measured keep p NaN, out of the family's BH."""
    fresh_seeds(hypotheses, df)
    cells = [tuple(x) for x in hypotheses[["feature", "target"]].to_numpy()]
    beyond = [c for b in hypotheses.get("beyond", pd.Series(dtype=str)) for c in beyond_list(b)]
    columns = {c for cell in cells for c in cell} | set(filter(None, branch.views.values()))
    side = design(df, sorted(columns | with_halves(beyond)), seed)
    family = len(hypotheses)
    rows = [
        _confirm_row(h, branch, side, df, seed, family, alpha) for _, h in hypotheses.iterrows()
    ]
    out = pd.DataFrame(rows, columns=confirmation_columns(branch, _extra_views(branch, rows)))
    out["p_bh"] = benjamini_hochberg(out["p"].to_numpy(float))
    out["p_bh_reversed"] = benjamini_hochberg(out["p_reversed"].to_numpy(float))
    held, back = (np.array([_one_sign(r, branch, alpha, d) for r in rows], bool) for d in (1, -1))
    either = np.array([kind_of(r) == NOT_BEYOND for r in rows], bool)  # two-sided: no sign
    out["rejected"] = (out["p_bh"].to_numpy(float) < alpha) & (held | either)
    reversed_ = (out["p_bh_reversed"].to_numpy(float) < alpha) & back
    out["sesoi"] = sesoi
    for column, delta in zip(SUMMARY[-3:], (sesoi, sesoi / 2, 2 * sesoi), strict=True):
        out[column] = [
            named_verdict(row, frozen_views(branch, row), delta, rev)
            if kind_of(row)
            else REVERSED
            if rev
            else _verdict(row, branch, delta)
            for rev, (_, row) in zip(reversed_, out.iterrows(), strict=True)
        ]
    out["seeds"] = ";".join(map(str, side.seeds))
    out["models"] = ";".join(side.models)
    out["hypotheses_sha256"] = hypotheses_sha256
    return out


def _confirm_row(
    h: pd.Series,
    branch: Branch,
    side: Design,
    df: pd.DataFrame,
    seed: int,
    family: int = 1,
    alpha: float = ALPHA,
) -> dict:
    """One hypothesis on the confirmation side: every view one-sided in its frozen sign, and
    (p_reversed, p_rev_<view>) in the other sign; a ``not_beyond`` one by its own two-sided
    test (``named.beyond_test``), p_reversed NaN."""
    base = {c: text_of(h.get(c)) for c in HEAD} | {c: h[c] for c in ("feature", "target", "sign")}
    base |= {"discovery_seeds": h["seeds"], "family": family}
    base["discovery_table_sha256"] = h["discovery_table_sha256"]
    kind, beyond = kind_of(h), beyond_list(h.get("beyond"))
    missing = [c for c in (h["feature"], h["target"], *beyond) if c not in df]
    if missing:
        return base | {"note": f"{missing} not in the confirmation table: cannot be measured"}
    views = row_views(branch, h["feature"], beyond)
    if kind == NOT_BEYOND:
        [(view, column)] = views.items()
        level = family_level(family, alpha)
        res = beyond_test(
            side.mats, side.perms, h["feature"], h["target"], view, column, h["sign"], seed, level
        )
        effects = {c: res[f"effect_{view}{c.removeprefix('effect')}"] for c in EFFECT}
        found = {f"discovery_{c}": h[f"effect_{view}{c.removeprefix('effect')}"] for c in EFFECT}
        summary = {"view": view, "p": res[f"p_{view}"], "p_reversed": np.nan}
        return base | res | effects | found | summary | {"discovery_p": h[f"p_{view}"]}
    res = side.test(h["feature"], h["target"], views, h["sign"], "greater", seed)
    ps = [res[f"p_{v}"] for v in views]
    view = list(views)[int(np.argmax(ps))] if np.isfinite(ps).all() else next(iter(views))
    effects = {c: res[f"effect_{view}{c.removeprefix('effect')}"] for c in EFFECT}
    found = {f"discovery_{c}": h[f"effect_{view}{c.removeprefix('effect')}"] for c in EFFECT}
    found["discovery_p"] = _largest([float(h.get(f"p_{v}", np.nan)) for v in views])
    gone = "" if beyond else left_out(branch, h["feature"])
    note = "; ".join(filter(None, [res.pop("note"), gone]))
    other = side.test(h["feature"], h["target"], views, -h["sign"], "greater", seed)
    back = {f"p_rev_{v}": other[f"p_{v}"] for v in views}
    summary = {"view": view, "p": _largest(ps), "p_reversed": _largest(list(back.values()))}
    summary["statistic"] = tracks_statistic(views) if kind else ""
    return base | res | effects | found | back | summary | {"note": note}


def _largest(ps: list[float]) -> float:
    """The intersection–union p: the largest of the views', NaN when one is undefined."""
    return float(np.max(ps)) if np.isfinite(ps).all() else np.nan


def _one_sign(row: dict, branch: Branch, alpha: float, direction: int) -> bool:
    """``holds_in_one_sign`` over a ``_confirm_row``'s views in the frozen sign (direction +1:
    its one-sided p's) or the other (−1: p_rev_), ρ being in the frozen sign; False when the
    cell could not be measured. With BH p < alpha: the row's rejection, or its reversal."""
    views = frozen_views(branch, row)
    ps = [row.get(f"p_{v}" if direction > 0 else f"p_rev_{v}", np.nan) for v in views]
    rhos = [row.get(f"rho_{v}", np.nan) for v in views]
    return holds_in_one_sign(ps, rhos, alpha, sign=direction)


def _verdict(row: pd.Series, branch: Branch, delta: float) -> str:
    rejected = None if pd.isna(row["p"]) else bool(row["rejected"])
    uppers = [row[f"effect_{v}_ci_high"] for v in branch.equivalence]
    return decide_claim(rejected, uppers, delta)


def read_hypotheses(path: str) -> pd.DataFrame:
    """hypotheses.csv as written (the seeds and the hash as text; header only: no rows)."""
    text = {c: str for c in ("seeds", "models", "discovery_table_sha256", "note", "statistic")}
    text |= {c: str for c in ("name", "kind", "beyond")}
    return pd.read_csv(path, dtype=text, keep_default_na=False, na_values=[""])
