"""The design a study ran, the noise of its seed deviations, and seeds chosen up front.

``study_design``: per claim, the models of the feature table where the paper reports p < α (the
primary family's), the fewest seeds of any of them and the fewest checkpoints where every seed has
the feature, the loss and the L2 norm. ``fit_noise``: AR(1) plus a white share of the variance
per series, from the lag-1 and lag-2 autocorrelations of the seed deviations, ρ_h = Σ d_t·d_{t+h} /
Σ d_t² pooled over models and seeds, of the loss, each claim's feature and the L2 norm's own part
(its residual on the loss), and the correlation of the norm's deviations with the loss's; rounded
to 0.01 (a re-aggregated table then hits the power cache). Only correlations and ranks enter the
tests, so the deviations' SDs need no fit.

``python -m topotrain.analysis.calibration.power_design [features.parquet]`` prints each claim's
power at Δ and MDE for k = 3, 5 and 8 seeds (noise fitted to the table when one is given, else the
calibration's) beside the training time extrapolated linearly in runs from the measured default
study (``TRAINING``), then every view's power at 3 / 5 / 8 seeds × 51 / 101 / 201 checkpoints
(``view_power``: the persistent process on the same fitted noise, else the calibration's).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from topotrain.analysis.calibration.power import (
    POWER_COLUMNS,
    SESOI,
    SIMULATIONS,
    TARGET_POWER,
    power_table,
)
from topotrain.analysis.calibration.simulator import N_CHECKPOINTS, Design, Noise
from topotrain.analysis.calibration.view_power import DRAWS, cached_view_power, view_power
from topotrain.analysis.inference.primary import CLAIMS, SESOI_CO, TARGET, claimed_signs
from topotrain.analysis.inference.seed_contrast import SCALE, cell_deviations, model_matrices

MEASURED_SEEDS = 3  # the default study the timings below were measured on: 5 models × 3 seeds
TRAINING = {  # config → measured wall seconds of that study's training
    "config.yaml (2-core CPU VM)": 46.9 * 60,  # docs/cost.md, "How long each command takes"
    "workflow/configs/gpu.yaml (one H200)": 193.0,  # issue 37: the whole study, 15 runs at once
}
SEEDS = (3, 5, 8)
FAMILY = "level pair, BH over the claims"  # power.csv's view of power_table's rows


def autocorrelations(devs: list[np.ndarray], lags: int = 2) -> list[float]:
    """Pooled lag-h autocorrelations Σ d_t·d_{t+h} / Σ d_t² of (seeds, checkpoints) deviations
    for h = 1 … ``lags`` (NaN where nothing varies or no checkpoint pair is h apart)."""
    den = sum(float((d * d).sum()) for d in devs)
    out = []
    for h in range(1, lags + 1):
        pairs = [d for d in devs if d.shape[1] > h]
        num = sum(float((d[:, h:] * d[:, :-h]).sum()) for d in pairs)
        out.append(num / den if den > 0 and pairs else float("nan"))
    return out


def ar_white(devs: list[np.ndarray], digits: int | None = 2) -> tuple[float, float]:
    """(φ, v): AR(1) plus a white share v of the variance, fitted to the pooled lag-1 and lag-2
    autocorrelations ρ_h = φ^h·(1 − v): φ = ρ₂/ρ₁ clipped to ±0.99, v = 1 − ρ₁/φ clipped to
    [0, 1]; AR(1) alone (φ = ρ₁ clipped, v = 0) where ρ₂ ≤ 0, ρ₁ = 0 or ρ₂ is undefined;
    rounded to ``digits`` decimals (None: unrounded), φ = 0 when v = 1 (white: φ means
    nothing); NaN φ when nothing varies."""
    rho1, rho2 = autocorrelations(devs)
    if np.isnan(rho1):
        return float("nan"), 0.0
    if not rho1 or not rho2 > 0:
        phi, white = float(np.clip(rho1, -0.99, 0.99)), 0.0
    else:
        phi = float(np.clip(rho2 / rho1, -0.99, 0.99))
        white = float(np.clip(1 - rho1 / phi, 0.0, 1.0))
    if digits is not None:
        phi, white = round(phi, digits) + 0.0, round(white, digits) + 0.0
    return (0.0 if white == 1 else phi), white


def _deviations(
    df: pd.DataFrame, columns: list[str], target: str = TARGET
) -> tuple[dict[str, list], list]:
    """column → each model's seed deviations (``cell_deviations``), and per model the loss's
    (``target``) and the norm's deviations over the checkpoints both have (none without both
    columns)."""
    devs: dict[str, list] = {c: [] for c in columns}
    pairs = []
    for _, rows in df.groupby("model", sort=False):
        mats = model_matrices(rows, columns)
        for c in columns:
            devs[c].append(cell_deviations(mats, [c])[c])
        if {target, SCALE} <= set(columns):
            pair = cell_deviations(mats, [target, SCALE])
            pairs.append((pair[target], pair[SCALE]))
    return devs, pairs


def fit_noise(
    df: pd.DataFrame,
    features: tuple[str, ...] = tuple(CLAIMS),
    target: str = TARGET,
    digits: int | None = 2,
) -> Noise:
    """``Noise`` fitted to the seed deviations of a feature table: ``ar_white`` of the loss
    (``target``, default train_loss; ``question_power`` fits each question's own), each feature
    and the norm's own part (per model, its residual on the loss's deviations, d_l −
    (Σd_l·d_y/Σd_y²)·d_y, as the simulator's w' is what u leaves of w); c the pooled correlation
    of the norm's and the loss's deviations; the calibration's default where a column is absent
    or nothing varies; ``spacing`` the median gap between the table's steps (the φ's are per
    checkpoint at that spacing). Rounded to ``digits`` decimals (None: unrounded; the default
    0.01 lets a re-aggregated table hit the power cache)."""
    default = Noise()
    steps = np.unique(df["step"]) if "step" in df else np.array([])
    spacing = float(np.median(np.diff(steps))) if steps.size > 1 else default.spacing
    columns = [c for c in (target, SCALE, *features) if c in df]
    devs, pairs = _deviations(df, columns, target)
    if pairs:
        devs[SCALE] = [
            s - (s * y).sum() / (y * y).sum() * y if (y * y).sum() else s for y, s in pairs
        ]

    def fit(column: str, fallback: float) -> tuple[float, float]:
        phi, white = ar_white(devs[column], digits) if column in devs else (float("nan"), 0.0)
        return (fallback, 0.0) if np.isnan(phi) else (phi, white)

    num = sum(float((y * s).sum()) for y, s in pairs)
    den = np.sqrt(
        sum(float((y * y).sum()) for y, _ in pairs) * sum(float((s * s).sum()) for _, s in pairs)
    )
    corr = float(np.clip(num / den, -0.99, 0.99)) if den > 0 else default.scale_loss
    corr = round(corr, digits) if digits is not None and den > 0 else corr
    (loss, loss_white), (scale, scale_white) = fit(target, default.loss), fit(SCALE, default.scale)
    fitted = [fit(f, 0.0) for f in features]
    return Noise(
        loss=loss,
        features=tuple(phi for phi, _ in fitted),
        scale=scale,
        scale_loss=corr,
        loss_white=loss_white,
        features_white=tuple(v for _, v in fitted),
        scale_white=scale_white,
        spacing=spacing,
    )


def claim_models(paper: pd.DataFrame, df: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """Per claim: the models where the paper reports p < α, those in ``df`` when given."""
    have = None if df is None else set(df["model"])
    return {
        f: [m for m in claimed_signs(paper, f).index if have is None or m in have] for f in CLAIMS
    }


def study_design(df: pd.DataFrame, paper: pd.DataFrame, noise: Noise) -> tuple[Design | None, str]:
    """The design of a feature table's primary family (``Design``, or None and why not)."""
    models = claim_models(paper, df)
    if not all(models.values()) or any(f not in df for f in CLAIMS):
        return None, "a claim's feature or every one of its models is missing from the table"
    used = df[df["model"].isin({m for ms in models.values() for m in ms})]
    seeds = int(used.groupby("model")["seed"].nunique().min())
    if seeds < 2:
        return None, f"{seeds} seed: a between-seed contrast needs at least 2 seeds per model"
    shared = []
    for feature, names in models.items():
        columns = [c for c in (feature, TARGET, SCALE) if c in df]
        for name in names:
            mats = model_matrices(used[used["model"] == name], columns)
            shared.append(
                int(np.logical_and.reduce([np.isfinite(mats[c]).all(0) for c in columns]).sum())
            )
    if min(shared) < 2:
        return None, f"{min(shared)} checkpoints shared by every seed: contrast undefined"
    counts = tuple(len(m) for m in models.values())
    return Design(counts, seeds, min(shared), noise), ""


