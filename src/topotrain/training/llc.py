"""The local learning coefficient of one GPT training's checkpoints (``baselines.llc``; the
estimator is ``baselines.llc``'s, devinterp's own)."""

from __future__ import annotations

import json

import numpy as np

from topotrain.baselines.llc import LLCSettings, estimate, gpt_windows, token_loss
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
        res = estimate(model, ids, token_loss, s)
        if not np.isfinite(res["llc"]):
            raise ValueError(f"{path}: the LLC is {res['llc']}: lower baselines.llc.lr")
        traces[f"trace_{step}"] = res.pop("trace")
        rows.append({"step": step, **res, "llc_chains": json.dumps(res["llc_chains"])})
        if progress:
            progress(f"LLC of {path}: {res['llc']:.4g} ± {res['llc_std']:.2g} (drift "
                     f"{res['llc_drift']:.2g})")  # fmt: skip
    return rows, traces
