"""The tiny study: two tiny models on a small English-like corpus, 40 steps, checkpoints every 10.

The workflow benchmark times Snakemake on it; the test suite runs the workflow on it
(tests/conftest.py re-exports ``write_corpus`` and ``tiny_config``).
"""

from __future__ import annotations

from pathlib import Path

from topotrain.config import GPT_LAYERS

SENTENCES = [
    "the cat sat on the mat . ",
    "a dog ran in the park and the cat ran after it . ",
    "topology of weights may track the loss of a model . ",
    "small models learn the common letters first . ",
]


def write_corpus(directory: Path, n_chars: int = 20_000, seed: int = 0) -> tuple[Path, Path]:
    """A small English-like corpus: seeded shuffles of a few sentences, as train and validation."""
    import random

    rng = random.Random(seed)
    paths = []
    for name, size in (("train.txt", n_chars), ("valid.txt", n_chars // 4)):
        text = ""
        while len(text) < size:
            text += rng.choice(SENTENCES)
        path = directory / name
        path.write_text(text + "\n", encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def tiny_config(train: Path, valid: Path) -> dict:
    """Two tiny models, 40 steps, a checkpoint every 10 steps, context 32."""
    return {
        "results": "results",
        "corpus": {"source": "files", "train": str(train), "validation": str(valid)},
        "pythia": {"enabled": False},  # else the schema's default (on)
        "models": {
            "tiny-a": {"d_model": 8, "n_layer": 1, "n_head": 1},
            "tiny-b": {"d_model": 16, "n_layer": 1, "n_head": 2},
        },
        "context": 32,
        "seeds": [42],
        "train": {
            "steps": 40,
            "batch_size": 8,
            "lr": 1.0e-2,
            "weight_decay": 0.01,
            "warmup_steps": 5,
            "grad_clip": 1.0,
            "checkpoint_interval": 10,
            "eval_batches": 2,
            "eval_batch_size": 8,
            "device": "cpu",
            "threads": 1,
        },
        "topology": {
            "layers": list(GPT_LAYERS),
            "include_embeddings": False,
            "max_points": 40,
            "seed": 0,
            "maxdim": 1,
            "threads": 1,
            "gradients": {"enabled": True, "batch_size": 4, "seed": 0},
        },
        "analysis": {
            "bootstrap_resamples": 200,
            "bootstrap_seed": 0,
            "prediction_fractions": [0.3, 0.5],
            "phase_threshold": 0.1,
            "changepoints": 1,
            "scaling_features": ["val_loss", "h0_total", "np_mean"],
        },
    }
