"""Benchmark: the tanh GELU against the exact one (the paper's), speed and final loss.

Trains one model of the study twice with ``train_model`` — identical but for ``train.gelu`` —
as two 1-thread processes at once (what ``snakemake --cores 2`` does), on the local-files
overlay's corpus (WikiText-2's test split, validation on its validation split; where those files
are absent, this repository's README repeated), and reports each run's seconds per update and
final validation loss, and their differences.

    python -m benchmarks gelu                          # med-21k, 5,000 steps, seed 42
    python -m benchmarks gelu --model xl-97k --steps 1000 --seeds 42 43

Results: printed (a line per run as it finishes) and written to benchmarks/results/gelu.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.study import RESULTS, local_text, study_models

OUT = RESULTS / "gelu.json"
MODELS = study_models()


def write_split(split: str, path: Path) -> None:
    """The local-files overlay's ``split`` file (train, validation) encoded into ``path``."""
    from topotrain.sources.corpus import encode_text

    encode_text(local_text(split, 400_000))[0].tofile(path)


def one_run(args: tuple) -> dict:
    """Train one (gelu, seed) run in this process; its seconds per update and final val loss."""
    model, gelu, seed, steps, root = args
    from topotrain.training.train import TrainConfig, train_model

    cfg = TrainConfig(
        steps=steps,
        seed=seed,
        gelu=gelu,
        threads=1,
        device="cpu",
        warmup_steps=min(200, steps // 10),
        checkpoint_interval=steps // 10,
    )
    out = Path(root) / f"{gelu}-{seed}"
    start = time.perf_counter()
    data = (Path(root) / "train.bin", Path(root) / "valid.bin")
    train_model(MODELS[model], cfg, *data, out / "ckpt", out / "state", progress=False)
    seconds = time.perf_counter() - start
    evals = (out / "ckpt" / "evals.csv").read_text().strip().splitlines()
    return {
        "benchmark": "gelu",
        "model": model,
        "gelu": gelu,
        "seed": seed,
        "steps": steps,
        "s_per_update": seconds / steps,
        "final_val_loss": float(evals[-1].split(",")[1]),  # step, val_loss, val_loss_full
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks gelu [options]``: both GELUs per seed, two runs at once; a line per
    run and per seed, the rows written to OUT."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks gelu", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", default="med-21k", choices=list(MODELS))
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as root:
        write_split("train", Path(root) / "train.bin")
        write_split("validation", Path(root) / "valid.bin")
        jobs = [(args.model, g, s, args.steps, root) for s in args.seeds for g in ("exact", "tanh")]
        with mp.get_context("spawn").Pool(2) as pool:
            for row in pool.imap_unordered(one_run, jobs):
                rows.append(row)
                print(
                    f"{row['model']} seed {row['seed']} {row['gelu']:>5} GELU: "
                    f"{1e3 * row['s_per_update']:.1f} ms/update, final val loss "
                    f"{row['final_val_loss']:.4f}",
                    flush=True,
                )
    for seed in args.seeds:
        exact, tanh = (
            next(r for r in rows if r["seed"] == seed and r["gelu"] == g) for g in ("exact", "tanh")
        )
        print(
            f"seed {seed}: tanh is {exact['s_per_update'] / tanh['s_per_update']:.3f}× as fast; "
            f"final val loss {tanh['final_val_loss'] - exact['final_val_loss']:+.4f} "
            "(tanh − exact)"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"argv": sys.argv, "rows": rows}, indent=1) + "\n")
    return 0
