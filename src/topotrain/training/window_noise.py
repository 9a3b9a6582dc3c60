"""What per-seed validation windows add to the between-seed variance of ``val_loss`` (issue 56,
item 4).

Until the common windows, each run drew its validation windows with its own seed + 1
(``perseed_offsets``), so part of a seed's ``val_loss`` deviation from its siblings was which
windows it drew. Now every seed and model is scored on the windows of ``train.eval_seed``
(``train.eval_offsets``). ``window_losses`` scores the same checkpoints both ways (and, if asked,
on the whole validation split); ``window_variance`` takes, at each step, every seed's deviation
from the across-seed mean and pools their variance over steps,

    var = Σ_steps Σ_seeds d² / (n_steps · (n_seeds − 1)),

under each scheme; the share of the per-seed variance that the windows added is
(var_perseed − var_common) / var_perseed (``added_share``). The windows' own variance,
``var_windows``, is the same pooled variance of the difference perseed − common: what the windows
alone put into a seed's deviation (a per-seed offset, the same at every step, for a seed scores
every checkpoint on its one draw); its expectation, ``draw_variance``, is the variance of one
checkpoint's val_loss over many window draws. ``python -m benchmarks eval_windows`` runs it on a
short WikiText-2 study (docs/benchmarks.md, "Common validation windows").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from topotrain.training.run_state import checkpoint_name, load_checkpoint
from topotrain.training.train import TrainConfig, load_tokens
from topotrain.training.windows import (
    device_tokens,
    estimate_val_loss,
    eval_offsets,
    full_val_loss,
    sample_offsets,
)

SCHEMES = ("perseed", "common", "full")  # columns val_loss_<scheme> of window_losses


def perseed_offsets(n_tokens: int, block_size: int, cfg: TrainConfig) -> torch.Tensor:
    """The validation windows of the scheme before the common ones: (eval_batches,
    eval_batch_size) drawn by ``sample_offsets`` from a generator seeded with the run's seed + 1."""
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    return sample_offsets(n_tokens, block_size, (cfg.eval_batches, cfg.eval_batch_size), gen)


def window_losses(
    checkpoints: Mapping[int, Sequence[str | Path]],
    val_bin: str | Path,
    cfg: TrainConfig,
    full: bool = False,
) -> pd.DataFrame:
    """One row per (seed, checkpoint): seed, step, ``val_loss_perseed`` (the seed's own windows,
    seed + 1), ``val_loss_common`` (``eval_offsets``, what training records now) and, with
    ``full``, ``val_loss_full`` (the whole split). ``checkpoints``: seed → its checkpoint files;
    ``cfg``: the runs' training config (its seed is replaced by each seed's)."""
    if len(checkpoints) < 2:
        raise ValueError(f"checkpoints: {len(checkpoints)} seed(s); need at least 2")
    tokens, rows = None, []
    for seed, paths in checkpoints.items():
        if not paths:
            raise ValueError(f"checkpoints: seed {seed} has no checkpoint files")
        for path in paths:
            model, step = load_checkpoint(path)
            T = model.config.block_size
            if tokens is None:
                tokens = device_tokens(load_tokens(val_bin, model.config), torch.device("cpu"))
            own = perseed_offsets(len(tokens), T, replace(cfg, seed=seed))
            common = eval_offsets(len(tokens), T, cfg)
            row = {
                "seed": seed,
                "step": step,
                "val_loss_perseed": estimate_val_loss(model, tokens, own),
                "val_loss_common": estimate_val_loss(model, tokens, common),
            }
            if full:
                row["val_loss_full"] = full_val_loss(model, tokens, cfg.eval_batch_size)
            rows.append(row)
    return pd.DataFrame(rows)


