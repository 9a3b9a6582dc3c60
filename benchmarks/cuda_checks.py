"""Numbers behind the GPU claims: CUDA against CPU, graphs against eager CUDA, determinism.

CUDA against CPU, CUDA graphs against eager CUDA, and run-to-run determinism on CUDA under each
setting tried. Needs a GPU (exits 2 without one).

For each model asked for (default: tiny-3k, head dim 8; med-21k, head dim 12), each variant trains
``--steps`` updates of the study's setup (batch 64, context 128, the WikiText-2 test split where
present) in its own process, so that process-wide settings (deterministic algorithms, the cuBLAS
workspace, TF32) cannot leak between variants. Variants:

- ``cpu``: eager float32 on the CPU, the reference for "CUDA equals CPU";
- ``cuda-fp32`` / ``cuda-tf32``: eager on CUDA with float32 matrix products at "highest" (true
  float32) and at "high" (TF32, what training uses on CUDA);
- ``cuda-graph``: ``torch.compile`` with CUDA graphs, TF32 (``train.compile: true``);
- CUDA variants under three settings, most of them twice: ``stock``
  (``train.deterministic: false``), ``det`` (``train.deterministic: true``:
  ``topotrain.training.train.cuda_determinism``, i.e. deterministic algorithms, strict, and
  CUBLAS_WORKSPACE_CONFIG) and ``detwarn`` (the same with ``warn_only=True``: ops without a
  deterministic kernel warn and run their usual one).

Reported per pair: the largest relative difference of the per-step training losses, of the final
parameters (‖Δθ‖/‖θ‖) and whether the final parameters are bit-identical.

    python -m benchmarks cuda_checks [--steps 200] [--models tiny-3k med-21k]

Results: printed (a line per variant as it finishes) and written to
benchmarks/results/cuda_checks.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from benchmarks.study import RESULTS, study_models
from benchmarks.training_loops import corpus

OUT = RESULTS / "cuda_checks.json"

VARIANTS = {  # name → (device, matmul precision, compile)
    "cpu": ("cpu", "highest", "false"),
    "cuda-fp32": ("cuda", "highest", "false"),
    "cuda-tf32": ("cuda", "high", "false"),
    "cuda-graph": ("cuda", "high", "true"),
}
PAIRS = [  # (a, b): what each comparison says
    ("cpu", "cuda-fp32/det", "CUDA float32 against CPU"),
    ("cpu", "cuda-tf32/det", "CUDA TF32 (training's setting) against CPU"),
    ("cuda-tf32/det", "cuda-graph/det", "CUDA graphs (compiled) against eager CUDA"),
    ("cuda-tf32/stock", "cuda-tf32/stock#2", "eager CUDA, stock settings, run twice"),
    ("cuda-tf32/det", "cuda-tf32/det#2", "eager CUDA, deterministic, run twice"),
    ("cuda-graph/stock", "cuda-graph/stock#2", "CUDA graphs, stock settings, run twice"),
    ("cuda-graph/det", "cuda-graph/det#2", "CUDA graphs, deterministic, run twice"),
    ("cuda-tf32/detwarn", "cuda-tf32/detwarn#2", "eager CUDA, deterministic warn-only, twice"),
    ("cuda-graph/detwarn", "cuda-graph/detwarn#2", "CUDA graphs, deterministic warn-only, twice"),
    ("cuda-tf32/det", "cuda-tf32/stock", "eager CUDA, deterministic against stock"),
]


def train_variant(model: str, variant: str, steps: int) -> dict:
    """Child process: ``steps`` updates of ``model`` under ``variant``; losses, final parameters,
    seconds, and the warnings raised (a nondeterministic op names itself there)."""
    import warnings

    import torch

    from topotrain.training import train

    name, _, run_tag = variant.partition("#")
    base, _, mode = name.partition("/")
    device, precision, compile_ = VARIANTS[base]
    cfg = train.TrainConfig(
        steps=steps,
        checkpoint_interval=steps,
        warmup_steps=min(20, steps),
        device=device,
        compile=compile_,
        deterministic=mode == "det",
        threads=1,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dev = train.setup_device(cfg)
        if mode == "detwarn":
            train.cuda_determinism(warn_only=True)
        torch.set_float32_matmul_precision(precision)
        start = time.perf_counter()
        compiled = train.use_compile(cfg, dev)
        run = train.build_training(study_models()[model], cfg, dev, corpus(), compiled)
        rows = train.train_steps(run, cfg, 0, steps)
        params = torch.cat([p.detach().flatten() for p in run.model.parameters()]).cpu()
        seconds = time.perf_counter() - start
    return {
        "model": model,
        "variant": variant,
        "losses": [row[1] for row in rows],
        "params": params.double().numpy(),
        "compiled": compiled,
        "seconds": seconds,
        "warnings": sorted({str(w.message).splitlines()[0][:160] for w in caught}),
    }


def compare(a: dict, b: dict) -> dict:
    """How far two variants' runs differ: per-step losses, final parameters, bit identity."""
    la, lb = np.asarray(a["losses"]), np.asarray(b["losses"])
    pa, pb = a["params"], b["params"]
    return {
        "finite": bool(np.isfinite(la).all() and np.isfinite(lb).all()),
        "loss_max_rel_diff": float(np.max(np.abs(la - lb) / np.abs(lb))),
        "final_loss_rel_diff": float(abs(la[-1] - lb[-1]) / abs(lb[-1])),
        "param_rel_diff": float(np.linalg.norm(pa - pb) / np.linalg.norm(pb)),
        "bit_identical": bool(np.array_equal(pa, pb) and np.array_equal(la, lb)),
    }


