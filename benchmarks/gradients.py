"""Benchmark: gradient topology of one training's checkpoints, three ways, each as Snakemake
would run it (fresh processes), on the spine's largest model.

- ``per_checkpoint``: one process per checkpoint (the design before: torch, the code and the
  tokens load 51 times);
- ``per_training``: one process walks the training's checkpoints (the workflow's rule now);
- ``saved_gradients``: one torch process saves each checkpoint's probe gradients, then one
  torch-free process per checkpoint computes their topology (the weight job's kind of process).

Rows: seconds per checkpoint of each, and the ratio of each to ``per_training``; ``equal``: the
per-training records are the per-checkpoint ones (JSON equal, diagrams identical).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.study import study_models
from benchmarks.topology import make_checkpoint
from topotrain.config import DEFAULTS, GPT_LAYERS

PROBE = DEFAULTS["topology"]["gradients"]
TOPO = {k: DEFAULTS["topology"][k] for k in ("max_points", "seed", "maxdim")}
ARGS = f"{list(GPT_LAYERS)!r}, {PROBE['batch_size']}, {PROBE['seed']}, {TOPO!r}"


def python(code: str) -> float:
    """Seconds a fresh interpreter takes to run ``code`` (what a Snakemake job pays)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def per_checkpoint(ckpts: list[Path], tokens: Path, out: Path) -> float:
    seconds = 0.0
    for c in ckpts:
        paths = f"{str(out / f'{c.stem}.json')!r}, {str(out / f'{c.stem}.npz')!r}"
        seconds += python(
            "from topotrain.jobs.topology import write_gradient_topology\n"
            f"write_gradient_topology({paths}, {str(c)!r}, {str(tokens)!r}, {ARGS})"
        )
    return seconds


def per_training(ckpts: list[Path], tokens: Path, out: Path) -> float:
    outs = [(str(out / f"{c.stem}.json"), str(out / f"{c.stem}.npz")) for c in ckpts]
    code = (
        "from topotrain.jobs.topology import write_training_gradients\n"
        f"write_training_gradients({outs!r}, {list(map(str, ckpts))!r}, {str(tokens)!r}, "
        + ARGS
        + ", progress=lambda *a: None)"
    )
    return python(code)


SAVE = """
import numpy as np, torch
from safetensors.numpy import save_file
from topotrain.training.gradients import probe_gradients, probe_offsets, probe_tokens
from topotrain.training.run_state import load_checkpoint
tokens = None
for c, g in zip({ckpts!r}, {grads!r}):
    model, _ = load_checkpoint(c)
    tokens = probe_tokens({tokens!r}, model) if tokens is None else tokens
    offsets = probe_offsets(len(tokens), model.config.block_size, {batch}, {seed})
    grads, _ = probe_gradients(model, tokens, offsets)
    save_file({{k: np.ascontiguousarray(v) for k, v in grads.items()}}, g)
"""
TOPOLOGY = (
    "from topotrain.jobs.topology import write_checkpoint_topology\n"
    "write_checkpoint_topology({g!r}, {j!r}, {n!r}, "
    + repr(list(GPT_LAYERS))
    + ", "
    + ", ".join(f"{k}={v!r}" for k, v in TOPO.items())
    + ")"
)


def saved_gradients(ckpts: list[Path], tokens: Path, out: Path) -> float:
    grads = [str(out / f"{c.stem}.grad.safetensors") for c in ckpts]
    code = SAVE.format(
        ckpts=list(map(str, ckpts)),
        grads=grads,
        tokens=str(tokens),
        batch=PROBE["batch_size"],
        seed=PROBE["seed"],
    )
    seconds = python(code)
    for g in grads:
        stem = Path(g).stem
        seconds += python(
            TOPOLOGY.format(g=g, j=str(out / f"{stem}.json"), n=str(out / f"{stem}.npz"))
        )
    return seconds


def same_records(a: Path, b: Path) -> bool:
    """Every JSON record and npz diagram of folder ``a`` equals ``b``'s (checkpoint paths aside)."""
    for path in sorted(a.glob("*.json")):
        left, right = json.loads(path.read_text()), json.loads((b / path.name).read_text())
        if left != right:
            return False
        with np.load(path.with_suffix(".npz")) as x, np.load(b / f"{path.stem}.npz") as y:
            if x.files != y.files or any(not np.array_equal(x[k], y[k]) for k in x.files):
                return False
    return True


def run(checkpoints: int = 51, model: str = "xl-97k", progress=print) -> list[dict]:
    """One row: seconds per checkpoint of each design, ratios to per_training, equal."""
    config = study_models()[model]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ckpts = [root / f"step_{i:05d}.safetensors" for i in range(checkpoints)]
        for i, path in enumerate(ckpts):
            make_checkpoint(path, config, seed=i)
        tokens = root / "train.bin"
        np.random.default_rng(0).integers(0, 128, 200_000).astype(np.uint8).tofile(tokens)
        seconds = {}
        for name, design in (
            ("per_training", per_training),
            ("per_checkpoint", per_checkpoint),
            ("saved_gradients", saved_gradients),
        ):
            (root / name).mkdir()
            seconds[name] = design(ckpts, tokens, root / name) / checkpoints
            progress(f"gradients {model}: {name} {seconds[name]:.3f} s per checkpoint")
        equal = same_records(root / "per_training", root / "per_checkpoint")
    base = seconds["per_training"]
    return [
        {
            "benchmark": "gradients",
            "model": model,
            "checkpoints": checkpoints,
            **{f"{k}_s": v for k, v in seconds.items()},
            **{f"{k}_ratio": v / base for k, v in seconds.items() if k != "per_training"},
            "equal": equal,
        }
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks gradients", description=__doc__)
    parser.add_argument("--checkpoints", type=int, default=51)
    parser.add_argument("--model", default="xl-97k", choices=sorted(study_models()))
    args = parser.parse_args(argv)
    print(json.dumps(run(args.checkpoints, args.model), indent=1))
