"""Atomic file writes: every output appears whole or not at all.

Each helper writes to a temporary file in the target's directory, fsyncs it, then ``os.replace``s
it onto the target (atomic on POSIX within one file system). If anything fails the temporary file
is removed and the error re-raised, so a target is never left half-written. ``atomic_write_all``
does this for a set of files (a table's CSV and Markdown): the set appears whole or not at all.
Torch and safetensors are imported inside the functions that need them: this module loads without
torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

_UMASK = os.umask(0)
os.umask(_UMASK)


def _fsync_dir(directory: Path) -> None:
    """Persist a rename by fsyncing its directory (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


Writer = Callable[[IO[bytes]], Any]


def _write_temp(target: Path, writer: Writer) -> str:
    """Call ``writer`` on a temp file beside ``target`` and fsync it; returns the temp file's name.

    On error the temp file is removed; an OSError that names no file (ENOSPC from a write or
    fsync) is re-raised naming ``target``.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fh = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, renamed or removed
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
    )
    try:
        with fh:
            writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(fh.name, 0o666 & ~_UMASK)  # mkstemp's 0600 → the usual permissions
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(fh.name)
        if isinstance(err, OSError) and err.errno and not err.filename:
            raise OSError(err.errno, err.strerror, str(target)) from err
        raise
    return fh.name


def atomic_write_all(writers: Mapping[str | os.PathLike, Writer]) -> None:
    """Write several files, all or none: ``writer(fh)`` for each path, into a temp file beside it.

    Only when every temp file is written and fsynced are they renamed onto their targets. If a
    writer fails (an error, disk full, an interrupt) every temp file is removed and no target is
    touched; if a rename fails, the targets already renamed are removed too.
    """
    temps: dict[Path, str] = {}
    renamed: list[Path] = []
    try:
        for path, writer in writers.items():
            temps[Path(path)] = _write_temp(Path(path), writer)
        for target, temp in temps.items():
            os.replace(temp, target)
            renamed.append(target)
    except BaseException:
        for leftover in [*temps.values(), *renamed]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        raise
    for directory in {target.parent for target in temps}:
        _fsync_dir(directory)


def atomic_write(path: str | os.PathLike, writer: Writer) -> None:
    """Call ``writer(fh)`` on a binary temp file, then atomically move it onto ``path``."""
    atomic_write_all({path: writer})


def atomic_write_texts(texts: Mapping[str | os.PathLike, str], encoding: str = "utf-8") -> None:
    """Atomically write several text files, all or none (see ``atomic_write_all``)."""
    atomic_write_all({p: lambda fh, t=t: fh.write(t.encode(encoding)) for p, t in texts.items()})


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Atomically write ``text`` to ``path``."""
    atomic_write_texts({path: text}, encoding)


def atomic_copy(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Atomically copy the bytes of ``src`` to ``dst`` (``dst`` is never seen half-copied)."""
    with open(src, "rb") as source:
        atomic_write(dst, lambda fh: shutil.copyfileobj(source, fh))


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> None:
    """Atomically ``torch.save`` an object to ``path``."""
    import torch

    atomic_write(path, lambda fh: torch.save(obj, fh))


def atomic_save_safetensors(
    tensors: dict[str, Any], path: str | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """Atomically write tensors (+ string metadata) as safetensors with a canonical header."""
    from safetensors.torch import save

    data = canonical_safetensors(save(tensors, metadata=metadata))
    atomic_write(path, lambda fh: fh.write(data))


def canonical_safetensors(raw: bytes) -> bytes:
    """Rewrite a safetensors blob with its metadata keys sorted, so equal inputs give equal bytes.

    safetensors serialises ``__metadata__`` from a Rust HashMap, whose order differs between
    processes; tensor entries are already in a fixed order. Format: u64-LE header length, JSON
    header padded with spaces to a multiple of 8 bytes, then the tensor data (left untouched).
    """
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    metadata = header.pop("__metadata__", None)
    ordered = {"__metadata__": dict(sorted(metadata.items()))} if metadata else {}
    ordered.update(header)
    text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + raw[8 + n :]


def npz_writer(arrays: Mapping, compressed: bool = False) -> Writer:
    """Writes ``arrays`` as npz onto a handle (no ".npz" appended), for ``atomic_write_all``."""
    import numpy as np

    save = np.savez_compressed if compressed else np.savez
    return lambda fh: save(fh, **arrays)


def write_record(
    out_json: str | os.PathLike,
    out_npz: str | os.PathLike | None,
    doc: dict,
    diagrams: Mapping | None = None,
    *,
    allow_nan: bool = False,
) -> None:
    """A record as JSON (no NaN unless ``allow_nan``: the Pythia records') and its diagrams as npz,
    both or neither; ``out_npz`` None: a record without diagrams. Read back by
    ``sources.records``."""
    text = json.dumps(doc, indent=1, allow_nan=allow_nan) + "\n"
    writers: dict[str | os.PathLike, Writer] = {}
    if out_npz is not None:
        writers[out_npz] = npz_writer(diagrams or {})
    writers[out_json] = lambda fh: fh.write(text.encode())
    atomic_write_all(writers)
