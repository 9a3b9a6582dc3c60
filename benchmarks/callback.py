"""Benchmark: what ``TopologyCallback`` adds to a tiny model's ``Trainer.train()`` (target ≤ 5 %).

The same run with and without the callback, alternating (the order flips every repeat, so drift
in the machine's load falls on both), in one process: a randomly initialised GPT-2 (64 wide, 2
layers, 2 heads, 128 symbols) for 1,000 steps of batch 16 on random tokens, a save every 100 steps,
``report_to`` none, on the CPU, at two contexts: 128, the tiny model of
``examples/trainer_callback.py`` (the target case), and 64, a step 2.5× cheaper against the same
per-save cost (what bounds the overhead). Reference = the run without the callback. Timed:
``trainer.train()`` only (the callback is built before); reported: the median of each and their
ratio (the target), beside it the ratios of the fastest runs and of CPU seconds, the mean seconds
per topology computation and the share of the reference they add up to (estimates less hurt by a
shared machine), and, from a fresh process, the one-time cost of importing ``topotrain.callbacks``
after transformers and of building the callback.

    python -m benchmarks callback                # writes benchmarks/results/callback.json
    python -m benchmarks callback --steps 300    # a shorter run, rows printed as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

TARGET = 1.05  # the callback's run over the reference, at most
CONTEXTS = {"gpt2-64x2-ctx128": 128, "gpt2-64x2-ctx64": 64}  # case → context; the first: target
IMPORT_CODE = """
import time, json
import torch, transformers.trainer
start = time.perf_counter()
from topotrain.callbacks import TopologyCallback
imported = time.perf_counter()
TopologyCallback()
print(json.dumps([imported - start, time.perf_counter() - imported]))
"""


def trainer(out: str, steps: int, save_steps: int, context: int = 128, seed: int = 0):
    """A fresh Trainer on a seeded tiny GPT-2 and seeded random tokens."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    class Tokens(torch.utils.data.Dataset):
        def __init__(self, n: int = 2048):
            self.ids = torch.randint(
                0, 128, (n, context), generator=torch.Generator().manual_seed(0)
            )

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    torch.manual_seed(seed)
    config = GPT2Config(
        n_embd=64,
        n_layer=2,
        n_head=2,
        vocab_size=128,
        n_positions=context,
        bos_token_id=None,
        eos_token_id=None,
    )
    args = TrainingArguments(
        output_dir=out,
        max_steps=steps,
        save_steps=save_steps,
        logging_steps=10,
        per_device_train_batch_size=16,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=seed,
        dataloader_pin_memory=False,
    )
    return Trainer(model=GPT2LMHeadModel(config), args=args, train_dataset=Tokens())


def timed_run(
    with_callback: bool, steps: int, save_steps: int, context: int
) -> tuple[float, float, list[float]]:
    """Wall and CPU seconds (all threads) of ``trainer.train()``, and the seconds of each topology
    computation in it."""
    from topotrain.callbacks import TopologyCallback

    with tempfile.TemporaryDirectory() as out:
        run = trainer(out, steps, save_steps, context)
        callback = TopologyCallback(run) if with_callback else None
        if callback:
            run.add_callback(callback)
        start, cpu = time.perf_counter(), time.process_time()
        run.train()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, callback.seconds if callback else []


def one_time_costs() -> tuple[float, float]:
    """(import of topotrain.callbacks after torch and transformers, building a callback), in a
    fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", IMPORT_CODE], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def run(steps: int = 1000, save_steps: int = 100, repeats: int = 3, progress=print) -> list[dict]:
    """One row per context (CONTEXTS): ``case``'s measurements."""
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)
    return [
        case(name, context, steps, save_steps, repeats, progress)
        for name, context in CONTEXTS.items()
    ]


def case(name: str, context: int, steps: int, save_steps: int, repeats: int, progress) -> dict:
    """Median train seconds with and without the callback, ratio, per-computation cost; beside
    them the ratios of the fastest runs and of CPU seconds (less hurt by a busy machine)."""
    wall, cpu = {"reference": [], "callback": []}, {"reference": [], "callback": []}
    computations: list[float] = []
    load = os.getloadavg()[0]
    for r in range(repeats):
        for kind in ("reference", "callback")[:: 1 if r % 2 == 0 else -1]:
            seconds, cpu_s, each = timed_run(kind == "callback", steps, save_steps, context)
            wall[kind].append(seconds)
            cpu[kind].append(cpu_s)
            computations += each
            extra = f", {len(each)} computations, {np.mean(each):.3f} s each" if each else ""
            progress(
                f"callback {name}: repeat {r + 1}/{repeats} {kind:<9} {seconds:.2f} s (CPU "
                f"{cpu_s:.2f} s){extra}"
            )
    reference, with_callback = (float(np.median(wall[c])) for c in ("reference", "callback"))
    per = float(np.mean(computations))
    import_s, construct_s = one_time_costs()
    row = {
        "benchmark": "callback",
        "model": name,
        "context": context,
        "steps": steps,
        "save_steps": save_steps,
        "repeats": repeats,
        "reference_s": reference,
        "callback_s": with_callback,
        "ratio": with_callback / reference,
        "min_ratio": min(wall["callback"]) / min(wall["reference"]),
        "cpu_ratio": float(np.median(cpu["callback"]) / np.median(cpu["reference"])),
        "per_computation_s": per,
        "computations": len(computations) // repeats,
        "computed_share": per * len(computations) / repeats / reference,
        "import_s": import_s,
        "construct_s": construct_s,
        "reference_runs_s": wall["reference"],
        "callback_runs_s": wall["callback"],
        "load_average": [load, os.getloadavg()[0]],  # 1-minute load at the start and the end
        "target_ratio": TARGET,
        "target_met": with_callback / reference <= TARGET,
    }
    progress(summary(row))
    return row


def summary(row: dict) -> str:
    """``case``'s row as one progress line."""
    return (
        f"callback {row['model']}: ratio {row['ratio']:.3f} (median {row['callback_s']:.2f} s / "
        f"{row['reference_s']:.2f} s; fastest runs {row['min_ratio']:.3f}, "
        f"CPU time {row['cpu_ratio']:.3f}); {row['computations']} computations of "
        f"{row['per_computation_s']:.3f} s = {100 * row['computed_share']:.1f} % of the "
        f"reference; one-time import {row['import_s']:.2f} s, construction "
        f"{row['construct_s']:.3f} s; load average {row['load_average'][0]:.1f} → "
        f"{row['load_average'][1]:.1f}; target ratio ≤ {TARGET}: "
        f"{'met' if row['target_met'] else 'NOT met'}"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks callback [options]``: the rows as JSON; exit status 1 where the
    target case misses its target."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks callback", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--save-steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = run(args.steps, args.save_steps, args.repeats)
    print(json.dumps(rows, indent=1))
    return 0 if rows[0]["target_met"] else 1
