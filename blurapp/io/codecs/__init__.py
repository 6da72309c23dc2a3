"""The codec registry: one module per image format, each declaring its extensions, magic bytes,
the pixel types and channels it stores, the metadata it carries, and its probe, read and write.

This is the only list of formats: the command line's ``--format`` choices and help, the
window's open and save filters, ``blurapp info``, the README's format table and
:mod:`blurapp.io.images` all read it (``tests/io/test_codecs.py`` fails on a literal list of
formats elsewhere). Adding a format is adding one module here, imported below and named in
``_MODULES``. Codecs import their libraries when they run, so this import is cheap.
"""

from __future__ import annotations

import os
from pathlib import Path

from blurapp.core.errors import UsageError
from blurapp.io.codecs.base import (
    METADATA_KINDS,
    Animation,
    Codec,
    ImageData,
    ImageInfo,
    ReadOptions,
    WriteOptions,
)

__all__ = [
    "CODECS",
    "METADATA_KINDS",
    "Animation",
    "Codec",
    "ImageData",
    "ImageInfo",
    "ReadOptions",
    "WriteOptions",
    "codec_for_extension",
    "format_lines",
    "format_report",
    "format_table",
    "get_codec",
    "labels",
    "readable_extensions",
    "sniff",
    "writable_formats",
]

# Imported by name, not by importlib: PyInstaller's module finder sees these imports (and the
# codecs' own function-level imports of their libraries) and bundles them.
from blurapp.io.codecs import avif, bmp, gif, heif, jpeg, npy, png, raw, tiff, webp

#: The codec modules, in the order formats are listed to users.
_MODULES = (png, jpeg, tiff, webp, bmp, npy, heif, avif, gif, raw)

#: Every codec by name, in the order of ``_MODULES``.
CODECS: dict[str, Codec] = {m.CODEC.name: m.CODEC for m in _MODULES}

# Camera raw is recognised before TIFF: a DNG, a NEF or an ARW has a TIFF header.
_SNIFF_ORDER = sorted(CODECS.values(), key=lambda c: 0 if c.name == "raw" else 1)
_BY_EXTENSION = {ext: c for c in CODECS.values() for ext in c.extensions}


def get_codec(name: str) -> Codec:
    """The codec of the format ``name`` (a key of :data:`CODECS`).

    Raises:
        UsageError: for a name no codec has.
    """
    try:
        return CODECS[name]
    except KeyError:
        raise UsageError(
            f"unknown image format {name!r}; choose one of {', '.join(writable_formats())}"
        ) from None


def writable_formats() -> tuple[str, ...]:
    """The names of the formats blurapp writes (``--format``'s choices)."""
    return tuple(name for name, c in CODECS.items() if c.writes)


def readable_extensions() -> frozenset[str]:
    """Every extension of a format blurapp reads (what a folder given to batch is scanned for)."""
    return frozenset(_BY_EXTENSION)


def codec_for_extension(path: str | os.PathLike[str]) -> Codec | None:
    """The codec that ``path``'s extension names, or ``None``."""
    return _BY_EXTENSION.get(Path(path).suffix.lower())


def sniff(head: bytes, path: Path) -> Codec | None:
    """The codec of a file whose first bytes are ``head``, whatever its name says."""
    for codec in _SNIFF_ORDER:
        if codec.sniff(head, path):
            return codec
    return None


def labels(*, writable: bool = False) -> str:
    """The formats' names for a sentence: "PNG, JPEG, ... or camera raw"."""
    names = [c.label for c in CODECS.values() if c.writes or not writable]
    return ", ".join(names[:-1]) + " or " + names[-1]


def format_report() -> list[dict[str, object]]:
    """One entry per format, for ``blurapp info``: what it stores and whether it works here."""
    report = []
    for c in CODECS.values():
        report.append(
            {
                "format": c.name,
                "label": c.label,
                "extensions": list(c.extensions),
                "magic": c.magic,
                "dtypes": list(c.dtypes),
                "channels": list(c.channels),
                "metadata": [k for k in METADATA_KINDS if k in c.metadata],
                "frames": c.multi_frame,
                "writes": c.writes,
                "lossy": c.lossy,
                "library": c.library,
                "available": c.unavailable() or "yes",
            }
        )
    return report


def format_lines() -> dict[str, str]:
    """One line per format for ``blurapp info``: label, extensions, types, channels, metadata,
    frames, whether it writes, and why it would not work here."""
    lines = {}
    for entry in format_report():
        why = entry["available"]
        lines[str(entry["format"])] = "  ".join(
            [
                str(entry["label"]),
                " ".join(entry["extensions"]),  # type: ignore[arg-type]
                "/".join(entry["dtypes"]),  # type: ignore[arg-type]
                "channels " + ",".join(map(str, entry["channels"])),  # type: ignore[arg-type]
                "keeps " + (",".join(entry["metadata"]) or "no metadata"),  # type: ignore[arg-type]
                "frames" if entry["frames"] else "one image",
                ("writes" + (" (lossy)" if entry["lossy"] else ""))
                if entry["writes"]
                else "read only",
                f"via {entry['library']}",
                *([] if why == "yes" else [f"UNAVAILABLE: {why}"]),
            ]
        )
    return lines


def format_table() -> str:
    """The README's table of formats (``tests/io/test_codecs.py`` checks that it is there)."""
    rows = [
        "| format | extensions | pixel types | channels | metadata kept | frames | writes |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in CODECS.values():
        meta = ", ".join(k.upper() if k != "timing" else "frame timing" for k in METADATA_KINDS
                         if k in c.metadata) or "none"  # fmt: skip
        writes = "no (read only)" if not c.writes else ("yes, lossy" if c.lossy else "yes")
        if c.lossy and c.name in ("webp", "heif", "avif"):
            writes = "yes (lossy, or `--lossless`)"
        rows.append(
            f"| {c.label} | {' '.join(f'`{e}`' for e in c.extensions)} | "
            f"{', '.join(c.dtypes)} | {', '.join(map(str, c.channels))} | {meta} | "
            f"{'yes' if c.multi_frame else 'no'} | {writes} |"
        )
    return "\n".join(rows)