def run_variants(models: list[str], steps: int, workers: int) -> dict:
    """(model, variant) → ``train_variant``'s result, or {"error": why} for a variant that failed
    (the others go on); a line per variant as it finishes."""
    variants = ["cpu", "cuda-fp32/det"] + [
        f"{base}/{mode}{tag}"
        for base in ("cuda-tf32", "cuda-graph")
        for mode in ("stock", "det", "detwarn")
        for tag in ("", "#2")
    ]
    jobs, results = [(m, v) for m in models for v in variants], {}
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        futures = {pool.submit(train_variant, m, v, steps): (m, v) for m, v in jobs}
        for future, key in futures.items():
            try:
                results[key] = r = future.result()
                loss = r["losses"][-1]
                print(
                    f"{key[0]:<10} {key[1]:<20} {r['seconds']:6.1f} s  loss {loss:.4f}"
                    f"  warnings: {r['warnings'] or 'none'}",
                    flush=True,
                )
            except Exception as err:  # a variant that cannot run says why, the others go on
                results[key] = {"error": f"{type(err).__name__}: {err}"[:400]}
                print(f"{key[0]:<10} {key[1]:<20} FAILED {results[key]['error']}", flush=True)
    return results


def compare_pairs(models: list[str], results: dict) -> list[dict]:
    """A row per model and PAIRS entry: ``compare``'s numbers, or "error" where a side failed."""
    rows = []
    for model in models:
        for a, b, what in PAIRS:
            ra, rb = results[(model, a)], results[(model, b)]
            if "error" in ra or "error" in rb:
                rows.append({"model": model, "a": a, "b": b, "what": what, "error": True})
                continue
            rows.append({"model": model, "a": a, "b": b, "what": what, **compare(ra, rb)})
            r = rows[-1]
            print(
                f"{model:<10} {what:<45} losses ≤ {r['loss_max_rel_diff']:.2e}  final params"
                f" {r['param_rel_diff']:.2e}  bit-identical {r['bit_identical']}",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks cuda_checks [options]``: every variant, then the pairs; written to
    OUT. Exit status 2 without a GPU."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks cuda_checks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--models", nargs="+", default=["tiny-3k", "med-21k"])
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("cuda_checks: no CUDA device", file=sys.stderr)
        return 2
    results = run_variants(args.models, args.steps, args.workers)
    rows = compare_pairs(args.models, results)
    meta = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
        "steps": args.steps,
        "cuda": torch.version.cuda,
    }
    runs = [
        {k: v for k, v in r.items() if k not in ("params", "losses")} | {"key": list(key)}
        for key, r in results.items()
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"meta": meta, "pairs": rows, "runs": runs}, indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0
