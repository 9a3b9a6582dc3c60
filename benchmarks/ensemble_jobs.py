"""Benchmark: one ensemble job against the per-job design, whole trainings, on any device.

    python -m benchmarks ensemble_jobs [--device cuda] [--models xl-97k …] [--members 3]
                                       [--steps 1000] [--repeats 2]

For each model of the study (config.yaml's ``models:``, context 128, vocabulary 128), ``--members``
seeds train ``--steps`` updates two ways, each timed as a whole from process start to the last
file written, as the workflow's jobs run them:

- per job (the reference): one process per seed (``train_model``), all started at once, as
  Snakemake runs the per-seed jobs side by side (``--resources gpu=N``);
- ensemble: one process training every seed as one stacked computation (``train_ensemble``),
  as the first per-seed job of a model does with ``train.ensemble`` (``training.cohort``).

Every process builds its own model, compiles it where ``train.compile: auto`` does (CUDA, runs of
≥ 1,000 steps) and writes its checkpoints. The two ways alternate ``--repeats`` times; the last of
each is reported (the first ones fill torch's compile caches). The ratio ensemble / per job below
1 is the ensemble's gain. Tokens: seeded random characters (the cost does not depend on them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import yaml

from benchmarks.study import ROOT

SINGLE = """
import json, sys
import topotrain.training.train as tr
from topotrain.training.model import GPTConfig
model, cfg = GPTConfig(**json.loads(sys.argv[1])), tr.TrainConfig(**json.loads(sys.argv[2]))
tr.train_model(model, cfg, *sys.argv[3:7], progress=False)
"""
ENSEMBLE = """
import json, sys
from pathlib import Path
import topotrain.training.train as tr
from topotrain.training.ensemble import train_ensemble
from topotrain.training.model import GPTConfig
model, base = GPTConfig(**json.loads(sys.argv[1])), json.loads(sys.argv[2])
seeds, root = json.loads(sys.argv[3]), Path(sys.argv[6])
cfgs = [tr.TrainConfig(**{**base, "seed": s}) for s in seeds]
outs, states = [root / f"out{s}" for s in seeds], [root / f"state{s}" for s in seeds]
train_ensemble(model, cfgs, sys.argv[4], sys.argv[5], outs, states, progress=False)
"""


def study_models() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    return config["models"], config["context"]


def per_job(model: dict, cfg: dict, seeds: list[int], data: tuple, root: Path) -> float:
    """Wall seconds of one process per seed, all at once."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                SINGLE,
                json.dumps(model),
                json.dumps({**cfg, "seed": s}),
                *data,
                str(root / f"out{s}"),
                str(root / f"state{s}"),
            ]  # fmt: skip
        )
        for s in seeds
    ]
    if any(p.wait() != 0 for p in procs):
        raise RuntimeError("a per-seed training failed")
    return time.perf_counter() - start


def ensemble(model: dict, cfg: dict, seeds: list[int], data: tuple, root: Path) -> float:
    """Wall seconds of one process training every seed as one ensemble."""
    start = time.perf_counter()
    args = [json.dumps(model), json.dumps(cfg), json.dumps(seeds), *data, str(root)]
    subprocess.run([sys.executable, "-c", ENSEMBLE, *args], check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    from topotrain.training.model import GPTConfig
    from topotrain.training.train import TrainConfig

    models, context = study_models()
    parser = argparse.ArgumentParser(prog="python -m benchmarks ensemble_jobs")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--models", nargs="+", choices=list(models), default=list(models))
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    seeds = list(range(42, 42 + args.members))
    warmup = min(TrainConfig().warmup_steps, args.steps // 5)
    cfg = asdict(TrainConfig(steps=args.steps, warmup_steps=warmup, device=args.device))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        for name, size in (("train.bin", 1_000_000), ("val.bin", 250_000)):
            rng.integers(0, 128, size, dtype=np.uint8).tofile(Path(tmp) / name)
        data = (str(Path(tmp) / "train.bin"), str(Path(tmp) / "val.bin"))
        for name in args.models:
            arch = models[name]
            model = asdict(
                GPTConfig(
                    n_layer=arch["n_layer"],
                    n_head=arch["n_head"],
                    n_embd=arch["d_model"],
                    block_size=context,
                )  # fmt: skip
            )
            walls = {"per_job": [], "ensemble": []}
            for rep in range(args.repeats):
                for way, fn in (("per_job", per_job), ("ensemble", ensemble)):
                    root = Path(tmp) / f"{name}-{way}-{rep}"
                    walls[way].append(fn(model, cfg, seeds, data, root))
            row = {
                "benchmark": "ensemble_jobs",
                "model": name,
                "device": args.device,
                "members": args.members,
                "steps": args.steps,
                "per_job_s": [round(w, 2) for w in walls["per_job"]],
                "ensemble_s": [round(w, 2) for w in walls["ensemble"]],
                "ratio": round(walls["ensemble"][-1] / walls["per_job"][-1], 3),
            }
            rows.append(row)
            print(
                f"{name} on {args.device}, {args.members} seeds × {args.steps} steps: per job "
                f"{row['per_job_s']} s, ensemble {row['ensemble_s']} s → ensemble/per-job "
                f"{row['ratio']:.2f} (last of each)",
                flush=True,
            )
    out = ROOT / "benchmarks" / "results" / "ensemble_jobs.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
