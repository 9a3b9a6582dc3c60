"""Weight files of a checkpoint folder (a hub snapshot, a ``save_pretrained`` directory) as NumPy
matrices, without building a model.

safetensors is read directly (``safetensors.numpy`` when NumPy knows every dtype, else through
torch for bf16/fp8); a ``.bin`` only through ``torch.load(weights_only=True)``. Every matrix comes
back as float32, keyed as in the checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from topotrain.hub import WEIGHT_PATTERNS
from topotrain.topology.checkpoint import load_tensors

NUMPY_DTYPES = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U8", "BOOL"}  # safetensors.numpy


def weight_files(folder: str | Path) -> list[Path]:
    """The folder's files of the first WEIGHT_PATTERNS that matches: *.safetensors, else
    pytorch_model*.bin (shards sorted)."""
    root = Path(folder)
    return next((found for p in WEIGHT_PATTERNS if (found := sorted(root.glob(p)))), [])


def safetensors_dtypes(path: Path) -> set[str]:
    """The dtype names ('F32', 'BF16', …) in a safetensors header, read without loading tensors."""
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as fh:
        return {fh.get_slice(k).get_dtype() for k in fh.keys()}


def read_weight_file(path: Path) -> dict[str, np.ndarray]:
    """The 2-D floating tensors of one safetensors or .bin file as float32 NumPy arrays.

    Unreadable (truncated, corrupted, wrong format) → ValueError naming the file.
    """
    try:
        if path.suffix == ".bin":
            import torch

            state = torch.load(path, map_location="cpu", weights_only=True)
            tensors = {k: v.float().numpy() for k, v in state.items() if v.is_floating_point()}
        elif safetensors_dtypes(path) <= NUMPY_DTYPES:
            tensors = load_tensors(path)
        else:
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as fh:
                tensors = {k: fh.get_tensor(k).float().numpy() for k in fh.keys()}
    except Exception as err:
        raise ValueError(f"cannot read weights {path}: {type(err).__name__}: {err}") from err
    return {
        k: v.astype(np.float32) for k, v in tensors.items() if v.ndim == 2 and v.dtype.kind == "f"
    }


def weight_matrices(folder: str | Path, label: str | None = None) -> dict[str, np.ndarray]:
    """Every 2-D floating tensor of the folder's weight files (all shards), float32; errors are
    prefixed with ``label`` (default: the folder)."""
    label = label or str(folder)
    files = weight_files(folder)
    if not files:
        raise FileNotFoundError(f"{label}: no *.safetensors or pytorch_model*.bin")
    matrices = {}
    for path in files:
        try:
            matrices.update(read_weight_file(path))
        except ValueError as err:
            raise ValueError(f"{label}: {err}") from err
    return matrices
