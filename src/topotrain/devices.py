"""What ``device: auto`` means, in one place. Parses no torch: the Snakefile imports it.

Two questions, one function each:
- the workflow asks, before any job runs, *will this job get a GPU?* (``wants_gpu``: the host has an
  NVIDIA driver), to request ``gpu=1`` from a scheduler;
- a job asks, once it runs, *which device do I use?* (``resolve_device``: CUDA when torch sees it).

And one that follows from the first: *are a model's seeds trained together?* (``wants_ensemble``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

DEVICES = ("auto", "cpu", "cuda")


def wants_gpu(device: str) -> bool:
    """Whether a job configured with ``device`` should request a GPU: ``cuda``, or ``auto`` on a
    host with ``nvidia-smi`` on its PATH."""
    return device == "cuda" or (device == "auto" and shutil.which("nvidia-smi") is not None)


def resolve_device(device: str) -> str:
    """The torch device name of a running job: ``auto`` → ``cuda`` when torch sees a GPU, else
    ``cpu``; any other name as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def wants_ensemble(setting: str | bool, device: str) -> bool:
    """Whether a model's seeds train as one ensemble (``train.ensemble``): true or false as given;
    ``auto`` where the jobs will get a GPU (``wants_gpu``). On CPU auto is off: on 2 cores the
    study's 15 trainings took 307 s as per-seed jobs and 316 s as ensembles (docs/gpu.md)."""
    if isinstance(setting, bool):
        return setting
    if setting not in ("auto", "true", "false"):
        raise ValueError(f"train.ensemble: {setting!r} is not one of auto, true, false")
    return setting == "true" or (setting == "auto" and wants_gpu(device))


@dataclass(frozen=True)
class Roster:
    """The seeds a model's ensemble may train together: the train rule's ``roster`` param.
    Which seeds train together is scheduling, not a result (each member computes its single
    run's numbers: tests/test_cohort.py; training.cohort trains them), so adding a seed must not
    rerun a finished training: Snakemake's params trigger compares only params of builtin types
    and leaves any other object out, which this class is for."""

    seeds: tuple[int, ...]
