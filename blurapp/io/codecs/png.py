"""PNG: 8 and 16 bits through libpng (imagecodecs), palettes and colour keys through Pillow,
animated PNG (APNG) frames through Pillow; ICC and EXIF carried.

16-bit PNG is read through imagecodecs because Pillow reads 16-bit RGB(A) as 8-bit (8-bit PNG
goes through it too: twice as fast as Pillow); every still PNG is written by libpng (16 bits
kept; levels 1..6 with the Paeth filter and run-length deflate, fast on photographs).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import replace
from pathlib import Path
from typing import IO

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs.base import Animation, ImageData, ImageInfo, ReadOptions, WriteOptions
from blurapp.io.codecs.pillow import PillowCodec, orient, pillow_metadata

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}

#: PNG compress levels up to this one use the fast photographic encoding (see encode_png).
_FAST_LEVELS = 6

#: Text chunks: nothing of the pixels, and libpng prints "tEXt: out of memory" on stderr for one
#: over its 8 MB chunk limit (on a run that then succeeds).
_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")


def png_header(path: Path) -> tuple[int, int, int, int]:
    """(width, height, bit depth, colour type) from a PNG's IHDR chunk."""
    with open(path, "rb") as fh:
        head = fh.read(33)
    if len(head) < 33 or head[12:16] != b"IHDR":
        raise ImageError(f"cannot read {path}: truncated or broken PNG header")
    width, height, depth, colour = struct.unpack(">IIBB", head[16:26])
    return width, height, depth, colour


def _chunks_before_idat(path: Path) -> list[tuple[bytes, int]]:
    """(kind, length) of the chunks before the first IDAT (acTL and tRNS are among them)."""
    found: list[tuple[bytes, int]] = []
    with open(path, "rb") as fh:
        fh.seek(len(SIGNATURE))
        while True:
            head = fh.read(8)
            if len(head) < 8:
                return found
            length, kind = struct.unpack(">I4s", head)
            if kind == b"IDAT":
                return found
            if kind == b"acTL":
                body = fh.read(4)
                found.append((kind, struct.unpack(">I", body)[0] if len(body) == 4 else 1))
                fh.seek(length + 4 - len(body), os.SEEK_CUR)
                continue
            found.append((kind, length))
            fh.seek(length + 4, os.SEEK_CUR)


def apng_frames(path: Path) -> int:
    """The frames an APNG's acTL chunk announces (1 for a still PNG)."""
    for kind, value in _chunks_before_idat(path):
        if kind == b"acTL":
            return max(1, value)
    return 1


def libpng_decodes(path: Path) -> bool:
    """Whether imagecodecs' libpng decodes this PNG as it is meant: every 16-bit one (Pillow
    would drop to 8 bits), and 8-bit grey, grey+alpha, RGB and RGBA without a tRNS colour key
    (there it is twice as fast as Pillow). Palettes, low bit depths and colour keys go to Pillow,
    which expands them."""
    _, _, depth, colour = png_header(path)
    if depth == 16:
        return True
    if depth != 8 or colour not in (0, 2, 4, 6):
        return False
    return all(kind != b"tRNS" for kind, _ in _chunks_before_idat(path))


def _without_text_chunks(data: bytes) -> bytes:
    """The PNG ``data`` without its text chunks (the same object when it has none)."""
    view = memoryview(data)
    kept: list[memoryview] = [view[: len(SIGNATURE)]]
    pos, dropped = len(SIGNATURE), False
    while pos + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        end = min(pos + 12 + length, len(data))
        if kind in _TEXT_CHUNKS:
            dropped = True
        else:
            kept.append(view[pos:end])
        pos = end
    if not dropped:
        return data
    kept.append(view[pos:])
    return b"".join(kept)


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def encode_png(pixels: np.ndarray, level: int, icc: bytes | None, exif: bytes | None) -> bytes:
    """A still PNG of ``pixels`` (8 or 16 bits) by libpng, with iCCP and eXIf chunks."""
    import imagecodecs

    # libpng through imagecodecs: 16 bits for every layout. Levels 1..6 use the Paeth row filter
    # with zlib's run-length strategy: on photographs (and blurred outputs) as small as full
    # deflate at level 6, and 5-10x faster; 7..9 search with every row filter and full deflate,
    # for graphics where long matches pay; 0 stores rows unfiltered and uncompressed.
    if imagecodecs.PNG.available:
        png_const = imagecodecs.PNG
        if level == 0:
            png = imagecodecs.png_encode(pixels, level=0, filter=png_const.FILTER.NONE)
        elif level <= _FAST_LEVELS:
            png = imagecodecs.png_encode(
                pixels, level=level, filter=png_const.FILTER.PAETH, strategy=png_const.STRATEGY.RLE
            )
        else:
            png = imagecodecs.png_encode(pixels, level=level)
    else:
        png = imagecodecs.spng_encode(pixels, level=level)
    # imagecodecs writes pixels only: the metadata chunks are added.
    return _with_metadata(png, icc, exif)


