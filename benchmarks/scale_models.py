"""The scale benchmark's checkpoints: randomly initialised models written from their shapes
(no download), one float32 safetensors file each."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from benchmarks.study import study_models

MATRIX_12B = {  # Pythia-12B's largest matrices: d_model 5120, intermediate 20480
    "gpt_neox.layers.0.mlp.dense_h_to_4h.weight": (20480, 5120),
    "gpt_neox.layers.0.mlp.dense_4h_to_h.weight": (5120, 20480),
}

NEOX = {"vocab_size": 50304, "rotary_pct": 0.25, "tie_word_embeddings": False}
HF = {  # name → (model_type, config): public configs' shapes
    "gpt2-small": ("gpt2", {"n_embd": 768, "n_layer": 12, "n_head": 12}),
    "gpt2-medium": ("gpt2", {"n_embd": 1024, "n_layer": 24, "n_head": 16}),
    "pythia-410m": (
        "gpt_neox",
        {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16}
        | {"intermediate_size": 4096, **NEOX},
    ),
    "pythia-1b": (
        "gpt_neox",
        {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 8}
        | {"intermediate_size": 8192, **NEOX},
    ),
}


# --- the checkpoints ----------------------------------------------------------------------------


def write_safetensors(path: Path, shapes: dict[str, tuple[int, ...]], seed: int = 0) -> None:
    """A float32 safetensors file of N(0, 0.02) tensors, written one tensor at a time (the
    writer holds one tensor, not the model)."""
    rng = np.random.default_rng(seed)
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 4 * math.prod(shape)
        header[name] = {
            "dtype": "F32",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(len(text).to_bytes(8, "little") + text)
        for shape in shapes.values():
            (0.02 * rng.standard_normal(shape, dtype=np.float32)).tofile(fh)


def spine_shapes(name: str) -> dict[str, tuple[int, ...]]:
    """The tensors' shapes of the spine's model ``name`` as its checkpoints store them."""
    import torch

    from topotrain.training.model import GPT

    with torch.device("meta"):
        model = GPT(study_models()[name])
    return {n: tuple(t.shape) for n, t in model.state_dict().items() if n != "lm_head.weight"}


def hf_shapes(name: str) -> tuple[dict[str, tuple[int, ...]], object]:
    """(the tensors' shapes as ``save_pretrained`` stores them: a tied head once, the config)."""
    from topotrain.sources.architectures import meta_model

    model_type, fields = HF[name]
    model = meta_model({"model_type": model_type, **fields})
    tied = set(getattr(model, "_tied_weights_keys", None) or ())
    tied = tied if model.config.tie_word_embeddings else set()
    shapes = {n: tuple(t.shape) for n, t in model.state_dict().items() if n not in tied}
    return shapes, model.config


def shapes_of_model(name: str) -> dict[str, tuple[int, ...]]:
    """Every stored tensor's shape of one of MODELS."""
    family = MODELS[name]
    if family == "spine":
        return spine_shapes(name)
    return hf_shapes(name)[0] if family == "hf" else dict(MATRIX_12B)


def write_checkpoint(name: str, folder: Path) -> dict:
    """``name``'s checkpoint in ``folder`` (model.safetensors; config.json for a transformers
    model; a training split for the spine's probe batch); returns the child processes' spec."""
    from topotrain.sources.architectures import config_weight_maps, select_maps

    family, path = MODELS[name], folder / "model.safetensors"
    spec = {"family": family, "file": str(path)}
    if family == "spine":
        from benchmarks.topology import make_checkpoint

        make_checkpoint(path, study_models()[name])
        tokens = np.random.default_rng(0).integers(0, 128, 200_000).astype(np.uint8)
        tokens.tofile(folder / "train.bin")
        return {**spec, "tokens": str(folder / "train.bin")}
    if family == "matrix":
        write_safetensors(path, MATRIX_12B)
        return spec
    shapes, config = hf_shapes(name)
    config.to_json_file(folder / "config.json")
    write_safetensors(path, shapes)
    maps = [m.to_dict() for m in select_maps(config_weight_maps(folder)[0])]
    return {**spec, "maps": maps}


MODELS = {  # name → family, by size: the spine's, transformers models, Pythia-12B's matrices
    **{name: "spine" for name in ("tiny-3k", "small-7k", "med-21k", "large-46k", "xl-97k")},
    "gpt2-small": "hf",
    "pythia-12b-mlp": "matrix",
    "gpt2-medium": "hf",
    "pythia-410m": "hf",
    "pythia-1b": "hf",
}