def study_power(
    df: pd.DataFrame,
    paper: pd.DataFrame,
    sesoi: float = SESOI,
    n_sim: int = SIMULATIONS,
    seed: int = 0,
    cache: str | None = None,
    threads: int = 1,
    sesoi_co: float = SESOI_CO,
    view_draws: int = DRAWS,
) -> pd.DataFrame:
    """power.csv of a study: ``power_table`` at the table's own design with noise fitted to its
    deviations (view FAMILY), then ``view_power``'s rows on the same noise at 3 / 5 / 8 seeds ×
    51 / 101 / 201 checkpoints (``view_draws`` studies each; 0: none), simulated over ``threads``
    processes; or one row per claim saying why there is no design."""
    design, why = study_design(df, paper, fit_noise(df))
    if design is None:
        rows = [{"feature": f, "sesoi": sesoi, "note": f"no power: {why}"} for f in CLAIMS]
        return pd.DataFrame(rows).reindex(columns=[*POWER_COLUMNS, "view"])
    family = power_table(design, tuple(CLAIMS), sesoi, n_sim, seed, cache, True, threads)
    if not view_draws:
        return family.assign(view=FAMILY)
    views = cached_view_power(
        cache,
        noise=design.noise,
        models=design.models,
        design=(design.seeds, design.checkpoints),
        sesoi=sesoi,
        sesoi_co=sesoi_co,
        draws=view_draws,
        threads=threads,
    )
    return pd.concat([family.assign(view=FAMILY), views], ignore_index=True)


