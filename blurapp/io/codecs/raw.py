"""Camera raw through rawpy (LibRaw): DNG and the makers' formats, read only, developed as LibRaw
develops them with the camera's white balance, no auto-brightening, 16 bits per channel, in
sRGB (LibRaw's default curve), or linear with ``--raw-linear``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs.base import Codec, ImageData, ImageInfo, ReadOptions
from blurapp.io.codecs.tiff import TIFF_MAGIC

#: Makers' raw formats (and DNG) by extension, for files whose header is a plain TIFF one.
RAW_EXTENSIONS = (
    ".dng", ".cr2", ".cr3", ".crw", ".nef", ".nrw", ".arw", ".srf", ".sr2", ".raf", ".orf",
    ".rw2", ".pef", ".srw", ".erf", ".kdc", ".dcr", ".mrw", ".3fr", ".iiq", ".x3f", ".rwl",
)  # fmt: skip

_DNG_VERSION_TAG = 50706
_CFA_PHOTOMETRIC = 32803


def _tiff_is_raw(path: Path) -> bool:
    """A TIFF-structured file that is a DNG or a CFA mosaic (a DNG named ``.tif``)."""
    try:
        import tifffile

        with tifffile.TiffFile(path) as tif:
            page = tif.pages.first
            if _DNG_VERSION_TAG in page.tags:
                return True
            return any(
                int(p.tags.valueof(262, 0) or 0) == _CFA_PHOTOMETRIC
                for p in tif.pages[:4]  # the mosaic may sit in a sub-IFD's sibling page
                if isinstance(p, tifffile.TiffPage)
            )
    except Exception:  # not readable as a TIFF: the TIFF codec says why
        return False


def develop_arguments(linear: bool) -> dict[str, object]:
    """rawpy's ``postprocess`` arguments of blurapp's development (the tests use them too)."""
    import rawpy

    kwargs: dict[str, object] = {
        "use_camera_wb": True,
        "no_auto_bright": True,
        "output_bps": 16,
        "output_color": rawpy.ColorSpace.sRGB,
    }
    if linear:
        kwargs["gamma"] = (1.0, 1.0)
    return kwargs


class RawCodec(Codec):
    name = "raw"
    label = "Camera raw"
    extensions = RAW_EXTENSIONS
    magic = (
        "TIFF with DNGVersion or a CFA, IIRO (ORF), IIU (RW2), FUJIFILMCCD-RAW (RAF), ftypcrx (CR3)"
    )
    dtypes = ("uint16",)
    channels = (3,)
    description = "Camera raw"
    library = "rawpy (LibRaw)"
    writes = False

    def sniff(self, head: bytes, path: Path) -> bool:
        if head[:4] in (b"IIRO", b"IIRS", b"MMOR", b"IIU\x00") or head.startswith(b"FUJIFILM"):
            return True
        if head[4:12] == b"ftypcrx ":
            return True
        if head[:4] in TIFF_MAGIC:
            if head[8:10] == b"CR":  # Canon CR2
                return True
            return path.suffix.lower() in RAW_EXTENSIONS or _tiff_is_raw(path)
        return False

    def unavailable(self) -> str | None:
        try:
            import rawpy  # noqa: F401
        except ImportError:
            return "needs rawpy (pip install rawpy)"
        return None

    def _open(self, path: Path):
        why = self.unavailable()
        if why:
            raise ImageError(f"cannot read {path}: camera raw {why}")
        import rawpy

        raw = rawpy.RawPy()
        try:
            raw.open_file(str(path))
        except Exception as err:
            raw.close()
            raise ImageError(
                f"cannot read {path}: not a camera raw file LibRaw knows ({err})"
            ) from None
        return raw

    def probe(self, path: Path) -> ImageInfo:
        raw = self._open(path)
        try:
            sizes = raw.sizes
            width, height = int(sizes.width), int(sizes.height)
            if int(sizes.flip) in (5, 6):
                width, height = height, width
        finally:
            raw.close()
        return ImageInfo(self.name, width, height, 3, np.dtype(np.uint16))

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        raw = self._open(path)
        try:
            raw.unpack()
            pixels = raw.postprocess(**develop_arguments(options.raw_linear))
        finally:
            raw.close()
        return ImageData(np.ascontiguousarray(pixels), self.name)


CODEC = RawCodec()
