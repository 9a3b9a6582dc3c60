"""Weight topology of a live model or a state dict, in one call: ``weight_topology(model)``.

The per-checkpoint summaries of the study (``tables.aggregate.checkpoint_features``: np_mean,
h0_total, …) of the weight matrices a model holds now, for a plain PyTorch loop or a notebook. An
``nn.Module``'s linear maps are found from its module tree (``sources.architectures``); a state dict
has no module tree, so its matrices are chosen by fnmatch patterns. No torch import here: tensors
are duck-typed (``.detach().float().cpu().numpy()``), so ``import topotrain.live`` stays light.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from topotrain.analysis.tables.aggregate import checkpoint_features
from topotrain.config import DEFAULTS, ENGINE
from topotrain.sources.architectures import (
    WeightMap,
    config_weight_maps,
    module_weight_maps,
    oriented_matrices,
    pattern_maps,
    select_maps,
)
from topotrain.topology.record import record
from topotrain.topology.settings import TopologySettings

_TOPOLOGY = DEFAULTS["topology"]  # the schema's topology defaults


SOURCE = "live model"  # names the input in error messages


def is_module(obj) -> bool:
    """Whether ``obj`` looks like a torch ``nn.Module`` (duck-typed: no torch import)."""
    return callable(getattr(obj, "named_modules", None)) and callable(
        getattr(obj, "state_dict", None)
    )


def to_numpy(tensor) -> np.ndarray:
    """A tensor (torch, detached to float32 on the CPU; no copy for a float32 CPU tensor) or an
    array-like as a NumPy array."""
    if callable(getattr(tensor, "detach", None)):
        return tensor.detach().float().cpu().numpy()
    return np.asarray(tensor)


def is_float_matrix(tensor) -> bool:
    """Whether a tensor or array is 2-D with a floating dtype."""
    if len(getattr(tensor, "shape", ())) != 2:
        return False
    is_float = getattr(tensor, "is_floating_point", None)
    return bool(is_float()) if callable(is_float) else np.asarray(tensor).dtype.kind == "f"


def model_maps(
    model,
    layers: Sequence[str] | None = None,
    include_embeddings: bool = False,
    include_head: bool = False,
) -> list[WeightMap]:
    """The maps of a module to analyse: those matching ``layers`` (any role), else its linear maps
    (nn.Linear, GPT-2 Conv1D), with the embeddings and the untied LM head when asked for."""
    maps = select_maps(module_weight_maps(model), layers, include_embeddings, include_head)
    if not maps:
        found = [m.name for m in module_weight_maps(model)]
        raise ValueError(
            f"{SOURCE}: no weight matrix matches {layers or 'the roles asked for'}; "
            f"it holds {found[:8]}{' …' if len(found) > 8 else ''}"
        )
    return maps


def state_dict_maps(
    state_dict: Mapping, layers: Sequence[str] | None = None, transposed: Sequence[str] = ()
) -> list[WeightMap]:
    """The 2-D floating tensors of a state dict matching ``layers`` (default: all); those matching a
    ``transposed`` pattern are stored (in, out) and are transposed before use."""
    shapes = {k: tuple(t.shape) for k, t in state_dict.items() if is_float_matrix(t)}
    maps = pattern_maps(shapes, list(layers or ["*"]), transposed)
    if not maps:
        raise ValueError(
            f"{SOURCE}: no 2-D floating tensor matches {list(layers or ['*'])}; "
            f"2-D ones: {sorted(shapes)[:8]}"
        )
    return maps


def matrices(tensors: Mapping, maps: Sequence[WeightMap]) -> dict[str, np.ndarray]:
    """{name: matrix with one row per output neuron} of ``maps`` from tensors keyed by name."""
    return oriented_matrices(maps, {m.name: to_numpy(tensors[m.name]) for m in maps}, SOURCE)


def module_matrices(model, maps: Sequence[WeightMap]) -> dict[str, np.ndarray]:
    """``matrices`` of a module's current weights, read parameter by parameter (no state dict)."""
    return matrices({m.name: model.get_parameter(m.name) for m in maps}, maps)


def summary_columns(
    records: list[dict], maxdim: int = _TOPOLOGY["maxdim"]
) -> dict[str, float | int]:
    """The per-checkpoint columns (``checkpoint_features``) of one checkpoint's per-layer records,
    as plain Python numbers; with maxdim 0 the h1_* columns (not computed) are left out."""
    layers = [{"model": "", "seed": 0, "step": 0, **r} for r in records]
    row = checkpoint_features(pd.DataFrame(layers)).iloc[0].drop(["model", "seed", "step"])
    out = {}
    for name, value in row.items():
        if maxdim == 0 and name.startswith("h1_"):
            continue
        out[name] = int(value) if isinstance(value, (int, np.integer)) else float(value)
    return out


def matrix_topology(
    mats: Mapping[str, np.ndarray], settings: TopologySettings | None = None
) -> tuple[dict[str, float | int], list[dict]]:
    """(summary columns, per-layer records) of oriented matrices: ``topology.record`` over all of
    them with ``settings`` (rows subsampled to its ``max_points``; default: the schema's), then
    ``summary_columns``.

    NumPy's BLAS runs at one thread meanwhile: its idle threads spin for a while after each call
    and, on a small CPU, slow the training step that follows by about as much as this call takes.
    """
    settings = settings or TopologySettings()
    with threadpool_limits(limits=1, user_api="blas"):
        records = record(mats, ["*"], settings, source=SOURCE).layers
    return summary_columns(records, settings.maxdim), records


