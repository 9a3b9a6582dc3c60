"""Weight files of a checkpoint (a hub snapshot, a ``save_pretrained`` directory, a folder of
safetensors or PyTorch files) as NumPy matrices, without building a model.

safetensors is read directly (``safetensors.numpy`` when NumPy knows every dtype, else through
torch for bf16/fp8); ``lazy_weights`` reads it one tensor at a time (a ``LazyTensors``: the
per-layer loop then holds one matrix, not the checkpoint). A PyTorch file (``.bin``, ``.pt``,
``.pth``) is read only through ``torch.load(weights_only=True)``, PyTorch's restricted
unpickler: a file that needs anything more (pickled classes, argparse namespaces, …) is refused
with the command that converts it to safetensors. A sharded checkpoint is read through its index
(``model.safetensors.index.json``), or as every shard in the folder. Every matrix comes back as
float32, keyed as in the checkpoint."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np

from topotrain.hub import WEIGHT_PATTERNS
from topotrain.sources.checkpoint import load_tensors
from topotrain.sources.tensors import LazyTensors, open_safetensors, read_tensor, reraised

NUMPY_DTYPES = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U8", "BOOL"}  # safetensors.numpy
TORCH_SUFFIXES = (".bin", ".pt", ".pth")  # read with torch.load(weights_only=True)
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")  # shard maps
STATE_KEYS = ("state_dict", "model_state_dict", "model", "module")  # where .pt files nest weights


class UnsafeCheckpointError(ValueError):
    """A PyTorch file that ``torch.load(weights_only=True)`` refuses:
    it pickles more than tensors."""


def weight_files(folder: str | Path) -> list[Path]:
    """The shards of a checkpoint folder: those its index file lists (a listed shard that is missing
    is a FileNotFoundError naming both), else the files of the first WEIGHT_PATTERNS that matches:
    *.safetensors, else pytorch_model*.bin (sorted)."""
    root = Path(folder)
    for index in INDEX_FILES:
        if (root / index).is_file():
            return index_shards(root / index)
    return next((found for p in WEIGHT_PATTERNS if (found := sorted(root.glob(p)))), [])


def index_shards(index: Path) -> list[Path]:
    """The shard files a ``*.index.json`` weight map names, sorted; each must exist."""
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"cannot read shard index {index}: {type(err).__name__}: {err}") from err
    shards = [index.parent / name for name in sorted(set(weight_map.values()))]
    missing = [s.name for s in shards if not s.is_file()]
    if missing:
        raise FileNotFoundError(f"{index} lists shards that are missing: {missing}")
    return shards


def conversion_hint(path: Path) -> str:
    """How to turn a PyTorch pickle the restricted loader refuses into a safetensors file."""
    out = path.with_suffix(".safetensors")
    code = (
        "import torch; from safetensors.torch import save_file; "
        f"sd = torch.load('{path}', map_location='cpu', weights_only=False); "
        "sd = next((sd[k] for k in ('state_dict', 'model') "
        "if isinstance(sd, dict) and k in sd), sd); "
        "save_file({k: v.contiguous() for k, v in sd.items() if torch.is_tensor(v)}, "
        f"'{out}')"
    )
    return (
        "topotrain never unpickles arbitrary objects. If you trust the file, convert it once "
        f'(this runs its pickle):\n  python -c "{code}"\n'
        "or, for a transformers model, model.save_pretrained(folder) (safetensors by default), and "
        "point the run at the safetensors file"
    )


def torch_state(path: Path) -> dict:
    """The tensors of a PyTorch file, loaded with ``weights_only=True`` on the CPU; a file the
    restricted unpickler refuses raises UnsafeCheckpointError with ``conversion_hint``."""
    import pickle

    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if "weights only" not in str(err).lower():
            raise
        found = re.search(r"GLOBAL ([\w.]+)", str(err))
        what = f" (it pickles {found.group(1)})" if found else ""
        raise UnsafeCheckpointError(
            f"refused {path}: torch.load(weights_only=True) cannot read it{what}. "
            + conversion_hint(path)
        ) from None
    return state_dict_of(obj, path)


def state_dict_of(obj, path: Path) -> dict:
    """The tensors of a loaded PyTorch object: its top-level tensors, else those of the first
    STATE_KEYS entry that holds some (nanoGPT's ``{"model": …, "iter_num": …}``)."""
    import torch

    if isinstance(obj, Mapping):
        tensors = {k: v for k, v in obj.items() if torch.is_tensor(v)}
        if tensors:
            return tensors
        for key in STATE_KEYS:
            if isinstance(obj.get(key), Mapping):
                nested = {k: v for k, v in obj[key].items() if torch.is_tensor(v)}
                if nested:
                    return nested
        keys = list(obj)[:10]
        raise ValueError(f"{path} holds no tensors (top-level keys {keys}; looked in {STATE_KEYS})")
    raise ValueError(f"{path} holds a {type(obj).__name__}, not a state dict")


def safetensors_dtypes(path: Path) -> set[str]:
    """The dtype names ('F32', 'BF16', …) in a safetensors header, read without loading tensors."""
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as fh:
        return {fh.get_slice(k).get_dtype() for k in fh.keys()}


def read_weight_file(path: Path, names: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """The 2-D floating tensors of one safetensors or PyTorch file (only those in ``names`` when
    given: a safetensors file then reads no other tensor) as float32 NumPy arrays.

    Unreadable (truncated, corrupted, wrong format) → ValueError naming the file; a pickle that
    needs more than tensors → UnsafeCheckpointError.
    """
    path = Path(path)
    try:
        if path.suffix in TORCH_SUFFIXES:
            state = torch_state(path)
            tensors = {
                k: v.float().numpy()
                for k, v in state.items()
                if v.is_floating_point() and (names is None or k in names)
            }
        else:
            tensors = _safetensors(path, names)
    except UnsafeCheckpointError:
        raise
    except Exception as err:
        raise ValueError(f"cannot read weights {path}: {type(err).__name__}: {err}") from err
    return {
        k: v.astype(np.float32) for k, v in tensors.items() if v.ndim == 2 and v.dtype.kind == "f"
    }


def _safetensors(path: Path, names: Collection[str] | None) -> dict[str, np.ndarray]:
    """The tensors (all, or those in ``names``) of a safetensors file as NumPy arrays; dtypes
    NumPy lacks (bf16, fp8) go through torch and come back as float32."""
    from safetensors import safe_open

    if names is None and safetensors_dtypes(path) <= NUMPY_DTYPES:
        return load_tensors(path)
    framework = "np" if safetensors_dtypes(path) <= NUMPY_DTYPES else "pt"
    with safe_open(str(path), framework=framework) as fh:
        keys = [k for k in fh.keys() if names is None or k in names]
        if framework == "np":
            return {k: fh.get_tensor(k) for k in keys}
        return {k: fh.get_tensor(k).float().numpy() for k in keys}


def tensor_shapes(paths: Sequence[str | Path]) -> dict[str, tuple[int, ...]]:
    """{name: shape} of every tensor in the files: safetensors headers only (no tensor read);
    a PyTorch file is loaded (restricted unpickler)."""
    from safetensors import safe_open

    shapes = {}
    for path in map(Path, paths):
        try:
            if path.suffix in TORCH_SUFFIXES:
                shapes |= {k: tuple(v.shape) for k, v in torch_state(path).items()}
                continue
            with safe_open(str(path), framework="np") as fh:
                shapes |= {k: tuple(fh.get_slice(k).get_shape()) for k in fh.keys()}
        except UnsafeCheckpointError:
            raise
        except Exception as err:
            raise ValueError(f"cannot read weights {path}: {type(err).__name__}: {err}") from err
    return shapes


def read_weights(
    paths: Sequence[str | Path], label: str, names: Collection[str] | None = None
) -> dict[str, np.ndarray]:
    """Every 2-D floating tensor (or those in ``names``) of a checkpoint's files (all shards),
    float32; errors are prefixed with ``label``."""
    matrices = {}
    for path in existing(paths, label):
        try:
            matrices.update(read_weight_file(path, names))
        except ValueError as err:
            raise type(err)(f"{label}: {err}") from err
    return matrices


def existing(paths: Sequence[str | Path], label: str) -> list[Path]:
    """The weight files as Paths; FileNotFoundError (prefixed with ``label``) for none or a
    missing one."""
    if not paths:
        raise FileNotFoundError(f"{label}: no weight files")
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"{label}: weight file {path} does not exist")
    return [Path(p) for p in paths]


def lazy_weights(
    paths: Sequence[str | Path], label: str, names: Collection[str] | None = None
) -> Mapping[str, np.ndarray]:
    """``read_weights`` read one tensor at a time: the same float32 matrices as a LazyTensors
    (each read when looked up, none kept) where every file is safetensors; a PyTorch file is
    unpickled whole, so such a checkpoint comes back as ``read_weights`` gives it."""
    files = existing(paths, label)
    if any(path.suffix in TORCH_SUFFIXES for path in files):
        return read_weights(files, label, names)

    def named(path: Path, err: Exception) -> ValueError:
        return ValueError(f"{label}: cannot read weights {path}: {type(err).__name__}: {err}")

    stored = open_safetensors(files, named)
    keep = [
        n
        for n, shape in stored.shapes.items()
        if len(shape) == 2
        and stored.dtypes[n].lstrip("B").startswith("F")  # F32, BF16, F8_*
        and (names is None or n in names)
    ]

    def read(name: str) -> np.ndarray:
        if stored.dtypes[name] in NUMPY_DTYPES:
            return stored[name].astype(np.float32, copy=False)
        with reraised(named, stored.files[name]):  # bf16, fp8: through torch
            return read_tensor(stored.files[name], name, "pt").float().numpy()

    return LazyTensors(
        {n: stored.shapes[n] for n in keep},
        read,
        {n: stored.dtypes[n] for n in keep},
        {n: stored.files[n] for n in keep},
    )


def weight_matrices(folder: str | Path, label: str | None = None) -> Mapping[str, np.ndarray]:
    """Every 2-D floating tensor of the folder's weight files (``weight_files``: all shards),
    float32, each read when looked up (``lazy_weights``); errors are prefixed with ``label``
    (default: the folder)."""
    label = label or str(folder)
    files = weight_files(folder)
    if not files:
        raise FileNotFoundError(f"{label}: no *.safetensors or pytorch_model*.bin")
    return lazy_weights(files, label)
