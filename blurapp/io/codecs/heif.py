"""HEIC/HEIF through pillow-heif (libheif, libde265 and x265): 8 bits, and 10 or 12 bits as
16-bit pixels, with alpha, ICC, EXIF and XMP; written at 8 bits or (16-bit pixels) 12 bits.

HEIF's own transformations (irot, imir) are applied by libheif; the EXIF orientation a phone
also writes only repeats them (HEIF says a reader ignores it), so it is reset without being
applied twice. Not handled, and said in one note when met: HDR gain maps (the image is read as
its SDR base), image sequences and collections (the primary image is read).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs import bmff
from blurapp.io.codecs.base import Codec, ImageData, ImageInfo, ReadOptions, WriteOptions


def reset_orientation(exif: bytes | None) -> bytes | None:
    """``exif`` with its orientation tag set to 1 (the decoder applied the transformations)."""
    if not exif:
        return None
    from PIL import Image

    parsed = Image.Exif()
    try:
        parsed.load(exif[6:] if exif.startswith(b"Exif\x00\x00") else exif)
    except Exception:  # a broken EXIF block is left out, the pixels are read
        return None
    if 0x0112 in parsed:
        parsed[0x0112] = 1
    return parsed.tobytes() if len(parsed) else None


def notes_for(path: Path, found: bmff.Declared, images: int = 1) -> tuple[str, ...]:
    """The one-line notes for what blurapp does not handle in a HEIF or AVIF file."""
    notes = []
    if found.gain_map:
        notes.append(
            f"{path.name}: its HDR gain map is not handled: the SDR base image is filtered and "
            "written, without the gain map"
        )
    if found.sequence or images > 1:
        notes.append(
            f"{path.name}: image sequences and collections inside HEIF are not handled: only "
            "its primary image is read"
        )
    return tuple(notes)


class HeifCodec(Codec):
    name = "heif"
    label = "HEIC/HEIF"
    extensions = (".heic", ".heif", ".hif")
    magic = "....ftyp heic/heix/mif1 (ISO BMFF)"
    dtypes = ("uint8", "uint16")
    channels = (3, 4)
    metadata = frozenset({"exif", "icc", "xmp"})
    library = "pillow-heif (libheif: libde265, x265)"
    lossy = True
    quality_note = "--quality 1..100, or --lossless; 16-bit pixels written at 12 bits"

    def sniff(self, head: bytes, path: Path) -> bool:
        found = bmff.brands(head)
        if not found or found & bmff.AVIF_BRANDS:
            return False
        return bool(found & (bmff.HEIC_BRANDS | bmff.GENERIC_BRANDS))

    def unavailable(self) -> str | None:
        try:
            import pillow_heif  # noqa: F401
        except ImportError:
            return "needs pillow-heif (pip install pillow-heif)"
        return None

    def _open(self, path: Path) -> Any:
        why = self.unavailable()
        if why:
            raise ImageError(f"cannot read {path}: HEIF {why}")
        import pillow_heif

        return pillow_heif.open_heif(path, convert_hdr_to_8bit=False)

    def probe(self, path: Path) -> ImageInfo:
        heif = self._open(path)
        primary = heif[heif.primary_index] if hasattr(heif, "primary_index") else heif[0]
        width, height = primary.size
        deep = primary.info.get("bit_depth", 8) > 8
        channels = 4 if primary.has_alpha else 3
        dtype = np.dtype(np.uint16 if deep else np.uint8)
        return ImageInfo(self.name, int(width), int(height), channels, dtype)

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        heif = self._open(path)
        index = getattr(heif, "primary_index", 0)
        primary = heif[index]
        depth = int(primary.info.get("bit_depth", 8))
        pixels = np.asarray(primary)  # decodes; libheif applies irot and imir
        if pixels.dtype == np.uint16:
            # pillow-heif gives 10 and 12 bits shifted to the top of 16; scaled instead, so
            # that white is 65535.
            pixels = bmff.to_16_bits(pixels >> (16 - depth), depth)
        exif = reset_orientation(primary.info.get("exif"))
        icc = primary.info.get("icc_profile") or None
        xmp = primary.info.get("xmp") or None
        notes = notes_for(path, bmff.declared(path), len(heif))
        return ImageData(np.ascontiguousarray(pixels), self.name, icc, exif, xmp, notes=notes)

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        import pillow_heif

        pixels = data.pixels
        alpha = pixels.shape[2] == 4
        mode = ("RGBA" if alpha else "RGB") + (";16" if pixels.dtype == np.uint16 else "")
        height, width = pixels.shape[:2]
        heif = pillow_heif.from_bytes(mode=mode, size=(width, height), data=pixels.tobytes())
        kwargs: dict[str, Any] = {
            "quality": -1 if options.lossless else options.quality,
            # libheif's x265 default (preset "slow") took 16.7 s for a 1600×1200 photo at
            # quality 90, 4:4:4; "faster" 5.3 s for a file 8 % larger (one run, load 7).
            "enc_params": {"preset": "faster"},
        }
        if pixels.dtype == np.uint16:
            kwargs["bit_depth"] = 12
        if options.lossless or options.quality >= 90:
            kwargs["chroma"] = 444
        if data.exif:
            kwargs["exif"] = data.exif
        if data.icc_profile:
            kwargs["icc_profile"] = data.icc_profile
        if data.xmp:
            kwargs["xmp"] = data.xmp
        heif.save(fh, **kwargs)


CODEC = HeifCodec()
