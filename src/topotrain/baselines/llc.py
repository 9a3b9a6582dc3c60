"""The local learning coefficient (LLC) of a checkpoint, estimated by the ``devinterp`` package
itself (Timaeus, MIT; ``devinterp.slt.llc.llc``: its SGLD sampler and its estimator), not
re-implemented here.

Around a checkpoint's weights w* the sampler draws from the tempered, localised posterior
∝ exp(−nβ·L(w) − γ/2·|w − w*|²) with SGLD steps
Δw = −(ε/2)·(nβ·∇L_batch(w) + γ·(w − w*)) + N(0, ε) (Lau et al. 2023), and the estimate is
LLC = nβ·(mean sampled loss − L(w*)): devinterp's ``compute_llc`` averages every step's
mini-batch loss (burn-in included) per chain and subtracts the mean loss at w* over
``init_batches`` batches. For a regular model λ = d/2 (half the parameter count); a degenerate
one has a smaller λ, and the LLC of a network falls when training finds a simpler solution
(Hoogland et al. 2024; at grokking).

The settings are ``baselines.llc`` (the schema says what each is and devinterp's guidance on it):
ε (``lr``), γ (``localization``), nβ (``nbeta``; null: devinterp's ``default_nbeta`` of the
batch size, B/log B), ``chains``, ``draws``, ``batch_size``, ``init_batches`` and ``seed``
(devinterp's ``init_seed``: the noise and the batches, so a rerun on CPU is bit-identical).
Every chain sees the same batches (devinterp's default); the chains differ by their noise.

Kept per checkpoint beside the estimate: each chain's LLC, their spread (``llc_std``), the loss
at w* (``llc_init_loss``) and the trace of every chain's mini-batch loss per step, from which
``llc_drift`` = nβ·(mean loss over the trace's last quarter − over its second quarter): near 0
when the chains have settled, large when the step size or the draws are too small to reach the
local posterior (or, negative, when the chains escape it: too large a step or too weak γ).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import torch

INSTALL_HINT = 'pip install "topotrain[llc]" (devinterp)'
LossFn = Callable[[torch.nn.Module, torch.Tensor], torch.Tensor]


def require_devinterp(what: str = "baselines.llc") -> None:
    """Raise ImportError naming ``what`` and the install when devinterp cannot be imported."""
    try:
        import devinterp.slt.llc  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{what} is on but devinterp is not installed: {INSTALL_HINT}") from err


@dataclass(frozen=True)
class LLCSettings:
    """The sampler's settings (``baselines.llc`` of the schema, which documents each)."""

    lr: float = 3e-4
    localization: float = 100.0
    nbeta: float | None = None
    chains: int = 4
    draws: int = 200
    batch_size: int = 32
    init_batches: int = 16
    seed: int = 0
    device: str = "cpu"

    @classmethod
    def of(cls, cfg: dict) -> LLCSettings:
        """The settings from a config mapping (its other keys, such as ``every``, ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in cfg.items() if k in names})

    def resolved_nbeta(self) -> float:
        """nβ: the setting, or devinterp's default for the batch size (B/log B)."""
        if self.nbeta is not None:
            return float(self.nbeta)
        from devinterp.utils import default_nbeta

        return float(default_nbeta(self.batch_size))


def estimate(
    model: torch.nn.Module, input_ids: torch.Tensor, loss_fn: LossFn, s: LLCSettings
) -> dict:
    """The LLC of ``model`` at its current weights over the rows of ``input_ids`` (n × T, T ≥ 2;
    ``loss_fn(model, ids)`` → per-position losses, n × (T − 1)): llc (the chains' mean),
    llc_half1 and llc_half2 (the mean of the first and of the other half of the chains: two
    independent measurements), llc_std, llc_chains, llc_init_loss, llc_drift and trace (chains
    × steps, numpy). The model's weights are left as they were (on the CPU: devinterp samples on
    ``s.device``); its zarr output goes to a temporary directory, removed after."""
    require_devinterp()
    from datasets import Dataset
    from devinterp.slt.llc import llc

    if input_ids.ndim != 2 or input_ids.shape[1] < 2:
        raise ValueError(f"LLC input_ids must be n × T with T ≥ 2, got {tuple(input_ids.shape)}")
    if input_ids.shape[0] < s.batch_size:
        raise ValueError(
            f"LLC: {input_ids.shape[0]} sequences, fewer than baselines.llc.batch_size "
            f"{s.batch_size}"
        )
    data = Dataset.from_dict({"input_ids": input_ids.tolist()}).with_format("torch")
    nbeta = s.resolved_nbeta()
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    workdir = tempfile.mkdtemp(prefix="topotrain-llc-")
    try:
        res = llc(
            model,
            data,
            {},
            lr=s.lr,
            n_beta=nbeta,
            loss_fn=loss_fn,
            num_chains=s.chains,
            num_draws=s.draws,
            batch_size=s.batch_size,
            num_init_loss_batches=s.init_batches,
            localization=s.localization,
            init_seed=s.seed,
            device=s.device,
            output_path=f"{workdir}/samples.zarr",
        )
        trace = np.asarray(res.loss_trace.values, dtype=np.float64)
        chains = np.asarray(res.llc_per_chain.values, dtype=np.float64)
        init_loss = float(res.init_loss)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        model.to("cpu").load_state_dict(saved)
    half = chains.size // 2  # two measurements from disjoint chains (the split partial's)
    return {
        "llc": float(chains.mean()),
        "llc_half1": float(chains[:half].mean()) if half else math.nan,
        "llc_half2": float(chains[half:].mean()) if half else math.nan,
        "llc_std": float(chains.std(ddof=1)) if chains.size > 1 else math.nan,
        "llc_chains": chains.tolist(),
        "llc_init_loss": init_loss,
        "llc_drift": drift(trace, nbeta),
        "trace": trace,
    }


def drift(trace: np.ndarray, nbeta: float) -> float:
    """nβ·(mean of the trace's last quarter of steps − of its second quarter), over all chains;
    NaN with fewer than 4 steps."""
    steps = trace.shape[-1]
    if steps < 4:
        return math.nan
    q = steps // 4
    return float(nbeta * (trace[..., steps - q :].mean() - trace[..., q : 2 * q].mean()))


def token_loss(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The GPT study's per-position next-character cross-entropy, n × (T − 1)."""
    logits, _ = model(ids[:, :-1])
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")


def answer_loss(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The grokking control's loss on rows (a, b, (a + b) mod p): the answer's cross-entropy,
    repeated at both positions devinterp expects (n × 2), so its mean is the answer's."""
    loss = torch.nn.functional.cross_entropy(model(ids[:, :2]), ids[:, 2], reduction="none")
    return loss[:, None].expand(-1, ids.shape[1] - 1)


def gpt_windows(tokens: np.ndarray, block_size: int, count: int, seed: int) -> torch.Tensor:
    """``count`` windows of block_size + 1 tokens of the training split at offsets drawn with
    ``seed`` (the same windows at every checkpoint of every run), int64, count × (block + 1)."""
    span = block_size + 1
    if len(tokens) < span:
        raise ValueError(f"LLC: the training split has {len(tokens)} tokens, fewer than {span}")
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(tokens) - span + 1, (count,), generator=g).numpy()
    rows = np.stack([np.asarray(tokens[s : s + span], dtype=np.int64) for s in starts])
    return torch.from_numpy(rows)
