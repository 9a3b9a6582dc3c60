"""Benchmark: one Pythia embedding revision, Pythia-70M's (or 410M's) architecture, random weights.

The project's path (offline fetch from a hub cache → load → batched embedding pass → PCA + VR
+ spectra) is timed per revision against a plain reference measured in the same run: the same
model fed one text at a time, mean-pooled by hand. Both must give the same embeddings (to 1e-4).
The hub cache is fabricated in a temp dir (benchmarks/hub_cache.py): no network is used. The texts
are the local-files overlay's validation split (where absent: fabricated WikiText-like lines).

    python -m benchmarks pythia                                   # 70M, CPU, 2 threads
    python -m benchmarks pythia --arch 410m --device cuda --dtype float16
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import hub_cache
from benchmarks.study import local_corpus

WIKITEXT_VALID = local_corpus("validation")
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
PYTHIA_410M = PYTHIA_70M | {  # EleutherAI/pythia-410m config.json
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
}
ARCHS = {"70m": PYTHIA_70M, "410m": PYTHIA_410M}


def _paragraphs() -> list[str]:
    """The validation split's lines, or 2,000 fabricated ones where it is absent."""
    if WIKITEXT_VALID.is_file():
        return WIKITEXT_VALID.read_text(encoding="utf-8").splitlines()
    return hub_cache.paragraphs(2000)


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


def run(
    n_revisions: int = 2,
    n_texts: int = 200,
    max_length: int = 128,
    threads: int = 2,
    arch: str = "70m",
    device: str = "cpu",
    dtype: str = "auto",
    reference: bool = True,
) -> dict:
    """Seconds per revision by phase (fetch+load, embedding pass, features) and the embedding
    pass's speed-up over the one-text-at-a-time reference on the same loaded model (``dtype``:
    the project's ``pythia.embeddings.dtype``, auto = float16 on CUDA)."""
    import torch

    from topotrain.sources.pythia import select_texts

    torch.set_num_threads(threads)
    texts = select_texts(_paragraphs(), n_texts, 100, 0)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(HF_HOME=tmp, HF_HUB_OFFLINE="1")
        model_id = f"EleutherAI/pythia-{arch}-random"
        hub_cache.make_tiny_neox_cache(Path(tmp), model_id, range(n_revisions), **ARCHS[arch])
        timed = [
            time_revision(model_id, step, texts, max_length, device, dtype, reference)
            for step in range(n_revisions)
        ]
    load, embed, features = np.median([t["phases"] for t in timed], axis=0)
    ref_s = [t["reference_s"] for t in timed if reference]
    a = ARCHS[arch]
    return {
        "benchmark": "pythia_embedding",
        "architecture": f"pythia-{arch} ({a['num_hidden_layers']} layers, d {a['hidden_size']}, "
        f"{a['num_attention_heads']} heads, vocab {a['vocab_size']}), random weights",
        "device": device,
        "dtype": dtype,
        "texts": n_texts,
        "tokens": timed[-1]["tokens"] + n_texts,
        "threads": threads,
        "load_s": float(load),
        "embed_s": float(embed),
        "features_s": float(features),
        "project_s_per_revision": float(load + embed + features),
        "reference_embed_s": float(np.median(ref_s)) if ref_s else None,
        "embed_speedup": float(np.median(ref_s) / embed) if ref_s else None,
        "max_abs_embedding_difference": max(t["max_diff"] for t in timed) if ref_s else None,
    }


def time_revision(
    model_id: str, step: int, texts: list[str], max_length: int, device, dtype, reference: bool
) -> dict:
    """One revision through the project's path: seconds of its phases (fetch+load, embed,
    features), its token count, and, with ``reference``, the reference's seconds and the largest
    difference of their embeddings."""
    from topotrain.sources.pythia import embed_texts, fetch_revision, load_model
    from topotrain.topology.embedding import embedding_features

    sync(device)
    t = [time.perf_counter()]
    rev = fetch_revision(model_id, step)
    model, tok = load_model(rev["snapshot"], device=device, dtype=dtype)
    sync(device)
    t.append(time.perf_counter())
    E, _, n_tok = embed_texts(model, tok, texts, max_length, batch_size=16)
    t.append(time.perf_counter())
    embedding_features(E, pca_dims=50, maxdim=1)
    t.append(time.perf_counter())
    print(
        f"revision {step}: load {t[1] - t[0]:.2f} s, embed {t[2] - t[1]:.2f} s, "
        f"features {t[3] - t[2]:.2f} s",
        flush=True,
    )
    out = {"phases": np.diff(t), "tokens": n_tok}
    if reference:
        R = reference_embeddings(model, tok, texts, max_length)
        out |= {"reference_s": time.perf_counter() - t[-1], "max_diff": float(np.abs(E - R).max())}
    return out


def sync(device: str) -> None:
    """Wait for the GPU (timings on CUDA)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks pythia [options]``: the row as JSON, also to ``--out``."""
    import argparse
    import json

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks pythia", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--arch", choices=list(ARCHS), default="70m")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto", help="auto: float16 on CUDA, float32 on CPU")
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--revisions", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-reference", action="store_true", help="skip the one-text loop")
    parser.add_argument("--out", type=Path, help="also write the result here (JSON)")
    args = parser.parse_args(argv)
    result = run(
        args.revisions,
        args.texts,
        128,
        args.threads,
        args.arch,
        args.device,
        args.dtype,
        not args.no_reference,
    )
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0
