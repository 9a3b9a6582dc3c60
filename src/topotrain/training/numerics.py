"""The numerics a training runs with, read back from torch: what every seed of a model must share
(``analysis.numerics`` checks it), since a seed trained differently shifts its features and its
loss together. Recorded in each checkpoint's metadata (``run_state.save_checkpoint``)."""

from __future__ import annotations

import torch
from torch import nn


def on_off(flag: bool) -> str:
    return "on" if flag else "off"


def determinism() -> str:
    """torch's deterministic-algorithms mode: on, warn (warn_only) or off."""
    if not torch.are_deterministic_algorithms_enabled():
        return "off"
    return "warn" if torch.is_deterministic_algorithms_warn_only_enabled() else "on"


def tf32(device: torch.device) -> str:
    """Which CUDA products may use TF32: "matmul+cudnn", one of them, or off (always on CPU)."""
    if device.type != "cuda":
        return "off"
    flags = {
        "matmul": torch.backends.cuda.matmul.allow_tf32,
        "cudnn": torch.backends.cudnn.allow_tf32,
    }
    return "+".join(name for name, on in flags.items() if on) or "off"


def run_numerics(model: nn.Module, compiled: bool, attention: str) -> dict[str, str]:
    """{field: value} of the running process for ``model``: device (and on CUDA the GPU's name and
    CUDA version), parameter dtype, float32 matmul precision, TF32, compile, torch threads,
    deterministic algorithms, the resolved attention kernel, torch version; all strings."""
    param = next(model.parameters())
    device = param.device
    fields = {"device": device.type}
    if device.type == "cuda":
        fields["gpu"] = torch.cuda.get_device_name(device)
        fields["cuda"] = str(torch.version.cuda)
    fields["dtype"] = str(param.dtype).removeprefix("torch.")
    fields["matmul"] = torch.get_float32_matmul_precision()
    fields["tf32"] = tf32(device)
    fields["compile"] = on_off(compiled)
    fields["threads"] = str(torch.get_num_threads())
    fields["deterministic"] = determinism()
    fields["attention"] = attention
    fields["torch"] = torch.__version__
    return fields
