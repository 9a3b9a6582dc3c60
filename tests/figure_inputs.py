"""Synthetic inputs of every figure, with the columns their tables have (the checkpoint table,
correlations.csv, prediction.csv, stopping.csv, layer_types_summary.csv, scaling.csv,
primary.csv / diagnostics.csv / power.csv, horizon_profile.csv, Pythia's tables, the control's
and a run's), in two studies: DEMO, like ``make demo`` (two tiny models, one seed, five
checkpoints: fits that do not converge, learned predictors and between-seed views undefined) and
THREE (three models × three seeds × nine checkpoints: everything estimated)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from topotrain.analysis.inference.horizons import COLUMNS as HORIZON_COLUMNS
from topotrain.analysis.prediction.predict import METHODS


@dataclass(frozen=True)
class Study:
    name: str
    models: dict[str, int]  # name → parameters
    seeds: tuple[int, ...]
    steps: tuple[int, ...]


DEMO = Study("demo", {"tiny-a": 2168, "tiny-b": 5872}, (42,), (0, 10, 20, 30, 40))
THREE = Study(
    "three", {"s": 12_000, "m": 150_000, "l": 1_800_000}, (1, 2, 3), tuple(range(0, 450, 50))
)
CLAIMS = ("h0_total", "np_mean", "h1_total")
NOT_MEASURED = (
    "{f} or the claimed models are not in the feature table; cannot be measured: a between-seed "
    "contrast needs at least 2 seeds per model"
)
NO_FIT = (
    "2 points: need at least 4 to fit a, b and c; 2 points: no slope interval or adjusted R² "
    "(n − k − 1 = 0)"
)


def checkpoints(study: Study, seed: int = 0) -> pd.DataFrame:
    """The checkpoint table: losses fall with the step (bigger models lower), the features
    drift with it, each run offset and noisy."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, (model, n) in enumerate(study.models.items()):
        for s in study.seeds:
            off = rng.normal(scale=0.1, size=4)
            for t in study.steps:
                u = t / max(study.steps)
                loss = 2.6 - 0.1 * i + 2.2 * np.exp(-4 * u) + off[0] + 0.05 * rng.normal()
                rows.append(
                    dict(model=model, seed=s, step=t, n_params=n)
                    | dict(train_loss=loss - 0.05, val_loss=loss + 0.02 * rng.normal())
                    | dict(np_mean=0.36 - 0.1 * u + off[1] + 0.01 * rng.normal())
                    | dict(np_std=0.05 + 0.01 * rng.random(), lr=1e-3 * (1 - 0.5 * u))
                    | dict(h0_total=5 + (10 + 5 * i) * u + off[2] + 0.3 * rng.normal())
                    | dict(h1_total=1 + 2 * u + 0.2 * rng.normal(), grad_norm=1 + rng.random())
                    | dict(l2_norm_mean=1 + 0.3 * u + off[3] + 0.02 * rng.normal())
                )
    return pd.DataFrame(rows)


def correlations(study: Study, features=("h0_total", "h1_total", "np_mean", "h0_count", "step")):
    """correlations.csv: ρ per run and feature; the H0 count constant (ρ undefined, its note);
    in THREE the H0 total significant."""
    rng = np.random.default_rng(1)
    rows = []
    for model, n in study.models.items():
        for s in study.seeds:
            for f in features:
                rho = np.nan if f == "h0_count" else float(np.clip(rng.normal(-0.5, 0.4), -1, 1))
                note = "constant feature: ρ undefined" if f == "h0_count" else ""
                sig = f == "h0_total" and len(study.seeds) > 1
                rows.append(dict(model=model, seed=s, n_params=n, feature=f, kind="topological"))
                rows[-1] |= dict(rho=rho, p=0.01, significant=sig, note=note)
    return pd.DataFrame(rows)


def prediction(study: Study, fractions=(0.3, 0.5)) -> pd.DataFrame:
    """prediction.csv: MAE per fraction and method; with two models every learned method has no
    finite prediction (n = 0)."""
    rng = np.random.default_rng(2)
    rows = []
    for f in fractions:
        for m in METHODS:
            dead = m.startswith("learned") and len(study.models) < 3
            mae = np.nan if dead else float(rng.uniform(0.05, 0.8))
            rows.append(dict(fraction=f, method=m, mae=mae, n=0 if dead else 9))
    return pd.DataFrame(rows)


def layer_types_summary(study: Study) -> pd.DataFrame:
    """layer_types_summary.csv (the seed_contrast view): undefined with one seed per model."""
    rng = np.random.default_rng(3)
    groups = [("type", "attention"), ("type", "mlp"), ("depth", "block 0"), ("depth", "block 1")]
    rows = []
    for model, n in [*study.models.items(), ("pooled", np.nan)]:
        for split, group in groups:
            for f in ("np_mean", "h0_total", "h1_total"):
                for target in ("train_loss", "val_loss"):
                    rho = np.nan if len(study.seeds) < 2 else float(rng.uniform(-1, 1))
                    rows.append(dict(model=model, n_params=n, split=split, group=group))
                    rows[-1] |= dict(feature=f, target=target, rows=1, mean_rho=rho)
                    rows[-1] |= dict(view="seed_contrast")
    return pd.DataFrame(rows)


