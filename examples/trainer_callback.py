"""Train a tiny character-level GPT-2 with transformers' Trainer and log its weight topology live.

    python examples/trainer_callback.py                      # 400 steps, a save every 50
    python examples/trainer_callback.py --steps 1000 --save-steps 200

The ``TopologyCallback`` bound to the trainer computes the study's per-checkpoint columns at each
save and logs them as ``topology/<column>`` through the Trainer's loggers (here the console; W&B or
TensorBoard with ``report_to``). At the end the logged columns are printed, one column per save.
``<out>`` keeps the standard Trainer layout (checkpoint-N/ with config.json, model.safetensors,
trainer_state.json; trainer_state.json of the whole run), which the workflow's ``runs:`` input
branch analyses. Text: WikiText-2's test split to train on, its validation split to evaluate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

from topotrain import TopologyCallback
from topotrain.sources.corpus import VOCAB_SIZE, encode_text

ROOT = Path(__file__).resolve().parents[1]  # the repository root: default paths are relative to it
DATA = ROOT / "../shared/data/wikitext-2"
CONTEXT = 128  # characters per sequence
EVAL_SEQUENCES = 256  # of the validation text, to keep each evaluation short


class Blocks(torch.utils.data.Dataset):
    """Consecutive, non-overlapping blocks of ``context`` character codes; each is its own label."""

    def __init__(self, codes: np.ndarray, context: int = CONTEXT, limit: int | None = None):
        n = len(codes) // context if limit is None else min(limit, len(codes) // context)
        self.ids = torch.from_numpy(codes[: n * context].astype(np.int64)).view(n, context)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def read_codes(path: Path) -> np.ndarray:
    """The text file's characters as codes < 128 (``encode_text``)."""
    codes, _ = encode_text(path.read_text(encoding="utf-8"))
    return codes


def tiny_gpt2(context: int = CONTEXT) -> GPT2LMHeadModel:
    """A 2-layer, 64-wide GPT-2 over the 128 character codes (about 0.1 M parameters)."""
    config = GPT2Config(vocab_size=VOCAB_SIZE, n_positions=context, n_embd=64, n_layer=2,
                        n_head=2, bos_token_id=None, eos_token_id=None)  # fmt: skip
    return GPT2LMHeadModel(config)


def topology_table(history: list[dict]) -> str:
    """The logged topology columns, one row per column and one column per step (with eval loss)."""
    entries = {e["step"]: e for e in history if any(k.startswith("topology/") for k in e)}
    evals = {e["step"]: e["eval_loss"] for e in history if "eval_loss" in e}
    steps = sorted(entries)
    names = list(dict.fromkeys(k for s in steps for k in entries[s] if k.startswith("topology/")))
    lines = [f"{'column':<44}" + "".join(f"{f'step {s}':>14}" for s in steps)]
    rows = [("eval_loss", [evals.get(s) for s in steps])]
    rows += [(n, [entries[s].get(n) for s in steps]) for n in names]
    for name, values in rows:
        cells = "".join(f"{'—' if v is None else format(v, '.6g'):>14}" for v in values)
        lines.append(f"{name:<44}{cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, default=DATA / "test.txt", help="training text")
    parser.add_argument("--valid", type=Path, default=DATA / "valid.txt", help="validation text")
    parser.add_argument("--out", type=Path, default=ROOT / "results/examples/trainer-run")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--save-steps", type=int, default=50)
    args = parser.parse_args(argv)
    for path in (args.train, args.valid):
        if not path.is_file():
            print(f"error: text file {path} not found (WikiText-2's test.txt and valid.txt are "
                  "expected in ../shared/data/wikitext-2/; or give --train / --valid)",
                  file=sys.stderr)  # fmt: skip
            return 2
    set_seed(0)
    train = Blocks(read_codes(args.train))
    valid = Blocks(read_codes(args.valid), limit=EVAL_SEQUENCES)
    training = TrainingArguments(
        output_dir=str(args.out), max_steps=args.steps, save_steps=args.save_steps,
        eval_strategy="steps", eval_steps=args.save_steps, logging_steps=10,
        per_device_train_batch_size=16, per_device_eval_batch_size=64, learning_rate=3e-3,
        lr_scheduler_type="cosine", warmup_steps=min(30, args.steps // 10), weight_decay=0.1,
        report_to=[], disable_tqdm=True, seed=0, dataloader_pin_memory=torch.cuda.is_available(),
    )  # fmt: skip
    trainer = Trainer(model=tiny_gpt2(), args=training, train_dataset=train, eval_dataset=valid)
    callback = TopologyCallback(trainer)
    trainer.add_callback(callback)
    trainer.train()
    trainer.save_state()  # <out>/trainer_state.json: the whole run's log history
    print(f"\ntopology logged at each save ({args.out}; mean {np.mean(callback.seconds):.3f} s "
          "per computation)")  # fmt: skip
    print(topology_table(trainer.state.log_history))
    for feature in callback.watch:
        step = callback.fired.get(feature)
        later = f"not yet (needs {callback.patience} small changes after the largest)"
        print(f"diminishing returns of {feature}: " + (f"step {step}" if step else later))
    return 0


if __name__ == "__main__":
    sys.exit(main())
