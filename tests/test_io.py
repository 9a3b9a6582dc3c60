"""Atomic writes: a target is either the old file, absent, or the complete new file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from topotrain.io import (
    atomic_copy,
    atomic_save_safetensors,
    atomic_torch_save,
    atomic_write,
    atomic_write_text,
)


def leftovers(directory) -> list[str]:
    """Names of temp files our helpers may have left in ``directory``."""
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def failing_writer(fh) -> None:
    fh.write(b"partial")
    raise OSError("disk full")


def test_atomic_write_puts_all_bytes_and_creates_parent_dirs(tmp_path):
    def two_chunks(fh):
        fh.write(b"hello")
        fh.write(b" world")

    target = tmp_path / "a" / "b" / "out.bin"
    atomic_write(target, two_chunks)
    assert target.read_bytes() == b"hello world"
    assert leftovers(target.parent) == []


def test_failed_write_leaves_existing_target_untouched_and_no_temp_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, failing_writer)
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_failed_write_creates_no_target(tmp_path):
    with pytest.raises(OSError):
        atomic_write(tmp_path / "out.txt", failing_writer)
    assert list(tmp_path.iterdir()) == []


def test_interrupt_during_write_also_cleans_up(tmp_path):
    def interrupted(fh):
        fh.write(b"x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "out.txt", interrupted)
    assert list(tmp_path.iterdir()) == []


def test_written_file_gets_umask_permissions_not_tempfile_0600(tmp_path):
    mask = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "x.txt", "é")
    finally:
        os.umask(mask)
    assert (tmp_path / "x.txt").read_text(encoding="utf-8") == "é"
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o666 & ~mask


def test_atomic_copy_copies_bytes_and_missing_source_leaves_nothing(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 100)
    atomic_copy(src, tmp_path / "dst" / "copy.bin")
    assert (tmp_path / "dst" / "copy.bin").read_bytes() == src.read_bytes()
    with pytest.raises(FileNotFoundError):
        atomic_copy(tmp_path / "missing", tmp_path / "dst" / "other.bin")
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["copy.bin"]


def test_safetensors_roundtrip_keeps_tensors_and_metadata(tmp_path):
    tensors = {"w": torch.randn(3, 4), "b": torch.arange(5, dtype=torch.float32)}
    path = tmp_path / "t.safetensors"
    atomic_save_safetensors(tensors, path, metadata={"step": "7", "model": '{"d": 8}'})
    loaded = load_file(path)
    assert loaded.keys() == tensors.keys()
    for name, tensor in tensors.items():
        assert torch.equal(loaded[name], tensor)
    with safe_open(str(path), framework="pt") as fh:
        assert fh.metadata() == {"step": "7", "model": '{"d": 8}'}


def test_safetensors_bytes_do_not_depend_on_metadata_order(tmp_path):
    tensors = {"a": torch.ones(2, 3), "z": torch.zeros(7)}
    keys = ["step", "model", "zeta", "alpha", "mid"]
    blobs = set()
    for shift in range(len(keys)):
        order = keys[shift:] + keys[:shift]
        path = tmp_path / f"{shift}.safetensors"
        atomic_save_safetensors(tensors, path, metadata={k: k.upper() for k in order})
        blobs.add(path.read_bytes())
    assert len(blobs) == 1
    raw = blobs.pop()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0
    assert list(json.loads(raw[8 : 8 + n])["__metadata__"]) == sorted(keys)


def test_failed_safetensors_save_leaves_no_file(tmp_path):
    shared = torch.zeros(4)
    with pytest.raises(RuntimeError):
        atomic_save_safetensors({"a": shared, "b": shared}, tmp_path / "t.safetensors")
    assert list(tmp_path.iterdir()) == []


def test_torch_save_roundtrip_and_unpicklable_object_leaves_old_file(tmp_path):
    path = tmp_path / "state.pt"
    atomic_torch_save({"x": torch.arange(3), "step": 4}, path)
    state = torch.load(path, weights_only=True)
    assert torch.equal(state["x"], torch.arange(3)) and state["step"] == 4
    with pytest.raises(Exception, match="pickle"):
        atomic_torch_save({"f": lambda: 0}, path)
    assert torch.load(path, weights_only=True)["step"] == 4
    assert leftovers(tmp_path) == []


def test_io_imports_and_writes_text_without_torch(tmp_path):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from topotrain.io import atomic_write_text\n"
        f"atomic_write_text({str(tmp_path / 'x.txt')!r}, 'ok')\n"
        "assert 'torch' not in [m for m, v in sys.modules.items() if v is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tmp_path / "x.txt").read_text() == "ok"
