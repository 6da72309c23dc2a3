"""The JSON report of a batch run: one row per file, then totals (see :func:`build_report`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from blurapp import __version__
from blurapp.batch.pipeline import FileRecord
from blurapp.core.filterspec import FilterSpec
from blurapp.io import write_text

__all__ = ["REPORT_VERSION", "STATUSES", "build_report", "write_report"]

REPORT_VERSION = 1
STATUSES = ("ok", "failed", "skipped", "cancelled")


def _row(r: FileRecord) -> dict[str, Any]:
    return {
        "input": r.input,
        "output": r.output,
        "size": [r.width, r.height] if r.width is not None else None,
        "channels": r.channels,
        "dtype": r.dtype,
        "strategy": r.strategy,
        "timer": r.timer,
        "gpu_ms": r.gpu_ms,
        "filter_ms": r.filter_ms,
        "total_ms": r.total_ms,
        "status": r.status,
        "error": r.error,
    }


def build_report(
    records: Sequence[FileRecord], settings: FilterSpec, wall_s: float
) -> dict[str, Any]:
    """The report as a dict.

    ``files[i]``: ``input``, ``output`` (paths as given/planned), ``size`` ([width, height] or
    null when the file could not be read), ``channels``, ``dtype`` (as read), ``strategy`` (the
    one that ran), ``timer`` ("gpu" or "wall"), ``gpu_ms`` (GPU timestamp total, null when the
    filter was not timed on the GPU), ``filter_ms`` (the filter's passes), ``total_ms`` (read to
    written), ``status`` (one of :data:`STATUSES`) and ``error`` (one line, or null).
    ``totals``: counts per status, ``files``, ``pixels`` and ``megapixels`` of the files written,
    ``wall_s``, ``mpix_per_s``, summed ``gpu_ms`` and ``filter_ms``.
    """
    ok = [r for r in records if r.status == "ok"]
    pixels = sum(r.pixels for r in ok)
    counts = {s: sum(1 for r in records if r.status == s) for s in STATUSES}
    return {
        "blurapp": __version__,
        "report_version": REPORT_VERSION,
        "settings": {
            "kernel": settings.kernel.spec,
            "border": settings.border.name,
            "strategy": settings.strategy,
            "tile": settings.tile,
            "convolve": settings.convolve,
            "range": settings.range_mode,
            "alpha": settings.alpha,
            "linear": settings.linear,
            "dtype": settings.dtype,
            "argv": settings.to_argv(),
        },
        "files": [_row(r) for r in records],
        "totals": {
            "files": len(records),
            **counts,
            "pixels": pixels,
            "megapixels": pixels / 1e6,
            "wall_s": wall_s,
            "mpix_per_s": pixels / 1e6 / wall_s if wall_s > 0 else None,
            "gpu_ms": sum(r.gpu_ms or 0.0 for r in ok),
            "filter_ms": sum(r.filter_ms or 0.0 for r in ok),
        },
    }


def write_report(
    path: str | os.PathLike[str], report: dict[str, Any], *, overwrite: bool = False
) -> None:
    """Write the report atomically; an existing file is replaced only with ``overwrite``."""
    write_text(path, json.dumps(report, indent=2) + "\n", overwrite=overwrite)
