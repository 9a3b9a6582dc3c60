"""Where the benchmarks' inputs come from and their results go: the study's model family
(config.yaml), the local corpus (the local-files overlay) and benchmarks/results/."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config.yaml"
LOCAL_FILES = ROOT / "workflow" / "configs" / "local-files.yaml"  # where the corpus files live here
RESULTS = ROOT / "benchmarks" / "results"  # <name>.json per benchmark (git-ignored)


def local_corpus(split: str, path: Path = LOCAL_FILES) -> Path:
    """The local WikiText-2 file of ``split`` (``train`` or ``validation``) that the local-files
    overlay names, resolved against the repository (it may not exist on this machine)."""
    corpus = yaml.safe_load(path.read_text(encoding="utf-8"))["corpus"]
    return (ROOT / corpus[split]).resolve()


def local_text(split: str, min_chars: int) -> str:
    """The text of ``local_corpus(split)``; where that file is absent, this repository's README
    repeated to at least ``min_chars`` characters (the benchmarks then still run)."""
    path = local_corpus(split)
    if path.is_file():
        return path.read_text(encoding="utf-8")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text * (min_chars // len(text) + 1)


def study_models(path: Path = CONFIG) -> dict:
    """name → GPTConfig of the study's family: ``models:`` (d_model, n_layer, n_head) and
    ``context:`` of the config file, vocabulary ``VOCAB_SIZE``."""
    from topotrain.sources.corpus import VOCAB_SIZE
    from topotrain.training.model import GPTConfig

    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {
        name: GPTConfig.from_study(arch, config["context"], VOCAB_SIZE)
        for name, arch in config["models"].items()
    }


def rows_at_threads(threads: int, cases, measure, line, progress=print) -> list[dict]:
    """``measure(*case)`` for each of ``cases`` at ``threads`` torch threads (restored after),
    each row reported as ``progress(line(row))``."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        rows = []
        for case in cases:
            rows.append(measure(*case))
            progress(line(rows[-1]))
        return rows
    finally:
        torch.set_num_threads(old)