def deviations(losses: pd.DataFrame, column: str) -> pd.Series:
    """Each seed's ``column`` minus the across-seed mean at its step; refuses steps that lack a
    seed (every step must have every seed, so that the means compare like with like)."""
    for name in ("seed", "step", column):
        if name not in losses:
            raise ValueError(f"losses: no column {name!r}")
    seeds = losses["seed"].nunique()
    if seeds < 2:
        raise ValueError(f"losses: {seeds} seed(s); the between-seed variance needs at least 2")
    counts = losses.groupby("step")["seed"].nunique()
    if ragged := counts[counts != seeds].index.tolist():
        raise ValueError(f"losses: steps {ragged} lack some of the {seeds} seeds")
    if losses.duplicated(["seed", "step"]).any():
        raise ValueError("losses: a (seed, step) appears twice")
    values = losses[column].astype(float)
    return values - values.groupby(losses["step"]).transform("mean")


def deviation_variance(losses: pd.DataFrame, column: str) -> float:
    """The between-seed variance of ``column``, pooled over steps: Σ d² / (n_steps (n_seeds − 1))
    over the ``deviations`` d."""
    d = deviations(losses, column)
    n_seeds, n_steps = losses["seed"].nunique(), losses["step"].nunique()
    return float((d**2).sum() / (n_steps * (n_seeds - 1)))


def added_share(var_perseed: float, var_common: float) -> float:
    """The share of the per-seed scheme's between-seed variance that its windows added:
    (var_perseed − var_common) / var_perseed (negative when the common windows' is larger)."""
    if not var_perseed > 0:
        raise ValueError(f"var_perseed={var_perseed}: must be positive")
    return (var_perseed - var_common) / var_perseed


def window_variance(losses: pd.DataFrame) -> dict:
    """``window_losses`` summarised: seeds, steps, var_perseed, var_common (and var_full when
    measured), var_windows (of perseed − common) and share = ``added_share``."""
    out = {"seeds": int(losses["seed"].nunique()), "steps": int(losses["step"].nunique())}
    for scheme in SCHEMES:
        if f"val_loss_{scheme}" in losses:
            out[f"var_{scheme}"] = deviation_variance(losses, f"val_loss_{scheme}")
    diff = losses.assign(windows=losses["val_loss_perseed"] - losses["val_loss_common"])
    out["var_windows"] = deviation_variance(diff, "windows")
    out["share"] = added_share(out["var_perseed"], out["var_common"])
    return out


def draw_variance(model, tokens: torch.Tensor, cfg: TrainConfig, draws: int = 32) -> float:
    """The variance (ddof 1) of ``model``'s val_loss over ``draws`` independent draws of the
    windows (``perseed_offsets`` of seeds 10⁶, 10⁶ + 1, …): what per-seed windows add, in
    expectation, to the between-seed variance of val_loss at this checkpoint."""
    if draws < 2:
        raise ValueError(f"draws={draws}: need at least 2")
    T = model.config.block_size
    losses = [
        estimate_val_loss(model, tokens, perseed_offsets(len(tokens), T, replace(cfg, seed=s)))
        for s in range(10**6, 10**6 + draws)
    ]
    return float(np.var(losses, ddof=1))


def window_study(
    runs: Mapping[int, str | Path],
    val_bin: str | Path,
    cfg: TrainConfig,
    full: bool = False,
    skip_first: bool = False,
) -> tuple[pd.DataFrame, dict]:
    """``window_losses`` of every checkpoint of ``runs`` (seed → the folder ``train_model``
    published for that seed of ``cfg``; ``skip_first``: leave out step 0, where seeds differ by
    their initialisation alone) and its ``window_variance``."""
    steps = [s for s in cfg.checkpoint_steps() if s or not skip_first]
    files = {seed: [Path(out) / checkpoint_name(s) for s in steps] for seed, out in runs.items()}
    if missing := [str(p) for paths in files.values() for p in paths if not p.is_file()]:
        raise FileNotFoundError(f"runs: {len(missing)} checkpoint(s) missing, e.g. {missing[0]}")
    losses = window_losses(files, val_bin, cfg, full)
    return losses, window_variance(losses)
