"""TIFF through tifffile (8, 16, 32 and 64-bit, float included) with Pillow for what tifffile
gives otherwise (palettes, YCbCr, 1-bit): ICC and EXIF carried, multi-page files as frames in
page order (reduced-resolution copies and masks are not pages of their own)."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs.base import Animation, ImageData, ImageInfo, ReadOptions, WriteOptions
from blurapp.io.codecs.pillow import (
    ORIENTATION_TAG,
    PillowCodec,
    metadata_of,
    orient,
    pillow_metadata,
    pillow_open,
    pillow_to_array,
    to_pillow,
)

TIFF_MAGIC = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")


def tifffile_can_decode(page: Any) -> bool:
    """Whether tifffile gives the pixels as they are meant (otherwise Pillow converts them)."""
    from tifffile import PHOTOMETRIC

    if page.photometric in (PHOTOMETRIC.MINISBLACK, PHOTOMETRIC.RGB):
        return page.bitspersample in (8, 16, 32, 64) and page.dtype is not None
    # JPEG-compressed YCbCr comes out of tifffile as RGB.
    return page.photometric == PHOTOMETRIC.YCBCR and page.compression == 7


def own_pages(tif: Any) -> list[int]:
    """The indices of a TIFF's pages that are images of their own: reduced-resolution copies
    (previews, pyramid levels) and transparency masks of another page do not count."""
    count = len(tif.pages)
    if count < 2:
        return list(range(count))
    own = []
    for i in range(count):
        page = tif.pages[i]
        subfile = int(getattr(page, "subfiletype", 0) or 0)
        if not subfile & 0b101:  # bit 0: reduced resolution, bit 2: transparency mask
            own.append(i)
    return own or [0]


def tiff_frames(tif: Any) -> int:
    """How many pages of their own a TIFF has (see :func:`own_pages`)."""
    return len(own_pages(tif))


def _page_pixels(page: Any) -> np.ndarray:
    import tifffile

    pixels = page.asarray()
    if page.planarconfig == tifffile.PLANARCONFIG.SEPARATE and pixels.ndim == 3:
        pixels = np.moveaxis(pixels, 0, -1)
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    if pixels.dtype == np.float16:
        pixels = pixels.astype(np.float32)
    if pixels.dtype.byteorder not in ("=", "|"):
        pixels = pixels.astype(pixels.dtype.newbyteorder("="))
    tag = page.tags.get(ORIENTATION_TAG)
    orientation = int(tag.value) if tag is not None else 1
    return np.ascontiguousarray(orient(pixels, orientation))


def _layout(page: Any) -> tuple[int, int, int, np.dtype]:
    return (
        int(page.imagewidth),
        int(page.imagelength),
        int(page.samplesperpixel),
        np.dtype(page.dtype) if page.dtype is not None else np.dtype(np.uint8),
    )


def tifffile_options(c: int, level: int, icc: bytes | None) -> dict[str, Any]:
    """tifffile's write arguments for ``c`` channels at deflate ``level`` (0: none), shared
    with the streamed TIFF writer (blurapp.io.tiffstream)."""
    kwargs: dict[str, Any] = {
        "photometric": "rgb" if c >= 3 else "minisblack",
        "planarconfig": "contig",
        "metadata": None,
    }
    if c in (2, 4):
        kwargs["extrasamples"] = ["unassalpha"]
    if level:
        kwargs.update(compression="zlib", compressionargs={"level": level})
    if icc:
        kwargs["iccprofile"] = icc
    return kwargs


def write_tifffile(
    fh: IO[bytes], frames: tuple[np.ndarray, ...], level: int, icc: bytes | None
) -> None:
    """Every frame as a page of its own, in order."""
    import tifffile

    with tifffile.TiffWriter(fh) as tw:
        for pixels in frames:
            c = 1 if pixels.ndim == 2 else pixels.shape[2]
            tw.write(pixels, **tifffile_options(c, level, icc))


class TiffCodec(PillowCodec):
    name = "tiff"
    label = "TIFF"
    extensions = (".tiff", ".tif")
    magic = "49 49 2A 00 (II*) / 4D 4D 00 2A (MM*), BigTIFF 2B"
    dtypes = ("uint8", "uint16", "float32", "float64")
    metadata = frozenset({"exif", "icc"})
    library = "tifffile (imagecodecs); Pillow for palettes and YCbCr"
    multi_frame = True
    pillow_format = "TIFF"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:4] in TIFF_MAGIC

    def probe(self, path: Path) -> ImageInfo:
        import tifffile

        with tifffile.TiffFile(path) as tif:
            pages = own_pages(tif)
            first = tif.pages[pages[0]]
            if isinstance(first, tifffile.TiffPage) and tifffile_can_decode(first):
                width, height, channels, dtype = _layout(first)
                return ImageInfo("tiff", width, height, channels, dtype, len(pages))
        info = super().probe(path)
        return ImageInfo("tiff", info.width, info.height, info.channels, info.dtype, len(pages))

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        import tifffile

        with tifffile.TiffFile(path) as tif:
            pages = own_pages(tif)
            chosen = pages if options.frame is None else [pages[options.frame]]
            decodable = all(
                isinstance(tif.pages[i], tifffile.TiffPage) and tifffile_can_decode(tif.pages[i])
                for i in chosen
            )
            if decodable:
                first = tif.pages[chosen[0]]
                if len(chosen) > 1 and any(_layout(tif.pages[i]) != _layout(first) for i in chosen):
                    raise ImageError(
                        f"cannot read {path}: its {len(chosen)} pages differ in size or pixel "
                        "type; take one with --frame N"
                    )
                frames = tuple(_page_pixels(tif.pages[i]) for i in chosen)
                icc = first.iccprofile
        if not decodable:
            return self._read_pillow(path, options, len(pages))
        # Pillow also gives the EXIF of a TIFF it can open; not every float TIFF is one of those.
        try:
            _icc, exif, _orientation = pillow_metadata(path)
        except Exception:  # metadata is a bonus, the pixels are read
            exif = None
        animation = Animation(frames, (), None) if len(frames) > 1 else None
        return ImageData(frames[0], "tiff", icc, exif, None, animation)

    def _read_pillow(self, path: Path, options: ReadOptions, pages: int) -> ImageData:
        """The pages tifffile does not give as they are meant (palettes, YCbCr, 1-bit)."""
        if options.frame is None and pages > 1:
            data = super().read(path, options)  # every page, as RGB or RGBA
            if data.animation is None:
                return data
            frames = data.animation.frames  # pages have no timing
            return ImageData(frames[0], "tiff", data.icc_profile, data.exif, None,
                             Animation(frames, (), None))  # fmt: skip
        with pillow_open(path, options.max_pixels) as im:
            icc, exif, orientation = metadata_of(im)
            if options.frame:
                im.seek(options.frame)
            im.load()
            pixels = np.ascontiguousarray(orient(pillow_to_array(im), orientation))
        return ImageData(pixels, "tiff", icc, exif)

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        level, icc = options.compress_level, data.icc_profile
        if data.animation is not None or data.pixels.dtype != np.uint8:
            write_tifffile(fh, data.frames, level, icc)
            return
        # 8 bits through Pillow, which writes the EXIF too.
        kwargs: dict[str, Any] = {}
        if icc:
            kwargs["icc_profile"] = icc
        if data.exif:
            kwargs["exif"] = data.exif
        if level:
            kwargs["compression"] = "tiff_adobe_deflate"
        to_pillow(data.pixels).save(fh, format="TIFF", **kwargs)


CODEC = TiffCodec()