def scaling(study: Study) -> pd.DataFrame:
    """scaling.csv: with two models no fit converges; in THREE val loss's does."""
    rows = []
    for f in ("val_loss", "h0_total", "np_mean"):
        ok = len(study.models) > 2 and f == "val_loss"
        rows.append(dict(feature=f, n_models=len(study.models), converged=ok))
        rows[-1] |= dict(a=30.0, b=-0.3, c=2.0, r2=0.97) if ok else dict(a=np.nan, b=np.nan)
        rows[-1] |= dict(message="" if ok else NO_FIT)
    return pd.DataFrame(rows)


def primary(study: Study) -> pd.DataFrame:
    """primary.csv: each claim's effects per view (undefined with one seed, with the note)."""
    rng = np.random.default_rng(4)
    rows = []
    for f in CLAIMS:
        one = len(study.seeds) < 2
        row = dict(feature=f, models="" if one else ";".join(study.models), question="moves_with")
        row |= dict(signs="" if one else ";".join(["-1"] * len(study.models)), sesoi=0.1)
        row |= dict(sesoi_co=0.1, verdict_ranks="undecided", verdict_moves_with="undecided")
        row |= dict(note=NOT_MEASURED.format(f=f) if one else "")
        row |= {f"p_bh_{q}": np.nan if one else 0.2 for q in ("ranks", "moves_with")}
        for c in ("clock", "scale", "co_clock", "co_scale"):
            e = np.nan if one else float(rng.uniform(-0.3, 0.5))
            row |= {f"effect_{c}": e, f"effect_{c}_ci_low": e - 0.2, f"effect_{c}_ci_high": e + 0.2}
        rows.append(row)
    return pd.DataFrame(rows)


def diagnostics(study: Study) -> pd.DataFrame:
    """diagnostics.csv: WeightWatcher's and the gradient norm's effects, each claim's partial ρ."""
    one = len(study.seeds) < 2
    rows = []
    for f, kind in (
        ("ww_alpha_mean", "weightwatcher"),
        ("grad_norm", "baseline"),
        *[(c, "topological") for c in CLAIMS],
    ):
        e = np.nan if one else 0.1
        row = dict(feature=f, kind=kind, verdict="inconclusive", effect_clock=e, effect_scale=e)
        row |= dict(effect_ci_low_clock=e - 0.2, effect_ci_high_clock=e + 0.2)
        row |= dict(effect_ci_low_scale=e - 0.2, effect_ci_high_scale=e + 0.2)
        row |= dict(rho_grad=e, p_grad=0.2, rho_wvar=e, p_wvar=0.3)
        rows.append(row)
    return pd.DataFrame(rows)


def power(study: Study) -> pd.DataFrame:
    """power.csv of the level family (no power with one seed)."""
    p = np.nan if len(study.seeds) < 2 else 0.4
    return pd.DataFrame([dict(feature=f, power_at_sesoi=p, note="") for f in CLAIMS])


def horizon_profile(study: Study) -> pd.DataFrame:
    """horizon_profile.csv: none with one seed; else each claim × H × view, H = 25 too short."""
    if len(study.seeds) < 2:
        return pd.DataFrame(columns=HORIZON_COLUMNS)
    rng = np.random.default_rng(5)
    rows = []
    for f in CLAIMS:
        for h in (25, 50, 100, 200, 400):
            for c in ("co_clock", "co_scale"):
                e = np.nan if h == 25 else float(rng.uniform(-0.2, 0.4))
                note = "no 25-step move: checkpoints 50 steps apart" if h == 25 else ""
                rows.append(dict(feature=f, horizon=h, lag=h // 50, condition=c, effect=e))
                rows[-1] |= dict(ci_low=e - 0.15, ci_high=e + 0.15, p=0.1, note=note)
    return pd.DataFrame(rows, columns=HORIZON_COLUMNS)


def pythia(study: Study) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pythia's embeddings table (with the weights' columns) and its |ρ| table."""
    rng = np.random.default_rng(6)
    rows = []
    for model in study.models:
        for i, t in enumerate((0, 1000, 10_000, 143_000)):
            row = dict(model=model, step=t, perplexity=4000 / (1 + i) ** 2, np_mean=0.3 + 0.01 * i)
            row |= dict(np_std=0.02, h0_total=10 + i, h1_total=2 + i, h1_count=5 + i)
            row |= dict(h1_entropy=1 + 0.1 * i, effective_rank=30 - i, participation_ratio=9 - i)
            row |= dict(
                spectral_alpha=1 + 0.1 * i, wasserstein_h1=np.nan if i == 0 else rng.random()
            )
            rows.append(row)
    emb = pd.DataFrame(rows)
    features = ["h0_total", "h1_total", "effective_rank", "spectral_alpha"]
    corr = pd.DataFrame(
        [
            dict(model=m, feature=f, rho=rng.uniform(-1, 1))
            | dict(kind="spectral" if f in ("effective_rank", "spectral_alpha") else "topological")
            for m in study.models
            for f in features
        ]
    )
    return emb, corr


def control(study: Study) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The grokking control's table (per seed and step) and its seeds (one never groks)."""
    rows = []
    for s in study.seeds:
        for t in study.steps:
            u = t / max(study.steps)
            rows.append(dict(seed=s, step=t, test_acc=u**3, emb_h1_total=1 - u, weight_l2=2 - u))
            rows[-1]["fourier_top5"] = u**2
    seeds = pd.DataFrame(
        [
            dict(seed=s, grokking_step=np.nan if k == 0 else 0.6 * max(study.steps))
            for k, s in enumerate(study.seeds)
        ]
    )
    return pd.DataFrame(rows), seeds
