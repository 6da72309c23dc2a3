"""glibc's heap set up for streaming work: a fixed mmap threshold, so that the band and tile
buffers a batch allocates and frees by the thousand, on several threads, go back to the system
when freed instead of staying in per-thread arenas.

With glibc's default (a threshold that grows to the largest block freed, up to 32 MiB) a batch
of six 4K PNGs streamed a band at a time grew from 200 to 346 MiB over the six files; with a
fixed 4 MiB threshold it stays at about 210 MiB (docs/PERFORMANCE.md, "Batch memory"). The
number of arenas is bounded too (:data:`ARENAS`, one per core of the machine the figures were
measured on): each of the dozen threads a streamed batch runs (decoding, tiles, GPU runs, the
writer) otherwise gets an arena of its own, and the blocks under the threshold that each keeps
cost six 4K PNGs in 784² tiles 254-260 MiB at their peak instead of 226 MiB. This is a
process-wide change: only command entry points call :func:`bound_heap`, and
``BLURAPP_HEAP=default`` (or glibc's own ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_ARENA_MAX``)
leaves the heap alone.

:func:`trim_heap` gives the free pages the arenas keep back to the system (glibc's
``malloc_trim``); a batch calls it after each file, so that the next one starts from the files'
floor rather than from what the last one's threads left in their arenas.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["ARENAS", "MMAP_THRESHOLD", "bound_heap", "trim_heap"]

#: Blocks of at least this many bytes are mapped on their own and unmapped when freed.
MMAP_THRESHOLD = 4 * 2**20

#: The most malloc arenas the process's threads share.
ARENAS = 2

_M_MMAP_THRESHOLD = -3  # mallopt's parameter numbers (malloc.h)
_M_ARENA_MAX = -8

_bound: list[object] = []  # glibc's malloc_trim, once bound_heap has set the heap up


def bound_heap(threshold: int = MMAP_THRESHOLD, arenas: int = ARENAS) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes and its arenas at ``arenas``; returns
    whether the threshold was set (not on another C library, nor when the environment says to
    leave the heap alone)."""
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
    if "MALLOC_ARENA_MAX" not in os.environ:
        mallopt(_M_ARENA_MAX, int(arenas))
    done = bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
    trim = getattr(libc, "malloc_trim", None)
    if done and trim is not None and not _bound:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        _bound.append(trim)
    return done


def trim_heap() -> bool:
    """Give the arenas' free pages back to the system (glibc's ``malloc_trim(0)``; a few
    milliseconds); only after :func:`bound_heap` set the heap up, else nothing. Returns whether
    it trimmed."""
    if not _bound:
        return False
    trim = _bound[0]
    return bool(trim(0))  # type: ignore[operator]
