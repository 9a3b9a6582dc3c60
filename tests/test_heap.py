"""heap.keep_freed_memory: glibc's thresholds set for the analysis jobs, and only for them."""

from __future__ import annotations

import platform
from types import SimpleNamespace

import pytest

import topotrain.heap as heap
import topotrain.jobs as jobs


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_keep_freed_memory_takes_on_glibc():
    assert heap.keep_freed_memory() is True


def test_keep_freed_memory_is_a_no_op_without_mallopt(monkeypatch):
    class NoMallopt:
        def __init__(self, name):
            pass

    monkeypatch.setattr(heap.ctypes, "CDLL", NoMallopt)
    assert heap.keep_freed_memory() is False


@pytest.mark.parametrize(
    "module, kept",
    [
        ("topotrain.jobs.analysis", True),
        ("topotrain.jobs.aggregate", True),
        ("topotrain.jobs.figures", True),
        ("topotrain.jobs.train", False),
        ("topotrain.jobs.topology", False),
    ],
)
def test_run_rule_keeps_freed_memory_for_the_analysis_stages(monkeypatch, tmp_path, module, kept):
    calls, ran = [], []

    def adapter(sm):
        ran.append(sm.rule)

    adapter.__module__ = module
    monkeypatch.setattr(jobs, "rule_adapter", lambda rule: adapter)
    monkeypatch.setattr(heap, "keep_freed_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr("topotrain.logs.setup_logging", lambda path: None)
    jobs.run_rule(SimpleNamespace(rule="some_rule", log=[str(tmp_path / "log")]))
    assert ran == ["some_rule"]
    assert calls == ([1] if kept else [])
