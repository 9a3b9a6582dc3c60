"""The report's section "Confirmed on fresh seeds": per confirmed branch, the hypotheses frozen on
the discovery seeds and their test on the confirmation seeds, the two effects side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.config import CONFIDENCE
from topotrain.report import prose
from topotrain.report.markdown import Body, format_cell, to_markdown

HEADING, TEXT = prose.section("confirmed")  # templates/sections/confirmed.md
BRANCHES = {"control": "Positive control (grokking)", "spine": "GPT study"}
NOTHING = prose.render("confirm/nothing")
REVERSED = "reversed"  # confirmation.confirm's verdict for a hypothesis refuted in the other sign


def seed_list(text) -> str:
    """'0;1;2;3' → '0–3'; other lists comma-separated; '' for none."""
    seeds = sorted(int(s) for s in str(text).split(";") if s.strip()) if pd.notna(text) else []
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def with_interval(effect: float, low: float, high: float) -> str:
    """'0.42 [0.21, 0.6]', the effect alone without an interval, '–' without an effect."""
    if not np.isfinite(effect):
        return "–"
    text = format_cell(float(effect), 2)
    if np.isfinite(low) or np.isfinite(high):
        text += f" [{format_cell(float(low), 2)}, {format_cell(float(high), 2)}]"
    return text


def confirmation_view(conf: pd.DataFrame) -> pd.DataFrame:
    """The report's columns of a confirmation table: discovery and confirmation effects side by
    side, p, p_bh, p_bh of the same test in the other sign and the verdicts at Δ, Δ/2, 2Δ."""
    found = ["discovery_effect", "discovery_effect_ci_low", "discovery_effect_ci_high"]
    again = ["effect", "effect_ci_low", "effect_ci_high"]
    out = conf[["feature", "target", "sign", "source", "view"]].copy()
    out["sign"] = [f"{int(s):+d}" for s in conf["sign"]]
    level = f"[{100 * CONFIDENCE:g} %]"
    out[f"discovery effect {level}"] = [with_interval(*r) for r in conf[found].to_numpy(float)]
    out[f"confirmation effect {level}"] = [with_interval(*r) for r in conf[again].to_numpy(float)]
    out["p"], out["p_bh"] = conf["p"].astype(float), conf["p_bh"].astype(float)
    out["p_bh, other sign"] = conf["p_bh_reversed"].astype(float)
    out["verdict"] = conf["verdict"]
    out["at Δ/2"], out["at 2Δ"] = conf["verdict_half_sesoi"], conf["verdict_double_sesoi"]
    return out


def named_rows(conf: pd.DataFrame) -> pd.Series:
    """The rows of a confirmation table that are named hypotheses with a kind."""
    if "kind" not in conf:
        return pd.Series(False, index=conf.index)
    return conf["kind"].fillna("").astype(str).ne("")


def named_view(conf: pd.DataFrame) -> pd.DataFrame:
    """The named hypotheses with a kind (``named_rows``): name, test, fresh seeds, the discovery
    p and effect [interval] beside the confirmation's, p_bh and the verdicts at Δ, Δ/2, 2Δ."""
    rows = conf[named_rows(conf)]
    found = ["discovery_effect", "discovery_effect_ci_low", "discovery_effect_ci_high"]
    again = ["effect", "effect_ci_low", "effect_ci_high"]
    out = pd.DataFrame({"hypothesis": rows["name"], "kind": rows["kind"]})
    out["feature ~ target (sign)"] = [
        f"{f} ~ {t} ({int(s):+d})" for f, t, s in rows[["feature", "target", "sign"]].to_numpy()
    ]
    out["test"] = rows["statistic"]
    out["fresh seeds"] = [seed_list(s) for s in rows["seeds"]]
    out["discovery p"] = rows["discovery_p"].astype(float)
    out["discovery effect"] = [with_interval(*r) for r in rows[found].to_numpy(float)]
    out["ρ"] = [
        float(r.get(f"rho_{r['view']}", np.nan)) if pd.notna(r["view"]) else np.nan
        for _, r in rows.iterrows()
    ]
    out["p"], out["p_bh"] = rows["p"].astype(float), rows["p_bh"].astype(float)
    out["effect"] = [with_interval(*r) for r in rows[again].to_numpy(float)]
    out["verdict"] = rows["verdict"]
    out["at Δ/2"], out["at 2Δ"] = rows["verdict_half_sesoi"], rows["verdict_double_sesoi"]
    return out


def named_body(conf: pd.DataFrame) -> str:
    """The named hypotheses' paragraph and table, '' when the table has none."""
    if not named_rows(conf).any():
        return ""
    return prose.render("confirm/named", table=to_markdown(named_view(conf), digits=3))


def branch_body(conf: pd.DataFrame) -> str:
    """One branch's part: what was frozen and from what, what the fresh seeds say, the table."""
    if conf.empty:
        return NOTHING + "\n"
    first = conf.iloc[0]
    sources = conf["source"].value_counts()
    verdicts = ", ".join(f"{n} {v}" for v, n in conf["verdict"].value_counts().items())
    sha = str(first["discovery_table_sha256"])
    hits, named = sources.get("hit", 0), sources.get("named", 0)
    head = (
        f"{len(conf)} {'hypothesis' if len(conf) == 1 else 'hypotheses'} ({hits} "
        f"{'hit' if hits == 1 else 'hits'}, {named} named) frozen on seeds "
        f"{seed_list(first['discovery_seeds'])} "
        f"(discovery table sha256 `{sha[:16]}…`), tested on seeds {seed_list(first['seeds'])} "
        f"at Δ = {format_cell(float(first['sesoi']))}: {verdicts}."
    )
    if (conf["verdict"] == REVERSED).any():
        head += "\n\n" + prose.render("confirm/reversed")
    named = named_rows(conf)
    parts = [head]
    if not named.all():
        parts += ["", to_markdown(confirmation_view(conf[~named]), digits=3)]
    if named.any():
        parts += ["", named_body(conf)]
    return "\n".join(parts)


def read_confirmation(path) -> pd.DataFrame:
    """A confirmation table as written (seeds, hashes and the named hypotheses' words as text)."""
    text = {c: str for c in ("seeds", "discovery_seeds", "discovery_table_sha256")}
    text |= {c: str for c in ("name", "kind", "beyond", "statistic")}
    return pd.read_csv(path, dtype=text)


def confirm_sections(tables: dict[str, str]) -> list[tuple[str, str, Body]]:
    """[(HEADING, TEXT, body)] when a branch is confirmed (``<branch>_confirmation_csv`` among
    the report's tables), else []."""
    parts = []
    for branch, label in BRANCHES.items():
        if f"{branch}_confirmation_csv" in tables:
            conf = read_confirmation(tables[f"{branch}_confirmation_csv"])
            parts += [f"### {label}\n", branch_body(conf)]
    return [(HEADING, TEXT, Body("\n".join(parts)))] if parts else []
