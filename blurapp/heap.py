"""glibc's heap set up for streaming work: a fixed mmap threshold, so that the band and tile
buffers a batch allocates and frees by the thousand, on several threads, go back to the system
when freed instead of staying in per-thread arenas.

With glibc's default (a threshold that grows to the largest block freed, up to 32 MiB) a batch
of six 4K PNGs streamed a band at a time grew from 200 to 346 MiB over the six files; with a
fixed 4 MiB threshold it stays at about 210 MiB (docs/PERFORMANCE.md, "Batch memory"). This is a
process-wide change: only command entry points call :func:`bound_heap`, and
``BLURAPP_HEAP=default`` (or glibc's own ``MALLOC_MMAP_THRESHOLD_``) leaves the heap alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["MMAP_THRESHOLD", "bound_heap"]

#: Blocks of at least this many bytes are mapped on their own and unmapped when freed.
MMAP_THRESHOLD = 4 * 2**20

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def bound_heap(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; returns whether it was set (not on
    another C library, nor when the environment says to leave the heap alone)."""
    if os.environ.get("BLURAPP_HEAP") == "default" or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
