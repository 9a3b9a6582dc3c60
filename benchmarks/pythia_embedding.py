"""Benchmark: one Pythia embedding revision on CPU, Pythia-70M's real architecture, random weights.

The project's path (offline fetch from a hub cache → load → batched embedding pass → PCA + VR +
spectra) is timed per revision against a plain reference measured in the same run: the same model
fed one text at a time, mean-pooled by hand. Both must give the same embeddings (to 1e-4).
The hub cache is fabricated in a temp dir (tests/hub_fixtures.py): no network is used.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
WIKITEXT_VALID = ROOT.parent / "shared" / "data" / "wikitext-2" / "valid.txt"
PYTHIA_70M = {  # EleutherAI/pythia-70m config.json
    "hidden_size": 512,
    "num_hidden_layers": 6,
    "num_attention_heads": 8,
    "intermediate_size": 2048,
    "vocab_size": 50304,
    "max_position_embeddings": 2048,
    "rotary_pct": 0.25,
    "use_parallel_residual": True,
}


def _paragraphs() -> list[str]:
    import hub_fixtures

    if WIKITEXT_VALID.is_file():
        return WIKITEXT_VALID.read_text(encoding="utf-8").splitlines()
    return hub_fixtures.paragraphs(2000)


def reference_embeddings(model, tokenizer, texts, max_length: int):
    """Plain loop: one text at a time, last hidden layer averaged over its tokens."""
    import torch

    rows = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
            out = model(**ids, output_hidden_states=True)
            rows.append(out.hidden_states[-1][0].mean(dim=0).double().numpy())
    return np.stack(rows)


def run(n_revisions: int = 2, n_texts: int = 200, max_length: int = 128, threads: int = 2) -> dict:
    """Seconds per revision by phase (fetch+load, embedding pass, features) and the embedding
    pass's speed-up over the one-text-at-a-time reference on the same loaded model."""
    import hub_fixtures
    import torch

    from topotrain.sources.pythia import (
        embed_texts,
        embedding_features,
        fetch_revision,
        load_model,
        select_texts,
    )

    torch.set_num_threads(threads)
    paragraphs = _paragraphs()
    texts = select_texts(paragraphs, n_texts, 100, 0)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(HF_HOME=tmp, HF_HUB_OFFLINE="1")
        steps = list(range(n_revisions))
        hub_fixtures.make_tiny_neox_cache(
            Path(tmp), "EleutherAI/pythia-70m-random", steps, **PYTHIA_70M
        )
        phases, reference, max_diff = [], [], 0.0
        for step in steps:
            t = [time.perf_counter()]
            rev = fetch_revision("EleutherAI/pythia-70m-random", step)
            model, tok = load_model(rev["snapshot"], device="cpu", dtype="auto")
            t.append(time.perf_counter())
            E, nll, n_tok = embed_texts(model, tok, texts, max_length, batch_size=16)
            t.append(time.perf_counter())
            embedding_features(E, pca_dims=50, maxdim=1)
            t.append(time.perf_counter())
            phases.append(np.diff(t))
            R = reference_embeddings(model, tok, texts, max_length)
            reference.append(time.perf_counter() - t[-1])
            max_diff = max(max_diff, float(np.abs(E - R).max()))
    load, embed, features = np.median(phases, axis=0)
    return {
        "benchmark": "pythia_embedding",
        "architecture": "pythia-70m (6 layers, d 512, 8 heads, vocab 50304), random weights",
        "texts": n_texts,
        "tokens": n_tok + n_texts,
        "threads": threads,
        "load_s": float(load),
        "embed_s": float(embed),
        "features_s": float(features),
        "project_s_per_revision": float(load + embed + features),
        "reference_embed_s": float(np.median(reference)),
        "embed_speedup": float(np.median(reference) / embed),
        "max_abs_embedding_difference": max_diff,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1))