def module_topology(
    model, maps: Sequence[WeightMap], settings: TopologySettings | None = None
) -> tuple[dict[str, float | int], list[dict]]:
    """``matrix_topology`` of a module's current weights along ``maps`` (``model_maps``'s):
    ``weight_topology(model)``'s computation, for a caller that walks the module once."""
    return matrix_topology(module_matrices(model, maps), settings)


def warm_up(settings: TopologySettings | None = None) -> float:
    """Seconds taken to load the Vietoris–Rips kernels (imports, first calls) on a 3×2 matrix,
    so that the first measured ``matrix_topology(…, settings)`` does not pay for them."""
    start = time.perf_counter()
    matrix_topology({"warm-up": np.arange(6.0).reshape(3, 2)}, settings)
    return time.perf_counter() - start


def state_matrices(
    state_dict: Mapping,
    layers: Sequence[str] | None,
    transposed: Sequence[str],
    config=None,
    include_embeddings: bool = False,
    include_head: bool = False,
) -> dict[str, np.ndarray]:
    """The oriented matrices of a state dict. With ``config`` (a transformers config, a
    config.json dict, file or folder) they are chosen and oriented from the architecture, as the
    workflow and a module do; without one, by patterns (every 2-D floating tensor by default),
    with a warning that names them and how to match the workflow."""
    if config is not None:
        if transposed:
            raise ValueError("transposed is for a state dict without config: the config orients")
        source = config.to_dict() if callable(getattr(config, "to_dict", None)) else config
        maps, _ = config_weight_maps(source)
        return matrices(state_dict, select_maps(maps, layers, include_embeddings, include_head))
    if include_embeddings or include_head:
        raise ValueError("a state dict without config has no roles: pass config= or `layers`")
    maps = state_dict_maps(state_dict, layers, transposed)
    names = [m.name for m in maps]
    warnings.warn(
        f"state dict without config: {len(names)} matrices by pattern "
        f"({names[:6]}{' …' if len(names) > 6 else ''}), as stored except `transposed` ones; "
        "pass config=model.config (or the checkpoint's config.json) to choose and orient them as "
        "the workflow and weight_topology(model) do",
        UserWarning,
        stacklevel=3,
    )
    return matrices(state_dict, maps)


def weight_topology(
    model_or_state_dict,
    layers: Sequence[str] | None = None,
    transposed: Sequence[str] = (),
    include_embeddings: bool = False,
    include_head: bool = False,
    max_points: int = _TOPOLOGY["max_points"],
    seed: int = _TOPOLOGY["seed"],
    maxdim: int = _TOPOLOGY["maxdim"],
    n_threads: int = 1,
    per_layer: bool = False,
    config=None,
    engine: str = ENGINE,
) -> dict:
    """The study's per-checkpoint topology columns (np_mean, np_std, h0_total, h1_total, …; NP is
    unitless, VR totals in weight units) of a model's weight matrices now, as a flat dict of
    Python floats and ints.

    - ``nn.Module``: its linear maps (nn.Linear, GPT-2 Conv1D; rows = output neurons), the
      embeddings and the untied LM head with ``include_embeddings`` / ``include_head``, or the
      weights matching the fnmatch patterns ``layers`` (names as in ``model.state_dict()``).
    - state dict (name → tensor or array) with ``config`` (``model.config``, a config.json dict,
      file or folder): the same matrices, oriented the same way, as for the module — one answer
      per model. Without ``config``: the 2-D floating tensors matching ``layers``, default every
      one (embeddings and a head, a tied one twice), as stored except those matching a
      ``transposed`` pattern (e.g. GPT-2's ``["*.c_attn.weight", "*.c_proj.weight",
      "*.c_fc.weight"]``); a warning names them.

    ``per_layer``: also return the per-layer records (``topology.layers.RECORD_KEYS``) as "layers".
    ``engine``: the Vietoris–Rips engine, ``ripser``, ``giotto-ph`` (the ``fast`` extra) or ``auto``
    (giotto-ph when installed), as the workflow's ``topology.engine``; the bars agree (tested).
    """
    obj = model_or_state_dict
    settings = TopologySettings(max_points, seed, maxdim, engine, threads=n_threads)
    if is_module(obj):
        if transposed or config is not None:
            raise ValueError(
                "transposed and config are for state dicts: a module's layout comes from its types"
            )
        maps = model_maps(obj, layers, include_embeddings, include_head)
        summary, records = module_topology(obj, maps, settings)
    elif isinstance(obj, Mapping):
        options = (include_embeddings, include_head)
        mats = state_matrices(obj, layers, transposed, config, *options)
        summary, records = matrix_topology(mats, settings)
    else:
        raise TypeError(f"need an nn.Module or a state dict, got {type(obj).__name__}")
    return {**summary, "layers": records} if per_layer else summary