def encode_apng(
    animation: Animation, level: int, icc: bytes | None, exif: bytes | None, own_disposal: bool
) -> bytes:
    """An animated PNG of every frame by libpng (imagecodecs): 8 or 16 bits, no frame merged
    or dropped (Pillow's APNG writer merges frames it sees as equal after converting them to
    8-bit RGBA, which loses 16-bit frames that differ only above 255). Then each frame's fcTL
    gets its own duration (and disposal, when it came from an APNG: ``own_disposal``) and acTL
    the loop count; every frame is a whole canvas, blended as SOURCE."""
    import imagecodecs

    stack = np.stack(animation.frames)
    png = bytearray(imagecodecs.apng_encode(stack, level=level))
    durations = list(animation.durations) or [0] * len(stack)
    disposal = list(animation.disposal) if own_disposal and animation.disposal else []
    pos, frame = len(SIGNATURE), 0
    while pos + 8 <= len(png):
        length, kind = struct.unpack_from(">I4s", png, pos)
        body = pos + 8
        if kind == b"acTL" and length == 8:
            plays = 1 if animation.loop is None else animation.loop  # 0: for ever
            struct.pack_into(">I", png, body + 4, plays)
        elif kind == b"fcTL" and length == 26 and frame < len(durations):
            delay = min(int(durations[frame]), 65535)
            dispose = (
                disposal[frame] if frame < len(disposal) and disposal[frame] in (0, 1, 2) else 0
            )
            struct.pack_into(">HHBB", png, body + 20, delay, 1000, dispose, 0)
            frame += 1
        else:
            pos = body + length + 4
            continue
        crc = zlib.crc32(bytes(png[pos + 4 : body + length])) & 0xFFFFFFFF
        struct.pack_into(">I", png, body + length, crc)
        pos = body + length + 4
    return _with_metadata(bytes(png), icc, exif)


def _with_metadata(png: bytes, icc: bytes | None, exif: bytes | None) -> bytes:
    """``png`` with iCCP and eXIf chunks right after IHDR (both must precede IDAT)."""
    extra = b""
    if icc:
        extra += _chunk(b"iCCP", b"ICC profile\x00\x00" + zlib.compress(icc))
    if exif:
        extra += _chunk(b"eXIf", exif[6:] if exif.startswith(b"Exif\x00\x00") else exif)
    end_of_ihdr = len(SIGNATURE) + 8 + 13 + 4
    return png[:end_of_ihdr] + extra + png[end_of_ihdr:]


class PngCodec(PillowCodec):
    name = "png"
    label = "PNG"
    extensions = (".png", ".apng")
    magic = "89 50 4E 47 0D 0A 1A 0A"
    dtypes = ("uint8", "uint16")
    metadata = frozenset({"exif", "icc", "timing"})
    library = "imagecodecs (libpng); Pillow for palettes and APNG"
    multi_frame = True
    pillow_format = "PNG"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith(SIGNATURE)

    def probe(self, path: Path) -> ImageInfo:
        frames = apng_frames(path)
        width, height, depth, colour = png_header(path)
        if frames == 1 and depth == 16:
            return ImageInfo("png", width, height, _CHANNELS.get(colour, 3), np.dtype(np.uint16))
        info = super().probe(path)
        return (
            info
            if frames == 1
            else ImageInfo("png", *_size(info), info.channels, info.dtype, frames)
        )

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        if apng_frames(path) == 1 and libpng_decodes(path):
            import imagecodecs

            pixels = imagecodecs.png_decode(_without_text_chunks(path.read_bytes()))
            if pixels.ndim == 3 and pixels.shape[2] == 1:
                pixels = pixels[:, :, 0]
            icc, exif, orientation = pillow_metadata(path)
            return ImageData(np.ascontiguousarray(orient(pixels, orientation)), "png", icc, exif)
        data = super().read(path, options)
        _, _, depth, colour = png_header(path)
        if depth == 16 and colour != 0 and apng_frames(path) > 1:
            # Pillow composites a colour APNG's frames at 8 bits: said, not done silently.
            note = f"{path.name}: a 16-bit colour animated PNG: its frames are read at 8 bits"
            data = replace(data, notes=(*data.notes, note))
        return data

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        if data.animation is not None and len(data.animation) > 1:
            own = data.format == "png"  # APNG disposal codes; GIF's mean other things
            fh.write(encode_apng(data.animation, options.compress_level, data.icc_profile,
                                 data.exif, own))  # fmt: skip
            return
        fh.write(encode_png(data.pixels, options.compress_level, data.icc_profile, data.exif))


def _size(info: ImageInfo) -> tuple[int, int]:
    return info.width, info.height


CODEC = PngCodec()
