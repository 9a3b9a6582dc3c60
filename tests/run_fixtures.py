"""Checkpoints the tests write themselves: a GPT-2-named safetensors file of random matrices; and
the series the runs: tests read: a real transformers.Trainer run of a tiny GPT-2, and
save_pretrained series of tiny GPT-NeoX, Llama and OLMo models (no download)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

TEXT = "the cat sat on the mat . a dog ran in the park and the cat ran after it . " * 60
NEOX_LIKE = dict(  # GPT-NeoX's and OLMo's tiny config; Llama's adds grouped-query attention
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=32,
)
TINY = {  # model_type → the tiny config of that architecture
    "gpt2": dict(n_embd=16, n_layer=2, n_head=2, n_positions=32),
    "gpt_neox": NEOX_LIKE,
    "llama": NEOX_LIKE | dict(num_key_value_heads=1),
    "olmo": NEOX_LIKE,
    "olmo2": NEOX_LIKE,
}
CONFIGS = {
    "gpt2": "GPT2Config",
    "gpt_neox": "GPTNeoXConfig",
    "llama": "LlamaConfig",
    "olmo": "OlmoConfig",
    "olmo2": "Olmo2Config",
}
VOCAB = 128


def tiny_model(model_type: str, seed: int = 0):
    """A randomly initialised tiny causal LM of one architecture (vocabulary 128), seeded."""
    import torch
    import transformers

    torch.manual_seed(seed)
    cls = getattr(transformers, CONFIGS[model_type])
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config = cls(vocab_size=VOCAB, **TINY[model_type], **ids)
    return transformers.AutoModelForCausalLM.from_config(config)


def windows(text: str = TEXT, context: int = 16) -> np.ndarray:
    """Non-overlapping windows of character codes (ASCII, vocabulary 128)."""
    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8).astype(np.int64)
    n = len(codes) // context
    return codes[: n * context].reshape(n, context)


def trainer_run(out: Path, steps: int = 60, save_steps: int = 20, seed: int = 0) -> Path:
    """Train a tiny GPT-2 with transformers.Trainer: checkpoint-N/ folders every ``save_steps``
    (config.json, model.safetensors, trainer_state.json), evaluated at each save, and the run's
    trainer_state.json in ``out``. Returns ``out``."""
    import torch
    from transformers import Trainer, TrainingArguments

    data = windows()
    split = len(data) * 4 // 5

    class Windows(torch.utils.data.Dataset):
        def __init__(self, rows):
            self.rows = torch.from_numpy(rows)

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            return {"input_ids": self.rows[i], "labels": self.rows[i]}

    args = TrainingArguments(
        output_dir=str(out),
        max_steps=steps,
        save_steps=save_steps,
        eval_strategy="steps",
        eval_steps=save_steps,
        logging_steps=5,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        learning_rate=3e-3,
        report_to=[],
        use_cpu=True,
        seed=seed,
        disable_tqdm=True,
        save_total_limit=None,
    )
    trainer = Trainer(
        model=tiny_model("gpt2", seed),
        args=args,
        train_dataset=Windows(data[:split]),
        eval_dataset=Windows(data[split:]),
    )
    trainer.train()
    trainer.save_state()  # <out>/trainer_state.json: the whole run's log
    return Path(out)


def saved_series(out: Path, model_type: str, steps=(0, 10, 20, 30), shards: bool = False) -> Path:
    """``out/step-<n>/`` save_pretrained folders of one architecture, a different seed each (a
    series whose weights move), and ``out/losses.csv`` (step, loss, eval_loss: a made-up decaying
    curve). ``shards``: each checkpoint written as several safetensors shards with an index."""
    out.mkdir(parents=True, exist_ok=True)
    for i, step in enumerate(steps):
        model = tiny_model(model_type, seed=100 + i)
        model.save_pretrained(out / f"step-{step}", max_shard_size="20KB" if shards else "5GB")
    with open(out / "losses.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", "loss", "eval_loss"])
        for step in range(0, max(steps) + 1, 5):
            writer.writerow([step, 4.0 * np.exp(-step / 20) + 1.0, 4.2 * np.exp(-step / 25) + 1.1])
    return out


def fake_checkpoint(path, seed=0, d=8, scale=1.0, blocks=(0,)):
    """A GPT-2-named safetensors file (float32): embeddings,
    biases and the four linear maps per block."""
    rng = np.random.default_rng(seed)
    tensors = {"transformer.wte.weight": rng.normal(size=(128, d))}
    for b in blocks:
        h = f"transformer.h.{b}"
        tensors[f"{h}.attn.c_attn.weight"] = rng.normal(size=(3 * d, d)) * scale
        tensors[f"{h}.attn.c_attn.bias"] = rng.normal(size=3 * d)
        tensors[f"{h}.attn.c_proj.weight"] = rng.normal(size=(d, d))
        tensors[f"{h}.mlp.c_fc.weight"] = rng.normal(size=(4 * d, d))
        tensors[f"{h}.mlp.c_proj.weight"] = rng.normal(size=(d, 4 * d))
    tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
    save_file(tensors, str(path))
    return {k: v.astype(np.float64) for k, v in tensors.items()}
