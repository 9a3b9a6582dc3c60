"""The local learning coefficient of one training's checkpoints (``baselines.llc``; the
estimator is ``baselines.llc``'s, devinterp's own): the GPT study's (next-character loss on
windows of the training split) and the grokking control's (the answer's loss on its training
pairs)."""

from __future__ import annotations

import json

import numpy as np
import torch

from topotrain.baselines.llc import LLCSettings, answer_loss, estimate, gpt_windows, token_loss
from topotrain.training.run_state import load_checkpoint
from topotrain.training.train import load_tokens


def training_llc(
    checkpoints: list[str], tokens_path: str, cfg: dict, progress=None
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Per checkpoint of one GPT training (``checkpoints``: its safetensors files), the LLC row
    (step, llc, llc_std, llc_init_loss, llc_drift, llc_chains as text) over ``cfg["sequences"]``
    windows of the training split drawn with ``cfg["seed"]``, and the traces by step
    (``trace_<step>``: chains × steps)."""
    s = LLCSettings.of(cfg)
    rows, traces, ids = [], {}, None
    for path in checkpoints:
        model, step = load_checkpoint(path)
        if ids is None:
            tokens = load_tokens(tokens_path, model.config)
            ids = gpt_windows(tokens, model.config.block_size, cfg["sequences"], s.seed)
        rows.append(_measured(path, step, estimate(model, ids, token_loss, s), traces, progress))
    return rows, traces


def control_llc(
    checkpoints: list[str], control: dict, seed: int, cfg: dict, progress=None
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """``training_llc`` of one seed of the grokking control: its model rebuilt from ``control``
    (the control's knobs), the loss the answer's cross-entropy over the seed's training pairs
    (``split_pairs``: the rows it trained on)."""
    from topotrain.training.modular import (
        ControlConfig,
        ModularTransformer,
        load_weights,
        split_pairs,
    )

    s, knobs = LLCSettings.of(cfg), ControlConfig(**control, seed=seed)
    train, _ = split_pairs(knobs.p, knobs.train_frac, seed)
    model, rows, traces = ModularTransformer(knobs), [], {}
    for path in checkpoints:
        step = load_weights(path, model)
        res = estimate(model, train.to(torch.int64), answer_loss, s)
        rows.append(_measured(path, step, res, traces, progress))
    return rows, traces


def _measured(path: str, step: int, res: dict, traces: dict, progress) -> dict:
    """One checkpoint's row (its trace moved into ``traces``); a non-finite LLC stops it."""
    if not np.isfinite(res["llc"]):
        raise ValueError(f"{path}: the LLC is {res['llc']}: lower baselines.llc.lr")
    traces[f"trace_{step}"] = res.pop("trace")
    if progress:
        progress(f"LLC of {path}: {res['llc']:.4g} ± {res['llc_std']:.2g} (drift "
                 f"{res['llc_drift']:.2g})")  # fmt: skip
    return {"step": step, **res, "llc_chains": json.dumps(res["llc_chains"])}
