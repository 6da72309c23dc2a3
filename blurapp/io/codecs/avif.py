"""AVIF: 8 bits through Pillow's own AVIF plugin (libavif) with ICC, EXIF and XMP; 10 and 12
bits through imagecodecs' libavif, as 16-bit pixels, read and written (12 bits).

imagecodecs writes pixels only: a 16-bit AVIF output carries no ICC profile or EXIF (an 8-bit
one does). Not handled, and said in one note when met: HDR gain maps and image sequences (the
primary image is read).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs import bmff
from blurapp.io.codecs.base import ImageData, ImageInfo, ReadOptions, WriteOptions
from blurapp.io.codecs.heif import notes_for
from blurapp.io.codecs.pillow import (
    HEADER_ONLY,
    PillowCodec,
    metadata_of,
    orient,
    pillow_layout,
    pillow_open,
    xmp_of,
)

#: 16-bit pixels are written with this many bits (AV1's deepest).
_DEEP_BITS = 12


class AvifCodec(PillowCodec):
    name = "avif"
    label = "AVIF"
    extensions = (".avif",)
    magic = "....ftyp avif/avis (ISO BMFF)"
    dtypes = ("uint8", "uint16")
    channels = (3, 4)
    metadata = frozenset({"exif", "icc", "xmp"})
    library = "Pillow (libavif); imagecodecs (libavif) for 10 and 12 bits"
    lossy = True
    quality_note = "--quality 1..100, or --lossless; 16-bit pixels written at 12 bits"
    pillow_format = "AVIF"

    def sniff(self, head: bytes, path: Path) -> bool:
        return bool(bmff.brands(head) & bmff.AVIF_BRANDS)

    def unavailable(self) -> str | None:
        from PIL import features

        if not features.check("avif"):
            return "needs a Pillow built with AVIF (Pillow 11.2 or later from PyPI)"
        return None

    def _check(self, path: Path) -> None:
        why = self.unavailable()
        if why:
            raise ImageError(f"cannot read {path}: AVIF {why}")

    def probe(self, path: Path) -> ImageInfo:
        self._check(path)
        depth = bmff.declared(path).depth
        with pillow_open(path, HEADER_ONLY, formats=("AVIF",)) as im:
            width, height = im.size
            channels, _ = pillow_layout(im)
        dtype = np.dtype(np.uint16 if depth > 8 else np.uint8)
        return ImageInfo(self.name, int(width), int(height), channels, dtype)

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        self._check(path)
        found = bmff.declared(path)
        notes = notes_for(path, found)
        with pillow_open(path, options.max_pixels, formats=("AVIF",)) as im:
            icc, exif, orientation = metadata_of(im)
            xmp = xmp_of(im)
            if found.depth <= 8:
                im.load()
                alpha = "A" in im.mode
                pixels = np.asarray(im.convert("RGBA" if alpha else "RGB"))
        if found.depth > 8:
            import imagecodecs

            # Pillow decodes to 8 bits: the deep samples come from libavif through imagecodecs.
            pixels = imagecodecs.avif_decode(path.read_bytes())
            if pixels.dtype == np.uint16:
                pixels = bmff.to_16_bits(pixels, found.depth)
            if pixels.ndim == 3 and pixels.shape[2] == 1:
                pixels = pixels[:, :, 0]
        pixels = np.ascontiguousarray(orient(pixels, orientation))
        return ImageData(pixels, self.name, icc, exif, xmp, notes=notes)

    def save_arguments(self, options: WriteOptions) -> dict[str, Any]:
        if options.lossless:
            return {"quality": 100, "subsampling": "4:4:4"}
        return {
            "quality": options.quality,
            "subsampling": "4:4:4" if options.quality >= 90 else "4:2:0",
        }

    def losses(self, data: ImageData) -> tuple[str, ...]:
        kept = [name for name, value in (("ICC profile", data.icc_profile), ("EXIF", data.exif),
                                         ("XMP", data.xmp)) if value]  # fmt: skip
        if data.pixels.dtype != np.uint16 or not kept:
            return ()
        return (
            f"a 16-bit AVIF is written without the {' and '.join(kept)} (imagecodecs' libavif "
            "writes pixels only); write 16-bit PNG, TIFF or HEIF to keep them",
        )

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        if data.pixels.dtype != np.uint16:
            super().encode(
                fh,
                ImageData(data.pixels, self.name, data.icc_profile, data.exif, data.xmp),
                options,
            )
            return
        import imagecodecs

        level = 100 if options.lossless else options.quality
        deep = bmff.from_16_bits(data.pixels, _DEEP_BITS)
        fh.write(imagecodecs.avif_encode(deep, level=level, bitspersample=_DEEP_BITS))


CODEC = AvifCodec()
