"""Benchmark: what per-seed validation windows added to the between-seed variance of val_loss.

Trains a few seeds of one model of the study with ``train_model`` (one thread, one after the
other) on the local-files overlay's corpus (WikiText-2's test split, validation on its validation
split; where those files are absent, this repository's README repeated), then scores every
checkpoint of every seed on its own windows (the scheme before ``train.eval_seed``: the run's
seed + 1), on the common windows and on the whole validation split
(``topotrain.training.window_noise``), and reports the between-seed variance of the per-checkpoint
deviations under each and the share the per-seed windows added,
(var_perseed − var_common) / var_perseed: over every checkpoint and over the second half of
training.

    python -m benchmarks eval_windows                               # tiny-3k, 5 seeds, 1,000 steps
    python -m benchmarks eval_windows --model small-7k --steps 500 --seeds 42 43 44

Results: printed and written to benchmarks/results/eval_windows.json (the summaries, and every
checkpoint's three losses).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.study import RESULTS, local_text, study_models

OUT = RESULTS / "eval_windows.json"
MODELS = study_models()
DRAWS = 32  # window draws per seed for the expected per-seed-window variance


def write_split(split: str, path: Path) -> None:
    """The local-files overlay's ``split`` file (train, validation) encoded into ``path``."""
    from topotrain.sources.corpus import encode_text

    encode_text(local_text(split, 400_000))[0].tofile(path)


def summary_line(label: str, s: dict) -> str:
    full = f", whole split {s['var_full']:.3g}" if "var_full" in s else ""
    return (
        f"{label}: {s['seeds']} seeds × {s['steps']} checkpoints; between-seed variance of the "
        f"val_loss deviations: per-seed windows {s['var_perseed']:.3g}, common windows "
        f"{s['var_common']:.3g}{full}; the windows' own {s['var_windows']:.3g}; "
        f"share the per-seed windows added {100 * s['share']:.1f} %"
    )


def last_draw_variance(runs: dict, val_bin: Path, cfg) -> float:
    """``draw_variance`` of each seed's last checkpoint over DRAWS window draws, mean over seeds."""
    import torch

    from topotrain.training.run_state import checkpoint_name, load_checkpoint
    from topotrain.training.train import load_tokens
    from topotrain.training.window_noise import draw_variance
    from topotrain.training.windows import device_tokens

    values = []
    for out in runs.values():
        model, _ = load_checkpoint(out / checkpoint_name(cfg.steps))
        tokens = device_tokens(load_tokens(val_bin, model.config), torch.device("cpu"))
        values.append(draw_variance(model, tokens, cfg, DRAWS))
    return float(np.mean(values))


def eval_cost(out: Path, val_bin: Path, cfg) -> dict:
    """Seconds of one evaluation of the last checkpoint in ``out``: on the fixed windows and on
    the whole split (best of three each), and how many windows the whole split has."""
    import torch

    from topotrain.training.run_state import checkpoint_name, load_checkpoint
    from topotrain.training.train import load_tokens
    from topotrain.training.windows import (
        device_tokens,
        estimate_val_loss,
        eval_offsets,
        full_offsets,
        full_val_loss,
    )

    model, _ = load_checkpoint(out / checkpoint_name(cfg.steps))
    T = model.config.block_size
    tokens = device_tokens(load_tokens(val_bin, model.config), torch.device("cpu"))
    fixed = eval_offsets(len(tokens), T, cfg)
    timed = {}
    for name, run in (
        ("fixed_s", lambda: estimate_val_loss(model, tokens, fixed)),
        ("full_s", lambda: full_val_loss(model, tokens, cfg.eval_batch_size)),
    ):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        timed[name] = min(times)
    return timed | {"windows": len(full_offsets(len(tokens), T))}


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks eval_windows [options]``: train, score both ways, report."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks eval_windows", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", default="tiny-3k", choices=list(MODELS))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--interval", type=int, default=25, help="checkpoint interval")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44, 45, 46])
    parser.add_argument("--no-full", action="store_true", help="skip the whole-split scores")
    args = parser.parse_args(argv)
    if args.steps % args.interval:
        parser.error(f"--interval {args.interval} must divide --steps {args.steps}")
    if len(set(args.seeds)) < 2:
        parser.error("--seeds: at least two distinct seeds")

    from topotrain.training.train import TrainConfig, train_model
    from topotrain.training.window_noise import window_study, window_variance

    cfg = TrainConfig(
        steps=args.steps,
        checkpoint_interval=args.interval,
        warmup_steps=min(200, args.steps // 10),
        full_eval_every=0,  # scored below, every checkpoint
        device="cpu",
        threads=1,
    )
    with tempfile.TemporaryDirectory() as root:
        data = (Path(root) / "train.bin", Path(root) / "valid.bin")
        write_split("train", data[0])
        write_split("validation", data[1])
        runs, seconds = {}, []
        for seed in args.seeds:
            out, start = Path(root) / f"seed{seed}", time.perf_counter()
            seeded, state = replace(cfg, seed=seed), Path(root) / "state"
            train_model(MODELS[args.model], seeded, *data, out, state, progress=False)
            runs[seed] = out
            seconds.append(time.perf_counter() - start)
            print(f"trained seed {seed} ({seconds[-1]:.0f} s)", flush=True)
        losses, overall = window_study(runs, data[1], cfg, full=not args.no_full)
        cost = eval_cost(runs[args.seeds[0]], data[1], cfg)
        draws = last_draw_variance(runs, data[1], cfg)
    cost["update_s"] = float(np.median(seconds)) / args.steps  # the median run (JIT in the 1st)
    late = window_variance(losses[losses["step"] >= args.steps / 2])
    print(summary_line("every checkpoint", overall))
    print(summary_line(f"steps ≥ {args.steps // 2}", late))
    expected = draws / (late["var_common"] + draws)
    print(
        f"one draw of windows, at step {args.steps}: variance over {DRAWS} draws {draws:.3g} "
        f"(mean over seeds); expected share against the second half's common-window variance "
        f"{100 * expected:.1f} %"
    )
    print(
        f"cost: the fixed windows {cost['fixed_s']:.3f} s, the whole split ({cost['windows']} "
        f"windows) {cost['full_s']:.3f} s, a training update {cost['update_s']:.4f} s"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    record = {"argv": sys.argv, "model": args.model, "all": overall, "second_half": late}
    record |= {"cost": cost, "draw_variance": draws, "expected_share": expected}
    record["losses"] = losses.to_dict(orient="records")
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    return 0