def training_cost(k: int) -> dict[str, float]:
    """Wall minutes of training k seeds per config, linear in runs from the measured study."""
    return {config: s * k / MEASURED_SEEDS / 60 for config, s in TRAINING.items()}


def seeds_table(
    design: Design, seeds=SEEDS, sesoi=SESOI, n_sim=SIMULATIONS, seed=0, cache=None, fitted=False
) -> pd.DataFrame:
    """Per k in ``seeds`` and claim: ``power_table``'s columns (``fitted``: the design's noise
    was fitted to a study), the seconds it took and the training minutes of k seeds per config
    (``training_cost``)."""
    parts = []
    for k in seeds:
        start = time.perf_counter()
        at_k = Design(design.models, k, design.checkpoints, design.noise)
        table = power_table(at_k, tuple(CLAIMS), sesoi, n_sim, seed, cache, fitted)
        table["seconds"] = time.perf_counter() - start
        parts.append(table.assign(**{f"train_min {c}": v for c, v in training_cost(k).items()}))
    return pd.concat(parts, ignore_index=True)


def recommended(table: pd.DataFrame) -> int | None:
    """The smallest k whose every claim has power at Δ ≥ TARGET_POWER; None if none has."""
    ok = table.groupby("seeds")["power_at_sesoi"].min() >= TARGET_POWER
    return int(ok[ok].index.min()) if ok.any() else None


def main(argv: list[str] | None = None) -> None:
    """Print seeds_table for the study's design (from a feature table, else the paper's claims
    over every size, N_CHECKPOINTS checkpoints and the calibration's noise)."""
    from topotrain.analysis.inference.verdicts import read_paper_values

    parser = argparse.ArgumentParser(prog="python -m topotrain.analysis.calibration.power_design")
    parser.add_argument("features", nargs="?", help="a feature table (weights.parquet)")
    parser.add_argument(
        "--paper",
        default="workflow/data/paper_values.csv",
        help="the paper's values (default: the checkout's, from the repository root)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--n-sim", type=int, default=SIMULATIONS)
    parser.add_argument("--sesoi", type=float, default=SESOI)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default=None, help="a JSON cache file (power.cached_power)")
    parser.add_argument(
        "--view-draws",
        type=int,
        default=DRAWS,
        help="studies per row of the views' table (0: none)",
    )
    parser.add_argument("--threads", type=int, default=1, help="worker processes (views' table)")
    args = parser.parse_args(argv)
    paper = read_paper_values(args.paper)
    if args.features:
        df = pd.read_parquet(args.features)
        design, why = study_design(df, paper, fit_noise(df))
        if design is None:
            raise SystemExit(f"no design from {args.features}: {why}")
    else:
        counts = tuple(len(m) for m in claim_models(paper).values())
        design = Design(counts, 3, N_CHECKPOINTS, Noise())
    fitted = bool(args.features)
    table = seeds_table(design, args.seeds, args.sesoi, args.n_sim, args.seed, args.cache, fitted)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.drop(columns="note").to_string(index=False, float_format="%.3g"))
    print(table["note"].iloc[0])
    k = recommended(table)
    print(f"smallest k with every claim's power at Δ ≥ {TARGET_POWER}: {k or 'none of these'}")
    if args.view_draws:
        noise = design.noise if fitted else None  # else the persistent process's calibration noise
        views = view_power(
            noise, design.models, draws=args.view_draws, threads=args.threads, sesoi=args.sesoi
        )
        print(views_text(views))


def views_text(views: pd.DataFrame) -> str:
    """``view_power``'s table, one line per claim × coupling × seeds × checkpoints: each view's
    and pair's power, then its note."""
    wide = views.pivot_table(
        index=["feature", "planted", "seeds", "checkpoints"],
        columns="view",
        values="power_at_sesoi",
        sort=False,
    )
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        return wide.to_string(float_format="%.2f") + "\n" + views["note"].iloc[0]


if __name__ == "__main__":  # python -m topotrain.analysis.calibration.power_design [features]
    main()
