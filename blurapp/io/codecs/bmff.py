"""What a HEIF or AVIF file declares in its ISO base media file format boxes (ISO/IEC 14496-12,
23008-12): brands, bit depth, image sequences and HDR gain maps, read from the header without
a decoder."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

#: Brands of HEIF still images and sequences coded with HEVC.
HEIC_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs"})
#: Brands of AVIF (AV1 in HEIF).
AVIF_BRANDS = frozenset({b"avif", b"avis"})
#: Brands of image sequences.
SEQUENCE_BRANDS = frozenset({b"msf1", b"hevc", b"hevx", b"hevm", b"hevs", b"avis"})
#: Generic HEIF brands (the codec is told by the other brands or the items).
GENERIC_BRANDS = frozenset({b"mif1", b"mif2", b"miaf"})

_CONTAINERS = frozenset({b"meta", b"iprp", b"ipco", b"iinf", b"dinf"})
_GAIN_MAP_AUX = (b"urn:com:apple:photo:2020:aux:hdrgainmap", b"urn:iso:std:iso:ts:21496:-1")

#: The header is read up to this many bytes (a phone's HEIC has its meta box in the first few
#: kilobytes; the pixels come after it).
_HEADER_BYTES = 1 << 20


def brands(head: bytes) -> set[bytes]:
    """The major and compatible brands of an ``ftyp`` box at the start of ``head``."""
    if len(head) < 16 or head[4:8] != b"ftyp":
        return set()
    size = struct.unpack(">I", head[:4])[0]
    size = min(size, len(head))
    found = {head[8:12]}
    found.update(head[i : i + 4] for i in range(16, size - 3, 4))
    return found


@dataclass
class Declared:
    """What the boxes say."""

    brands: set[bytes] = field(default_factory=set)
    depth: int = 8
    item_types: list[bytes] = field(default_factory=list)
    sequence: bool = False
    gain_map: bool = False


def _boxes(data: bytes, start: int, end: int):
    pos = start
    while pos + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, pos)
        header = 8
        if size == 1 and pos + 16 <= end:
            size = struct.unpack_from(">Q", data, pos + 8)[0]
            header = 16
        elif size == 0:
            size = end - pos
        if size < header:
            return
        yield kind, pos + header, min(pos + size, end)
        pos += size


def declared(path: Path) -> Declared:
    """Read the boxes of ``path``'s header."""
    with open(path, "rb") as fh:
        data = fh.read(_HEADER_BYTES)
    out = Declared(brands=brands(data))
    out.sequence = bool(out.brands & SEQUENCE_BRANDS)
    depths: list[int] = []

    def walk(start: int, end: int) -> None:
        for kind, body, stop in _boxes(data, start, end):
            if kind == b"moov":
                out.sequence = True
            elif kind in _CONTAINERS:
                # meta and iinf are full boxes: version and flags first (iinf: and a count).
                skip = 4 if kind == b"meta" else 0
                if kind == b"iinf":
                    version = data[body] if body < stop else 0
                    skip = 4 + (2 if version == 0 else 4)
                walk(body + skip, stop)
            elif kind == b"infe" and stop - body >= 12:
                version = data[body]
                if version >= 2:
                    at = body + 4 + (2 if version == 2 else 4) + 2
                    out.item_types.append(data[at : at + 4])
            elif kind == b"pixi" and stop - body >= 5:
                channels = data[body + 4]
                depths.extend(data[body + 5 : min(stop, body + 5 + channels)])
            elif kind == b"av1C" and stop - body >= 3:
                flags = data[body + 2]
                depths.append(12 if flags & 0x20 else 10 if flags & 0x40 else 8)
            elif kind == b"hvcC" and stop - body >= 18:
                depths.append((data[body + 17] & 0x07) + 8)  # bitDepthLumaMinus8
            elif kind == b"auxC" and any(urn in data[body:stop] for urn in _GAIN_MAP_AUX):
                out.gain_map = True

    walk(0, len(data))
    if b"tmap" in out.item_types:
        out.gain_map = True
    if depths:
        out.depth = max(depths)
    return out


def to_16_bits(pixels, depth: int):
    """Samples of ``depth`` bits (held in a uint16 array, at the low bits) scaled to the full
    16-bit range, as a 16-bit file of the same colours would hold them."""
    import numpy as np

    top = (1 << depth) - 1
    wide = pixels.astype(np.uint32) * 65535 + top // 2
    return (wide // top).astype(np.uint16)


def from_16_bits(pixels, depth: int):
    """16-bit samples rounded to ``depth`` bits (the inverse of :func:`to_16_bits`)."""
    import numpy as np

    top = (1 << depth) - 1
    wide = pixels.astype(np.uint32) * top + 32767
    return (wide // 65535).astype(np.uint16)
