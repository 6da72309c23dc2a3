"""blurapp.heap: the batch command's fixed mmap threshold, and the switches that leave glibc's
heap alone."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys

import pytest

from blurapp.heap import bound_heap

GLIBC = ctypes.util.find_library("c") is not None and hasattr(ctypes.CDLL(None), "mallopt")


@pytest.mark.skipif(not GLIBC, reason="not glibc")
def test_freed_large_blocks_go_back_to_the_system() -> None:
    """In a fresh process with the threshold fixed, 8 MiB blocks allocated and freed again and
    again leave the resident set as they are freed (glibc's own threshold would rise to 8 MiB
    at the first free and keep the next ones in its heap)."""
    script = """
import numpy as np, psutil, sys
from blurapp.heap import bound_heap
if sys.argv[1] == "bound":
    assert bound_heap()
proc = psutil.Process()
for _ in range(2):  # the first free raises glibc's own threshold; the second stays in the heap
    block = np.ones(8 * 2**20, np.uint8)
    del block
rss = proc.memory_info().rss
block = np.ones(8 * 2**20, np.uint8); del block
print(proc.memory_info().rss - rss)
"""
    out = subprocess.run([sys.executable, "-c", script, "bound"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) < 2**20  # the block came and went


def test_the_environment_can_leave_the_heap_alone(monkeypatch) -> None:
    monkeypatch.setenv("BLURAPP_HEAP", "default")
    assert bound_heap() is False
    monkeypatch.delenv("BLURAPP_HEAP")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert bound_heap() is False


@pytest.mark.skipif(not GLIBC, reason="not glibc")
def test_trim_only_after_the_heap_was_set_up() -> None:
    """trim_heap does nothing in a process whose heap bound_heap left alone (a library caller's),
    and gives free pages back after it (a batch, after each file)."""
    script = """
from blurapp.heap import bound_heap, trim_heap
print(trim_heap(), bound_heap(), trim_heap() in (True, False))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True"]
