"""Benchmark: training throughput per model size, the project's step vs a plain eager loop.

Project: the functions ``train_model`` runs each step (``lr_at``, ``sample_offsets``, ``get_batch``,
``train_step``) on the model and AdamW that ``_build`` makes. Reference, measured in the same run on
the same batches: a nanoGPT-style loop (forward, ``backward``, ``clip_grad_norm_``, ``step``) with
``torch.optim.AdamW`` defaults for the implementation. Both start from the same seed; their losses
after the timed steps must agree within 1 %.
"""

from __future__ import annotations

import time

import numpy as np

FAMILY = {  # name: (d_model, n_layer, n_head), the study's family
    "tiny-3k": (8, 1, 1),
    "small-7k": (16, 1, 2),
    "med-21k": (24, 2, 2),
    "large-46k": (32, 3, 4),
    "xl-97k": (48, 3, 4),
}
BATCH, CONTEXT = 64, 128


def _data(n_tokens: int = 200_000, seed: int = 0) -> np.ndarray:
    """Seeded character-like tokens (uint8 < 128) standing in for the corpus."""
    return np.random.default_rng(seed).integers(32, 127, n_tokens, dtype=np.uint8)


def project_steps(cfg, model_cfg, data, steps: int) -> tuple[float, float]:
    """(seconds, last loss) of ``steps`` updates through topotrain.train's per-step functions."""
    import torch

    from topotrain import train as tt

    model, optimizer, gen = tt._build(model_cfg, cfg, torch.device("cpu"))
    start, loss = time.perf_counter(), float("nan")
    for t in range(steps):
        x, y = tt.get_batch(
            data, tt.sample_offsets(len(data), CONTEXT, (BATCH,), gen), CONTEXT, torch.device("cpu")
        )
        loss, _ = tt.train_step(model, optimizer, x, y, tt.lr_at(t, cfg), cfg.grad_clip)
    return time.perf_counter() - start, loss


def reference_steps(cfg, model_cfg, data, steps: int) -> tuple[float, float]:
    """(seconds, last loss) of the plain eager loop on the same batches and schedule."""
    import torch

    from topotrain import train as tt
    from topotrain.model import GPT

    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0}],
        lr=cfg.lr,
        betas=tt.BETAS,
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    start, loss = time.perf_counter(), None
    for t in range(steps):
        ix = torch.randint(len(data) - CONTEXT, (BATCH,), generator=gen).numpy()
        window = torch.from_numpy(data[ix[:, None] + np.arange(CONTEXT + 1)].astype(np.int64))
        for group in optimizer.param_groups:
            group["lr"] = tt.lr_at(t, cfg)
        _, loss = model(window[:, :-1], window[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
    return time.perf_counter() - start, loss.item()


def run(steps: int = 60, threads: int = 2) -> list[dict]:
    """One row per model size: tokens/s of both loops, their ratio and final losses."""
    import logging

    import torch

    from topotrain.model import GPTConfig
    from topotrain.train import TrainConfig

    logging.getLogger("topotrain").setLevel(logging.WARNING)
    torch.set_num_threads(threads)
    data, rows = _data(), []
    cfg = TrainConfig(steps=5000, threads=threads)
    for name, (d, layers, heads) in FAMILY.items():
        model_cfg = GPTConfig(n_layer=layers, n_head=heads, n_embd=d)
        project_steps(cfg, model_cfg, data, 3)  # warm-up (allocator, kernels)
        p_s, p_loss = project_steps(cfg, model_cfg, data, steps)
        r_s, r_loss = reference_steps(cfg, model_cfg, data, steps)
        tokens = steps * BATCH * CONTEXT
        rows.append(
            {
                "benchmark": "training",
                "model": name,
                "threads": threads,
                "steps": steps,
                "project_tokens_per_s": tokens / p_s,
                "reference_tokens_per_s": tokens / r_s,
                "speedup": r_s / p_s,
                "project_loss": p_loss,
                "reference_loss": r_loss,
                "loss_rel_diff": abs(p_loss - r_loss) / r_loss,
                "project_5000_steps_s": p_s / steps * 5000,
            }
        )
    return rows


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1))
