"""Fabricated Hugging Face hub caches of tiny GPT-NeoX models,
for offline tests of the Pythia branch.

Layout (as huggingface_hub writes it): <hf_home>/hub/models--<org>--<name>/
  blobs/<sha256>                       file contents, shared between revisions
  snapshots/<40-hex commit>/<file>     relative symlinks ../../blobs/<sha256>
  refs/step<n>                         the commit hash of revision step<n> (no newline)
Offline, snapshot_download(revision="step<n>") reads refs/step<n> and returns snapshots/<commit>.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import tempfile
from pathlib import Path

TINY_CONFIG = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 300,
    "max_position_embeddings": 256,
    "rotary_pct": 0.25,
    "use_parallel_residual": True,
}
EOS = "<|endoftext|>"
UNK = "[UNK]"
WORDS = (
    "the a of and to in is was for on that with as by at from his her it an were are which this "
    "be or has had first one their its new after who they two her she been other when there all "
    "during into school time may years more most only over city some world would where later up "
    "such used many can state about national out known university united then made north river "
    "season game film album song band team league war army ship church station road town area "
    "county family house music series record history year early found built began played won "
    "released became named league three second long small large old great high public local"
).split()


def paragraphs(n: int = 300, seed: int = 0) -> list[str]:
    """n WikiText-like lines: ~10% headings ' = Title = ', ~10% short lines, the rest paragraphs.

    Paragraphs hold 2–14 sentences of 6–14 words (≈ 100–900 characters, 15–200 tokens).
    """
    rng = random.Random(seed)

    def sentence() -> str:
        words = rng.choices(WORDS, k=rng.randint(6, 14))
        return " ".join(words).capitalize() + " ."

    lines = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.1:
            lines.append(f" = {' '.join(rng.choices(WORDS, k=3)).title()} = \n")
        elif kind < 0.2:
            lines.append(" " + " ".join(rng.choices(WORDS, k=rng.randint(2, 8))) + " \n")
        else:
            lines.append(" " + " ".join(sentence() for _ in range(rng.randint(2, 14))) + " \n")
    return lines


def make_tokenizer(texts: list[str]):
    """A WordLevel tokenizer (whitespace split) trained on texts, as a PreTrainedTokenizerFast.

    Like Pythia's: eos = bos = '<|endoftext|>', no pad token, no special tokens added to inputs.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=[UNK, EOS]))
    return PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token=UNK, eos_token=EOS, bos_token=EOS
    )


def tiny_model(seed: int, **config):
    """A randomly initialised GPTNeoXForCausalLM (TINY_CONFIG updated by config), seeded by seed."""
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(seed)
    return GPTNeoXForCausalLM(GPTNeoXConfig(**{**TINY_CONFIG, **config})).eval()


def commit_hash(model_id: str, step: int, seed: int) -> str:
    """A fake but stable 40-hex commit id for (model, step, seed)."""
    return hashlib.sha1(f"{model_id}@step{step}/seed{seed}".encode()).hexdigest()


def add_snapshot(repo: Path, commit: str, files_dir: Path) -> Path:
    """Move files_dir's files into repo/blobs (named by sha256) and link them
    from snapshots/commit."""
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for file in sorted(files_dir.iterdir()):
        blob = repo / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        if not blob.exists():
            shutil.move(file, blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / file.name)
    return snapshot


def make_tiny_neox_cache(
    hf_home: Path,
    model_id: str = "EleutherAI/pythia-tiny",
    steps=(0, 1, 2),
    seed: int = 0,
    *,
    dtype: str = "float32",
    weights: str = "safetensors",
    same_weights: dict[int, int] | None = None,
    **config,
) -> dict[int, str]:
    """Write revisions step<n> (weights seeded by seed + n, one shared tokenizer) to the hub cache.

    dtype: "float32", "float16" or "bfloat16" weights; weights: "safetensors", "bin"
    (pytorch_model.bin only) or "both" (model.safetensors and pytorch_model.bin). same_weights
    {step: other}: step serves other's weights byte for byte (as pythia-2.8b's step branches serve
    the final checkpoint's), so both snapshots link one blob. Returns {step: commit hash}.
    """
    import torch

    repo = Path(hf_home) / "hub" / f"models--{model_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(paragraphs())
    if len(tokenizer) > TINY_CONFIG["vocab_size"]:
        raise AssertionError(f"tokenizer has {len(tokenizer)} tokens > vocab_size")
    same_weights = same_weights or {}
    commits = {}
    for step in steps:
        model = tiny_model(seed + same_weights.get(step, step), **config).to(getattr(torch, dtype))
        with tempfile.TemporaryDirectory(dir=repo) as staging:
            staging = Path(staging)
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            if weights in ("bin", "both"):
                torch.save(model.state_dict(), staging / "pytorch_model.bin")
            if weights == "bin":
                (staging / "model.safetensors").unlink()
            commits[step] = commit_hash(model_id, step, seed)
            add_snapshot(repo, commits[step], staging)
        (repo / "refs" / f"step{step}").write_text(commits[step])
    return commits
