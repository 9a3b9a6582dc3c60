"""Which tensors of a checkpoint are the weights of linear maps, found from the architecture.

A model is built from its ``config.json`` on PyTorch's meta device (no memory, no weights) and its
module tree is walked: every ``nn.Linear`` and every GPT-2-style ``Conv1D`` is a linear map; every
``nn.Embedding`` is an embedding; ``get_output_embeddings()`` is the LM head. Rows are always the
output neurons' incoming weights: ``nn.Linear`` stores (out, in), ``Conv1D`` stores (in, out), so a
Conv1D weight is transposed before its rows are used (``WeightMap.transposed``). Names are those the
checkpoint files hold (transformers' save-time renaming applied, e.g. GPT-NeoX's head is saved as
``embed_out``), so the same code reads GPT-2, GPT-NeoX (Pythia), Llama-style and OLMo checkpoints.

Without a ``config.json`` the architecture is unknown: tensors are then chosen by fnmatch
patterns over their names (``pattern_maps``), with the patterns of (in, out)-stored ones given.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from topotrain.sources.tensors import LazyTensors

ROLES = ("linear", "embedding", "head")


class ArchitectureError(ValueError):
    """The architecture cannot be built from its config,
    or a checkpoint lacks one of its weights."""


@dataclass(frozen=True)
class WeightMap:
    """One weight matrix to analyse: its tensor name, role, and whether it is stored (in, out)."""

    name: str
    role: str  # linear, embedding or head
    transposed: bool = False  # stored (in, out) (GPT-2's Conv1D): transposed before use
    module: str = ""  # the module class (Linear, Conv1D, Embedding), or "" when chosen by pattern

    def to_dict(self) -> dict:
        return asdict(self)


def _module_role(module, head) -> tuple[str, bool] | None:
    """(role, transposed) of a module that owns an analysable 2-D weight, else None."""
    import torch
    from transformers.pytorch_utils import Conv1D

    if head is not None and module is head:
        return "head", isinstance(module, Conv1D)
    if isinstance(module, Conv1D):
        return "linear", True
    if isinstance(module, torch.nn.Linear):
        return "linear", False
    if isinstance(module, torch.nn.Embedding):
        return "embedding", False
    return None


def module_weight_maps(model, saved_names: bool = False) -> list[WeightMap]:
    """Every linear map, embedding and LM head of a model's module tree, in module order.

    Names are the model's own state-dict keys, or with ``saved_names`` the keys its checkpoint files
    hold (transformers' save-time renaming applied). A head whose weight is an embedding's (tied)
    is left out: the checkpoint stores that matrix once, as the embedding.
    """
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    owners: dict[int, str] = {}
    maps = []
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        found = _module_role(module, head)
        if found is None or weight is None or weight.dim() != 2:
            continue
        role, transposed = found
        if role == "head" and id(weight) in owners:
            continue  # tied to an embedding
        owners[id(weight)] = name
        key = f"{name}.weight"
        maps.append(WeightMap(key, role, transposed, type(module).__name__))
    if saved_names:
        maps = [WeightMap(_saved_name(model, m.name), m.role, m.transposed, m.module) for m in maps]
    return maps


def _saved_name(model, name: str) -> str:
    """The key under which save_pretrained stores the model's tensor ``name``."""
    try:
        from transformers.modeling_utils import revert_weight_conversion
    except ImportError:  # transformers before the weight-conversion API: names are saved as is
        return name
    weight = model.get_parameter(name)
    try:
        return next(iter(revert_weight_conversion(model, {name: weight})))
    except Exception:  # a many-to-one converter (stacked experts): not a plain 2-D map anyway
        return name


def read_config(source: str | Path | Mapping) -> dict:
    """A config.json as a dict: from a dict, a file, or a folder that holds config.json."""
    if isinstance(source, Mapping):
        return dict(source)
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ArchitectureError(
            f"cannot read model config {path}: {type(err).__name__}: {err}"
        ) from err


def meta_model(config: Mapping):
    """The model a config.json describes, built on the meta device (shapes only, no weights)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    config = dict(config)
    model_type = config.get("model_type")
    if not model_type:
        raise ArchitectureError("config has no model_type: not a transformers config.json")
    if config.get("auto_map"):
        raise ArchitectureError(
            f"architecture {model_type!r} needs custom code (auto_map): give `layers:` patterns "
            "for its linear maps instead"
        )
    try:
        cfg = AutoConfig.for_model(**config)
    except (KeyError, ValueError) as err:
        raise ArchitectureError(
            f"transformers does not know model_type {model_type!r}: {err}"
        ) from err
    names = config.get("architectures") or []
    cls = getattr(transformers, names[0], None) if names else None
    with torch.device("meta"):
        for build in (cls, AutoModelForCausalLM, AutoModel):
            if build is None:
                continue
            try:
                return build._from_config(cfg) if build is cls else build.from_config(cfg)
            except (ValueError, KeyError, AttributeError, TypeError):
                continue
    raise ArchitectureError(f"cannot build a {model_type!r} model from its config")


def model_info(model, config: Mapping) -> dict:
    """Architecture, model_type, parameter count (tied weights once) and width, depth and heads."""
    cfg = model.config

    def first(*keys):
        return next((getattr(cfg, k) for k in keys if getattr(cfg, k, None) is not None), None)

    return {
        "architecture": type(model).__name__,
        "model_type": config.get("model_type"),
        "n_params": int(sum(p.numel() for p in model.parameters())),
        "d_model": first("hidden_size", "n_embd", "d_model"),
        "n_layer": first("num_hidden_layers", "n_layer", "num_layers"),
        "n_head": first("num_attention_heads", "n_head", "num_heads"),
    }


def config_weight_maps(source: str | Path | Mapping) -> tuple[list[WeightMap], dict]:
    """(every linear map, embedding and head under its saved name, model_info) of a config.json."""
    config = read_config(source)
    model = meta_model(config)
    return module_weight_maps(model, saved_names=True), model_info(model, config)


def pattern_maps(
    shapes: Mapping[str, Sequence[int]],
    patterns: Sequence[str],
    transposed: Sequence[str] = (),
) -> list[WeightMap]:
    """The 2-D tensors (name → shape) matching any pattern, as linear maps in name order; those
    matching a ``transposed`` pattern are stored (in, out)."""
    names = [n for n, s in shapes.items() if len(s) == 2 and _matches(n, patterns)]
    return [WeightMap(n, "linear", _matches(n, transposed)) for n in names]


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def select_maps(
    maps: Sequence[WeightMap],
    patterns: Sequence[str] | None = None,
    include_embeddings: bool = False,
    include_head: bool = False,
) -> list[WeightMap]:
    """The maps to analyse: those matching ``patterns`` when given (any role), else every linear
    map, with the embeddings and the head when asked for."""
    if patterns:
        return [m for m in maps if _matches(m.name, patterns)]
    roles = {"linear"} | ({"embedding"} if include_embeddings else set())
    roles |= {"head"} if include_head else set()
    return [m for m in maps if m.role in roles]


def oriented_matrices(
    maps: Sequence[WeightMap], tensors: Mapping[str, np.ndarray], source: str
) -> dict[str, np.ndarray]:
    """{name: matrix with one row per output neuron} for each map, from a checkpoint's tensors
    (from a LazyTensors, a LazyTensors: each matrix read and oriented when looked up); a missing
    or non-2-D tensor is an ArchitectureError naming ``source`` and the tensor."""
    missing = [m.name for m in maps if m.name not in tensors]
    if missing:
        some = sorted(tensors)[:8]
        raise ArchitectureError(
            f"{source}: no tensor {missing[:5]}{' …' if len(missing) > 5 else ''} "
            f"({len(missing)} of {len(maps)} layers missing; it holds "
            f"{some}{' …' * (len(tensors) > 8)})"
        )
    if isinstance(tensors, LazyTensors):
        return lazy_oriented(maps, tensors, source)
    out = {}
    for m in maps:
        W = np.asarray(tensors[m.name])
        if W.ndim != 2:
            raise ArchitectureError(not_a_matrix(source, m.name, W.shape))
        out[m.name] = W.T if m.transposed else W
    return out


def not_a_matrix(source: str, name: str, shape: tuple[int, ...]) -> str:
    return f"{source}: tensor {name} has shape {shape}, not 2-D"


def lazy_oriented(maps: Sequence[WeightMap], tensors: LazyTensors, source: str) -> LazyTensors:
    """``oriented_matrices`` of tensors read one at a time: a LazyTensors whose lookups read the
    stored tensor and transpose it (a view) where the map says so."""
    flipped = {m.name for m in maps if m.transposed}
    shapes = {m.name: tuple(tensors.shapes[m.name]) for m in maps}
    for name, shape in shapes.items():
        if len(shape) != 2:
            raise ArchitectureError(not_a_matrix(source, name, shape))

    def read(name: str) -> np.ndarray:
        W = np.asarray(tensors[name])
        return W.T if name in flipped else W

    oriented = {n: shape[::-1] if n in flipped else shape for n, shape in shapes.items()}
    return LazyTensors(oriented, read, tensors.dtypes, tensors.files)
