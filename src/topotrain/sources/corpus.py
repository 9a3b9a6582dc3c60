"""Character-level corpus: load WikiText-2 (hub or files), encode to a 128-symbol ASCII vocabulary.

Encoding: every character with code point < 128 maps to itself; any other character (e.g. "é", "–")
is replaced by ``UNKNOWN_CODE`` (ASCII 0x1A, SUBSTITUTE) and counted. The encoded splits are raw
``uint8`` files that training memory-maps; ``manifest.json`` records each source's sha256.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topotrain.config import DEFAULTS, VOCAB_SIZE
from topotrain.hub import (
    SPLIT_FILES,
    dataset_download_command,
    hub_cache_dir,
    hub_offline,
)
from topotrain.io import atomic_write_all

log = logging.getLogger(__name__)
HF_DATASET = DEFAULTS["corpus"]["dataset"]  # the schema's corpus.dataset
HF_CONFIG = DEFAULTS["corpus"]["config"]  # the schema's corpus.config

UNKNOWN_CODE = 0x1A  # ASCII SUBSTITUTE: stands for every non-ASCII character
SPLITS = ("train", "validation")


class CorpusError(RuntimeError):
    """A corpus source that cannot be read (missing, empty, binary, or not cached offline)."""


@dataclass(frozen=True)
class EncodedSplit:
    """One encoded split: codes in [0, 128), the number of replaced characters,
    the source's sha256."""

    codes: np.ndarray
    n_replaced: int
    sha256: str
    source: str


def encode_text(text: str) -> tuple[np.ndarray, int]:
    """Encode text to uint8 codes; characters outside ASCII become UNKNOWN_CODE. Returns
    (codes, n_replaced)."""
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    outside = points >= VOCAB_SIZE
    codes = np.where(outside, UNKNOWN_CODE, points).astype(np.uint8)
    return codes, int(outside.sum())


def decode(codes: np.ndarray) -> str:
    """Inverse of encode_text for ASCII text (UNKNOWN_CODE stays as chr(0x1A))."""
    return bytes(np.asarray(codes, dtype=np.uint8)).decode("ascii")


