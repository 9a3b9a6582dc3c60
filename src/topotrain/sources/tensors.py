"""Tensors read one at a time: a checkpoint's safetensors files as a mapping that reads a tensor
when it is looked up and keeps none, so the per-layer loop holds one matrix, not a state dict.

A file is opened once with ``safe_open`` (which checks its header and that the data covers it);
its header gives every tensor's name, shape, dtype and byte range without reading data. A lookup
reads that byte range with ``np.fromfile``: a plain read into a new array. (``safe_open``'s
``get_tensor`` copies out of a memory map, so while it reads, the mapped pages and the copy both
count: twice the tensor.) No torch here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

NUMPY_TYPES = {  # safetensors dtype → NumPy type (little-endian, as the format stores them)
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}


class LazyTensors(Mapping):
    """name → tensor, read by ``read(name)`` at every lookup and not kept; ``shapes`` (name →
    shape), ``dtypes`` (name → safetensors dtype name, e.g. "F32") and ``files`` (name → the file
    holding it) are known without reading. Looking a name up twice reads it twice."""

    def __init__(
        self,
        shapes: Mapping[str, tuple[int, ...]],
        read: Callable[[str], np.ndarray],
        dtypes: Mapping[str, str] | None = None,
        files: Mapping[str, Path] | None = None,
    ):
        self.shapes = dict(shapes)
        self.dtypes = dict(dtypes or {})
        self.files = dict(files or {})
        self._read = read

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.shapes:
            raise KeyError(name)
        return self._read(name)

    def __contains__(self, name: object) -> bool:
        return name in self.shapes  # Mapping's own would read the tensor

    def __iter__(self) -> Iterator[str]:
        return iter(self.shapes)

    def __len__(self) -> int:
        return len(self.shapes)

    def __repr__(self) -> str:
        return f"LazyTensors({len(self)} tensors, read one at a time)"


class Entry(NamedTuple):
    """One tensor of a safetensors file: dtype name, shape, and its bytes [start, stop)."""

    dtype: str
    shape: tuple[int, ...]
    start: int
    stop: int


def safetensors_header(path: str | Path) -> dict[str, Entry]:
    """{name: Entry} of a safetensors file, from its header alone (checked by ``safe_open``)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="np"):
        pass  # a corrupted or truncated file fails here
    with open(path, "rb") as fh:
        size = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(size))
    header.pop("__metadata__", None)
    data = 8 + size  # the data follow the 8-byte length and the JSON header
    return {
        name: Entry(
            e["dtype"], tuple(e["shape"]), data + e["data_offsets"][0], data + e["data_offsets"][1]
        )
        for name, e in header.items()
    }


def read_entry(path: str | Path, entry: Entry) -> np.ndarray:
    """The tensor at ``entry`` of a safetensors file, read into a new NumPy array; ValueError for
    a dtype NumPy lacks (bf16, fp8) or a short read."""
    if entry.dtype not in NUMPY_TYPES:
        raise ValueError(f"safetensors dtype {entry.dtype} has no NumPy type")
    count = math.prod(entry.shape)
    with open(path, "rb") as fh:
        fh.seek(entry.start)
        data = np.fromfile(fh, dtype=NUMPY_TYPES[entry.dtype], count=count)
    if data.size != count:
        raise ValueError(f"{path}: {data.size} of the tensor's {count} values present")
    return data.reshape(entry.shape)


def read_tensor(path: str | Path, name: str, framework: str = "np"):
    """One tensor of a safetensors file through ``safe_open`` (a torch tensor with "pt": the
    dtypes NumPy lacks)."""
    from safetensors import safe_open

    with safe_open(str(path), framework=framework) as fh:
        return fh.get_tensor(name)


Named = Callable[[Path, Exception], Exception]  # (file, error) → the error to raise


def open_safetensors(paths: Sequence[str | Path], named: Named | None = None) -> LazyTensors:
    """The tensors of safetensors files (a checkpoint's shards) as a LazyTensors of NumPy arrays
    in their stored dtypes; a name in several files is read from the first. An unreadable header
    fails here, a tensor when it is read: as ``named(file, error)`` when given."""
    entries, files = {}, {}
    for path in map(Path, paths):
        with reraised(named, path):
            header = safetensors_header(path)
        for name, entry in header.items():
            if name not in entries:
                entries[name], files[name] = entry, path

    def read(name: str) -> np.ndarray:
        with reraised(named, files[name]):
            return read_entry(files[name], entries[name])

    shapes = {n: e.shape for n, e in entries.items()}
    return LazyTensors(shapes, read, {n: e.dtype for n, e in entries.items()}, files)


@contextmanager
def reraised(named: Named | None, path: Path) -> Iterator[None]:
    """Raise an error of the block as ``named(path, error)`` (from it), or as it is."""
    try:
        yield
    except Exception as err:
        if named is None:
            raise
        raise named(path, err) from err
