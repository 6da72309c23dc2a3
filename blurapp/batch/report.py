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

__all__ = [
    "REPORT_VERSION",
    "STATUSES",
    "build_report",
    "report_size_bound",
    "report_text",
    "write_report",
]

REPORT_VERSION = 1
STATUSES = ("ok", "failed", "skipped", "cancelled")

#: Bytes of JSON a row's ``error`` may take beyond twice its input's and once its output's
#: path (which messages name); a longer message is cut, ending in "…". This bounds the report's
#: size before any work (:func:`report_size_bound`), so a full disk is found then.
ERROR_ROOM = 1024

#: Bytes of JSON a row's ``notes`` may take beyond four times its output's path (which notes
#: name): the notes that do not fit are left out, the last kept one saying how many.
NOTES_ROOM = 2048

_ELLIPSIS = "\u2026"


def _json_len(text: str) -> int:
    return len(json.dumps(text))


def error_room(input_path: str, output_path: str) -> int:
    """The most bytes of JSON the ``error`` of the row of ``input_path`` takes."""
    return ERROR_ROOM + 2 * _json_len(input_path) + _json_len(output_path)


def _fit_error(error: str | None, room: int) -> str | None:
    """``error``, cut (ending in "…") so that its JSON takes at most ``room`` bytes."""
    if error is None or _json_len(error) <= room:
        return error
    low, high = 0, len(error)  # the longest cut that fits lies in [low, high)
    while high - low > 1:
        mid = (low + high) // 2
        if _json_len(error[:mid] + _ELLIPSIS) <= room:
            low = mid
        else:
            high = mid
    return error[:low] + _ELLIPSIS


def notes_room(output_path: str) -> int:
    """The most bytes of JSON the ``notes`` of the row of ``output_path`` take."""
    return NOTES_ROOM + 4 * _json_len(output_path)


def _fit_notes(notes: Sequence[str], room: int) -> list[str]:
    """``notes`` in their order, as many as fit in ``room`` bytes of JSON (a long one cut as an
    error is); when some are left out, the last kept one ends saying how many."""
    kept: list[str] = []
    used = 2  # the list's brackets
    for i, note in enumerate(notes):
        fitted = _fit_error(note, room - used - 2) or ""
        if kept and fitted != note:
            tail = f" (and {len(notes) - i} more notes)"
            last = _fit_error(kept[-1], _json_len(kept[-1]) - len(tail)) or ""
            kept[-1] = last + tail
            break
        kept.append(fitted)
        used += _json_len(fitted) + 2  # and its comma and space
    return kept


def _row(r: FileRecord) -> dict[str, Any]:
    return {
        "input": r.input,
        "output": r.output,
        "size": [r.width, r.height] if r.width is not None else None,
        "channels": r.channels,
        "dtype": r.dtype,
        "frames": r.frames,
        "strategy": r.strategy,
        "timer": r.timer,
        "gpu_ms": r.gpu_ms,
        "filter_ms": r.filter_ms,
        "total_ms": r.total_ms,
        "status": r.status,
        "error": _fit_error(r.error, error_room(r.input, r.output)),
        "notes": _fit_notes(r.notes, notes_room(r.output)),
    }


def build_report(
    records: Sequence[FileRecord], settings: FilterSpec, wall_s: float
) -> dict[str, Any]:
    """The report as a dict.

    ``files[i]``: ``input``, ``output`` (paths as given/planned), ``size`` ([width, height] or
    null when the file could not be read), ``channels``, ``dtype`` (as read), ``frames`` (of an
    animation or a multi-page file, every one filtered; 1 for a still image), ``strategy`` (the
    one that ran), ``timer`` ("gpu" or "wall"), ``gpu_ms`` (GPU timestamp total, null when the
    filter was not timed on the GPU), ``filter_ms`` (the filter's passes), ``total_ms`` (read to
    written), ``status`` (one of :data:`STATUSES`), ``error`` (one line, or null; a message
    longer than :func:`error_room` is cut, ending in "…") and ``notes`` (a list of one-line
    notes, empty when none: what the decoder met and left out, such as an HDR gain map, and
    what the output's format drops, such as "16-bit AVIF output drops ICC/EXIF/XMP"; as many as
    :func:`notes_room` holds). ``notes`` came after report version 1's first fields: a reader
    of those finds them unchanged.
    ``totals``: counts per status, ``files``, ``frames``, ``pixels`` and ``megapixels`` (all
    frames) of the files written,
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
            "frames": sum(r.frames for r in ok),
            "pixels": pixels,
            "megapixels": pixels / 1e6,
            "wall_s": wall_s,
            "mpix_per_s": pixels / 1e6 / wall_s if wall_s > 0 else None,
            "gpu_ms": sum(r.gpu_ms or 0.0 for r in ok),
            "filter_ms": sum(r.filter_ms or 0.0 for r in ok),
        },
    }


def report_text(report: dict[str, Any]) -> str:
    """The report as the file holds it: indented JSON, ASCII only (other characters escaped,
    file names that are not UTF-8 included), one byte per character."""
    return json.dumps(report, indent=2) + "\n"


# The widest value each field of a row or of the totals can take, for the bound.
_WIDE_INT = -(10**30)
_WIDE_FLOAT = -2.2250738585072014e-308  # the longest repr of a float (24 characters)


def report_size_bound(
    rows: Sequence[tuple[str, str]], settings: FilterSpec, *, margin: int = 4096
) -> int:
    """An upper bound, in bytes, of the report of a batch whose rows are ``rows`` (input and
    output as the records give them), known before any work: every row at its widest (its
    numbers, its names, an error of :func:`error_room` bytes) plus ``margin``.
    """
    from blurapp.core.strategies import STRATEGIES

    widest_name = max([*STRATEGIES, "auto", "cpu"], key=len)
    records = []
    for input_path, output_path in rows:
        error = "x" * (error_room(input_path, output_path) - 2)  # its JSON: exactly the room
        records.append(
            FileRecord(
                input_path,
                output_path,
                status=max(STATUSES, key=len),
                width=_WIDE_INT,
                height=_WIDE_INT,
                channels=_WIDE_INT,
                dtype="x" * 16,
                frames=_WIDE_INT,
                strategy=widest_name + "x" * 16,
                timer="wall",
                gpu_ms=_WIDE_FLOAT,
                filter_ms=_WIDE_FLOAT,
                total_ms=_WIDE_FLOAT,
                error=error,
                notes=("x" * (notes_room(output_path) - 4),),  # its JSON: exactly the room
            )
        )
    report = build_report(records, settings, _WIDE_FLOAT)
    totals = report["totals"]
    for key, value in totals.items():
        totals[key] = _WIDE_FLOAT if isinstance(value, float) or value is None else _WIDE_INT
    return len(report_text(report)) + 64 * len(records) + margin


def write_report(
    path: str | os.PathLike[str], report: dict[str, Any], *, overwrite: bool = False
) -> None:
    """Write the report atomically; an existing file is replaced only with ``overwrite``."""
    write_text(path, report_text(report), overwrite=overwrite)