def read_text_file(path: str | os.PathLike) -> tuple[str, str]:
    """Read a plain UTF-8 text file; returns (text, sha256 of the bytes).
    Raises CorpusError if unusable."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(
            f"corpus file {path} does not exist (check corpus.train / corpus.validation)"
        )
    raw = path.read_bytes()
    if not raw.strip():
        raise CorpusError(f"corpus file {path} is empty")
    if b"\x00" in raw:
        raise CorpusError(
            f"corpus file {path} looks binary (contains NUL bytes); expected UTF-8 text"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(f"corpus file {path} is not valid UTF-8 text: {err}") from None
    return text, hashlib.sha256(raw).hexdigest()


def download_hint(dataset: str, config: str) -> str:
    """The command a user runs on a networked machine to fill the HF cache,
    or the files alternative."""
    return (
        f"pre-download it with `{dataset_download_command(dataset, config)}` "
        "on a machine with network (same HF_HOME), or set "
        "corpus.source: files with corpus.train / corpus.validation pointing at plain text files"
    )


def hf_split_files(dataset: str = HF_DATASET, config: str = HF_CONFIG) -> dict[str, list[Path]]:
    """Resolve the dataset's parquet files per split through the HF cache
    (network only if allowed)."""
    from huggingface_hub import snapshot_download

    try:
        root = snapshot_download(
            repo_id=dataset,
            repo_type="dataset",
            allow_patterns=[f"{config}/*"],
            cache_dir=hub_cache_dir(),
            local_files_only=hub_offline(),
        )
    except Exception as err:  # offline with empty cache, no network, unknown repo
        raise CorpusError(
            f"cannot load {dataset} ({config}) from the Hugging Face hub or its cache "
            f"({type(err).__name__}: {err}); {download_hint(dataset, config)}"
        ) from None
    files = {s: sorted(Path(root, config).glob(SPLIT_FILES[s])) for s in SPLITS}
    missing = [s for s, found in files.items() if not found]
    if missing:
        raise CorpusError(
            f"{dataset} snapshot {root} has no parquet files for split(s) {missing} under {config}/"
        )
    return files


def read_hf_split(files: list[Path]) -> tuple[str, str]:
    """Concatenate the ``text`` column of the split's parquet files; returns
    (text, sha256 of the files)."""
    import pyarrow.parquet as pq

    digest = hashlib.sha256()
    parts = []
    for f in files:
        digest.update(f.read_bytes())
        parts.extend(pq.read_table(f, columns=["text"]).column("text").to_pylist())
    text = "".join(parts)
    if not text.strip():
        raise CorpusError(f"split files {[str(f) for f in files]} hold no text")
    return text, digest.hexdigest()


def load_splits(
    source: str,
    train: str | None = None,
    validation: str | None = None,
    dataset: str = HF_DATASET,
    config: str = HF_CONFIG,
) -> dict[str, EncodedSplit]:
    """Load and encode the train and validation splits from ``source``
    ("huggingface" or "files")."""
    if source == "files":
        paths = {"train": train, "validation": validation}
        for split, p in paths.items():
            if not p:
                raise CorpusError(f"corpus.source is 'files' but corpus.{split} is not set")
        texts = {s: (*read_text_file(p), str(p)) for s, p in paths.items()}
    elif source == "huggingface":
        files = hf_split_files(dataset, config)
        texts = {s: (*read_hf_split(f), f"{dataset}/{config}/{s}") for s, f in files.items()}
    else:
        raise CorpusError(f"unknown corpus.source {source!r}; expected 'huggingface' or 'files'")
    out = {}
    for split, (text, sha, origin) in texts.items():
        codes, n_replaced = encode_text(text)
        out[split] = EncodedSplit(codes, n_replaced, sha, origin)
    return out


def prepare_corpus(
    splits: dict[str, EncodedSplit], out_train: str, out_val: str, manifest: str
) -> dict:
    """Write the encoded splits as raw uint8 files plus a JSON manifest: all three or none."""
    targets = {"train": out_train, "validation": out_val}
    info = {"vocab_size": VOCAB_SIZE, "unknown_code": UNKNOWN_CODE, "splits": {}}
    writers = {}
    for split, enc in splits.items():
        writers[targets[split]] = lambda fh, c=enc.codes: fh.write(c.tobytes())
        info["splits"][split] = {
            "source": enc.source,
            "sha256": enc.sha256,
            "n_chars": int(enc.codes.size),
            "n_replaced": enc.n_replaced,
            "file": str(targets[split]),
        }
        share = enc.n_replaced / max(enc.codes.size, 1)
        log.info(
            "%s: %d characters from %s, %d non-ASCII replaced by code %d (%.4f%%)",
            split,
            enc.codes.size,
            enc.source,
            enc.n_replaced,
            UNKNOWN_CODE,
            100 * share,
        )
    text = json.dumps(info, indent=2) + "\n"
    atomic_write_all({**writers, manifest: lambda fh: fh.write(text.encode())})
    return info


def validation_paragraphs(
    source: str,
    validation: str | None = None,
    dataset: str = HF_DATASET,
    config: str = HF_CONFIG,
) -> list[str]:
    """The validation split as paragraphs: lines of the text file, or rows of the hub's parquet."""
    if source == "files":
        if not validation:
            raise CorpusError("corpus.source is 'files' but corpus.validation is not set")
        text, _ = read_text_file(validation)
        return text.splitlines()
    if source == "huggingface":
        import pyarrow.parquet as pq

        files = hf_split_files(dataset, config)["validation"]
        return [
            line for f in files for line in pq.read_table(f, columns=["text"])["text"].to_pylist()
        ]
    raise CorpusError(f"unknown corpus.source {source!r}; expected 'huggingface' or 'files'")
