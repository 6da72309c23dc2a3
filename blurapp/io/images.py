"""Read and write image files faithfully: PNG, JPEG, TIFF, WebP, BMP and ``.npy``, atomically.

Pixels come back as numpy arrays in their stored type (uint8, uint16, float32, float64), H×W for
grey and H×W×C otherwise, where C is 2 (grey+alpha), 3 (RGB) or 4 (RGBA); palettes are expanded
and EXIF orientation is applied, so every image is upright. Pillow does most formats; 16-bit PNG
is read through imagecodecs and TIFF through tifffile, because Pillow reads 16-bit RGB(A) as
8-bit (8-bit PNG goes through it too: twice as fast as Pillow); every PNG is written by its libpng
(16 bits kept; levels 1..6 with the Paeth filter and run-length deflate, fast on photographs).
Writes go through :func:`blurapp.io.atomic.atomic_output`: a temporary file beside the
destination, published only when complete, never over an existing file without ``overwrite``.

Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``) is left as it is for the
process. blurapp's own guard is ``max_pixels``, checked on the header before any pixel is
decoded; Pillow's limit is raised to it only for the duration of blurapp's own ``Image.open``
calls, under a lock, and put back afterwards (see :func:`_pillow_open`).
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import struct
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.core.errors import ImageError, OutputError, UsageError
from blurapp.core.numbers import MAX_CHANNELS, SUPPORTED_DTYPES
from blurapp.io.atomic import atomic_output

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "FORMATS",
    "ImageData",
    "ImageInfo",
    "check_pixel_limit",
    "format_from_path",
    "output_dtype",
    "probe_image",
    "read_image",
    "with_pixels",
    "write_image",
]

#: Format names and the file extensions that select them (the first one is the one written).
FORMATS: dict[str, tuple[str, ...]] = {
    "png": (".png",),
    "jpg": (".jpg", ".jpeg", ".jpe"),
    "tiff": (".tiff", ".tif"),
    "webp": (".webp",),
    "bmp": (".bmp", ".dib"),
    "npy": (".npy",),
}
_EXTENSIONS = {ext: fmt for fmt, exts in FORMATS.items() for ext in exts}

#: Images above this many pixels are refused before they are decoded (a decompression bomb, or a
#: file that would not fit in memory): 250 megapixels, about a 16k × 16k photo.
DEFAULT_MAX_PIXELS = 250_000_000

_ORIENTATION_TAG = 0x0112
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class ImageInfo:
    """What a file's header says, read without decoding the pixels."""

    format: str
    width: int
    height: int
    channels: int
    dtype: np.dtype

    @property
    def pixels(self) -> int:
        return self.width * self.height


@dataclass(frozen=True)
class ImageData:
    """Decoded pixels and the metadata worth carrying to an output.

    ``pixels`` is H×W (grey) or H×W×C; with C = 2 or 4 the last channel is straight alpha.
    ``exif`` has its orientation tag already reset to 1 (the pixels are upright).
    """

    pixels: np.ndarray
    format: str = "npy"
    icc_profile: bytes | None = None
    exif: bytes | None = None

    @property
    def channels(self) -> int:
        return 1 if self.pixels.ndim == 2 else int(self.pixels.shape[2])

    @property
    def has_alpha(self) -> bool:
        return self.channels in (2, 4)

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])


# ------------------------------------------------------------------------------------ formats


def format_from_path(path: str | os.PathLike[str]) -> str:
    """The format name (a key of :data:`FORMATS`) that ``path``'s extension selects.

    Raises:
        UsageError: for an extension no writer knows.
    """
    ext = Path(path).suffix.lower()
    try:
        return _EXTENSIONS[ext]
    except KeyError:
        known = ", ".join(sorted(_EXTENSIONS))
        raise UsageError(
            f"cannot tell the image format of {os.fspath(path)!r} from its extension "
            f"{ext or '(none)'!r}; use one of {known}"
        ) from None


def output_dtype(dtype: np.dtype | type, fmt: str) -> np.dtype:
    """The pixel type written to ``fmt`` for an image of ``dtype``: the same one where it fits.

    JPEG, WebP and BMP hold 8 bits; PNG holds 8 or 16 (floats become 16-bit); TIFF and ``.npy``
    hold every supported type.
    """
    dt = np.dtype(dtype)
    if fmt in ("tiff", "npy"):
        return dt
    if fmt == "png":
        return dt if dt == np.uint8 else np.dtype(np.uint16)
    return np.dtype(np.uint8)


def _sniff(head: bytes) -> str | None:
    """The format a file's first bytes announce, whatever its name says."""
    if head.startswith(_PNG_SIGNATURE):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return "tiff"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:2] == b"BM":
        return "bmp"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    return None


def _not_a_file(path: Path, mode: int) -> ImageError | None:
    """The error for something that is not a regular file (reading a FIFO blocks forever, a
    device reads without end), or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = (
        "a folder"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return ImageError(f"cannot read {path}: it is {kind}, not an image file")


def _detect(path: Path) -> str:
    try:
        problem = _not_a_file(path, os.stat(path).st_mode)
        if problem is not None:
            raise problem
        # O_NONBLOCK: a file swapped for a FIFO after the stat does not block the open.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        with os.fdopen(os.open(path, flags), "rb") as fh:
            problem = _not_a_file(path, os.fstat(fh.fileno()).st_mode)
            if problem is not None:
                raise problem
            head = fh.read(16)
    except OSError as err:
        raise ImageError(f"cannot read {path}: {err.strerror or err}") from None
    fmt = _sniff(head)
    if fmt is None:
        if not head:
            raise ImageError(f"cannot read {path}: the file is empty")
        raise ImageError(f"cannot read {path}: not a PNG, JPEG, TIFF, WebP, BMP or .npy file")
    return fmt


# ------------------------------------------------------------------------------------ probing


def probe_image(path: str | os.PathLike[str]) -> ImageInfo:
    """Read only the header of an image file: format, size, channels and pixel type.

    Raises:
        ImageError: when the file cannot be read or is not a supported image.
    """
    p = Path(path)
    fmt = _detect(p)
    try:
        if fmt == "npy":
            return _probe_npy(p)
        if fmt == "png":
            _refuse_frames(p, _apng_frames(p))
            info = _probe_png16(p)
            if info is not None:
                return info
        if fmt == "tiff":
            info = _probe_tiff(p)
            if info is not None:
                return info
        return _probe_pillow(p, fmt)
    except ImageError:
        raise
    except Exception as err:  # decoders raise anything on a broken file
        raise ImageError(f"cannot read {p}: {_describe(err)}") from None


def _refuse_frames(path: Path, frames: int) -> None:
    """Multi-page TIFF, animated WebP and APNG are refused rather than cut to their first
    frame without a word."""
    if frames > 1:
        raise ImageError(
            f"cannot read {path}: it has {frames} frames; blurapp filters single images "
            "(split it into one file per frame first)"
        )


def _apng_frames(path: Path) -> int:
    """The frames an APNG's acTL chunk announces (1 for a still PNG)."""
    with open(path, "rb") as fh:
        fh.seek(len(_PNG_SIGNATURE))
        while True:  # acTL comes before the first IDAT
            head = fh.read(8)
            if len(head) < 8:
                return 1
            length, kind = struct.unpack(">I4s", head)
            if kind == b"IDAT":
                return 1
            if kind == b"acTL":
                body = fh.read(4)
                return struct.unpack(">I", body)[0] if len(body) == 4 else 1
            fh.seek(length + 4, os.SEEK_CUR)


def _probe_npy(path: Path) -> ImageInfo:
    # A memory map reads the header only; the pixels stay on disk.
    arr = np.load(path, mmap_mode="r", allow_pickle=False)
    shape, dtype = tuple(arr.shape), arr.dtype
    del arr
    if len(shape) not in (2, 3):
        raise ImageError(f"cannot read {path}: an image array is H×W or H×W×C, not {shape}")
    channels = 1 if len(shape) == 2 else shape[2]
    return ImageInfo("npy", int(shape[1]), int(shape[0]), int(channels), np.dtype(dtype))


def _png_header(path: Path) -> tuple[int, int, int, int]:
    """(width, height, bit depth, colour type) from a PNG's IHDR chunk."""
    with open(path, "rb") as fh:
        head = fh.read(33)
    if len(head) < 33 or head[12:16] != b"IHDR":
        raise ImageError(f"cannot read {path}: truncated or broken PNG header")
    width, height, depth, colour = struct.unpack(">IIBB", head[16:26])
    return width, height, depth, colour


_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}


def _probe_png16(path: Path) -> ImageInfo | None:
    width, height, depth, colour = _png_header(path)
    if depth != 16:
        return None
    return ImageInfo("png", width, height, _PNG_CHANNELS.get(colour, 3), np.dtype(np.uint16))


def _probe_tiff(path: Path) -> ImageInfo | None:
    import tifffile

    with tifffile.TiffFile(path) as tif:
        page = tif.pages.first
        _refuse_frames(path, _tiff_frames(tif))
        if not _tifffile_can_decode(page):
            return None
        height, width = int(page.imagelength), int(page.imagewidth)
        return ImageInfo("tiff", width, height, int(page.samplesperpixel), np.dtype(page.dtype))


def _tiff_frames(tif: Any) -> int:
    """The pages of a TIFF that are images of their own: reduced-resolution copies (previews,
    pyramid levels) and masks of the first do not count. Only the first pages are looked at: a
    file with thousands is refused all the same."""
    count = len(tif.pages)
    if count < 2:
        return count
    own = 0
    for i in range(min(count, 16)):
        page = tif.pages[i]
        subfile = int(getattr(page, "subfiletype", 0) or 0)
        if not subfile & 0b101:  # bit 0: reduced resolution, bit 2: transparency mask
            own += 1
    return count if own > 1 else 1


#: Serialises blurapp's changes to Pillow's process-wide decompression-bomb limit.
_PILLOW_LIMIT_LOCK = threading.Lock()

#: The limit for reading a header only (:func:`probe_image`): no pixel is decoded then, and the
#: size that the header gives is what blurapp's own ``max_pixels`` check looks at.
_HEADER_ONLY = sys.maxsize // 4


@contextlib.contextmanager
def _pillow_open(path: Path, max_pixels: int) -> Iterator[Any]:
    """``PIL.Image.open(path)`` with Pillow's decompression-bomb limit at least ``max_pixels``.

    blurapp checks its own ``max_pixels`` on the header before decoding; Pillow's limit (which
    warns above it and refuses above twice it) would otherwise refuse what blurapp accepts. The
    limit is raised for this ``Image.open`` only (where Pillow checks it), under a lock, and put
    back before anything else runs: it is never left raised, and never ``None``.
    """
    from PIL import Image

    with _PILLOW_LIMIT_LOCK:
        before = Image.MAX_IMAGE_PIXELS
        if before is not None and max_pixels > before:
            Image.MAX_IMAGE_PIXELS = max_pixels
        try:
            im = Image.open(path)
        finally:
            Image.MAX_IMAGE_PIXELS = before
    with im:
        yield im


def _probe_pillow(path: Path, fmt: str) -> ImageInfo:
    with _pillow_open(path, _HEADER_ONLY) as im:
        if fmt == "webp":  # PNG and TIFF were counted before; JPEG's MPO extras are no frames
            _refuse_frames(path, int(getattr(im, "n_frames", 1)))
        width, height = im.size
        mode = im.mode
        transparent = "transparency" in im.info
    channels = {"L": 1, "1": 1, "I;16": 1, "I;16B": 1, "I;16L": 1, "I": 1, "F": 1, "LA": 2}.get(
        mode, 4 if (mode in ("RGBA", "PA", "La", "RGBa") or transparent) else 3
    )
    if mode in ("L", "1", "I;16", "I;16B", "I;16L") and transparent:
        channels = 2
    dtype = np.dtype(np.uint16) if mode.startswith("I;16") else np.dtype(np.uint8)
    if mode == "F":
        dtype = np.dtype(np.float32)
    return ImageInfo(fmt, width, height, channels, dtype)


# ------------------------------------------------------------------------------------ reading


def read_image(path: str | os.PathLike[str], *, max_pixels: int = DEFAULT_MAX_PIXELS) -> ImageData:
    """Decode an image file.

    Arguments:
        path: a PNG, JPEG, TIFF, WebP, BMP or ``.npy`` file (recognised by its content).
        max_pixels: refuse larger images before decoding them.

    Returns:
        An :class:`ImageData`: upright pixels in their stored type, and the ICC profile and EXIF
        (orientation reset) when the file has them.

    Raises:
        ImageError: one line naming the file and the problem (unreadable, truncated, not an
            image, too large, an unsupported pixel type or channel count).
    """
    p = Path(path)
    info = probe_image(p)
    check_pixel_limit(p, info, max_pixels)
    try:
        if info.format == "npy":
            data = _read_npy(p)
        elif info.format == "png" and _libpng_decodes(p):
            data = _read_png_libpng(p)
        elif info.format == "tiff" and _is_tifffile_info(p):
            data = _read_tifffile(p)
        else:
            data = _read_pillow(p, info.format, max_pixels)
    except ImageError:
        raise
    except MemoryError:
        raise ImageError(f"cannot read {p}: not enough memory to decode it") from None
    except Exception as err:  # decoders raise anything on a broken file
        fmt = {"jpg": "JPEG", "npy": ".npy"}.get(info.format, info.format.upper())
        raise ImageError(
            f"cannot read {p}: truncated or corrupt {fmt} file ({_describe(err)})"
        ) from None
    _check_pixels(p, data.pixels)
    return data


def check_pixel_limit(path: str | os.PathLike[str], info: ImageInfo, max_pixels: int) -> None:
    """Refuse, from its header, an image of more than ``max_pixels`` pixels.

    Raises:
        ImageError: one line naming the file, its size, the limit and the option that allows
            it (``--max-megapixels N``).
    """
    if info.pixels <= max_pixels:
        return
    needed = math.ceil(info.pixels / 1e6)
    raise ImageError(
        f"cannot read {os.fspath(path)}: {info.width}×{info.height} is "
        f"{info.pixels / 1e6:.1f} megapixels, over the limit of {max_pixels / 1e6:g} (a guard "
        f"against decompression bombs: pass --max-megapixels {needed} to allow it)"
    )


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return text or type(err).__name__


def _check_pixels(path: Path, pixels: np.ndarray) -> None:
    if pixels.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(d.name for d in SUPPORTED_DTYPES)
        raise ImageError(f"cannot read {path}: pixel type {pixels.dtype} (supported: {names})")
    if pixels.ndim not in (2, 3) or (pixels.ndim == 3 and not 1 <= pixels.shape[2] <= MAX_CHANNELS):
        raise ImageError(
            f"cannot read {path}: shape {pixels.shape} is not H×W or H×W×C with C ≤ {MAX_CHANNELS}"
        )
    if pixels.size == 0:
        raise ImageError(f"cannot read {path}: the image is empty ({pixels.shape})")


def _read_npy(path: Path) -> ImageData:
    arr = np.load(path, allow_pickle=False)
    if arr.dtype.kind in "fu" and arr.dtype.byteorder not in ("=", "|"):
        arr = arr.astype(arr.dtype.newbyteorder("="))  # big-endian files: native order
    return ImageData(np.ascontiguousarray(arr), "npy")


def _libpng_decodes(path: Path) -> bool:
    """Whether imagecodecs' libpng decodes this PNG as it is meant: every 16-bit one (Pillow
    would drop to 8 bits), and 8-bit grey, grey+alpha, RGB and RGBA without a tRNS colour key
    (there it is twice as fast as Pillow). Palettes, low bit depths and colour keys go to Pillow,
    which expands them."""
    _, _, depth, colour = _png_header(path)
    if depth == 16:
        return True
    if depth != 8 or colour not in (0, 2, 4, 6):
        return False
    with open(path, "rb") as fh:
        fh.seek(len(_PNG_SIGNATURE))
        while True:  # the chunks before the first IDAT: tRNS, if any, is among them
            head = fh.read(8)
            if len(head) < 8:
                return False
            length, kind = struct.unpack(">I4s", head)
            if kind == b"IDAT":
                return True
            if kind == b"tRNS":
                return False
            fh.seek(length + 4, os.SEEK_CUR)


#: Text chunks: nothing of the pixels, and libpng prints "tEXt: out of memory" on stderr for one
#: over its 8 MB chunk limit (on a run that then succeeds).
_PNG_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")


def _without_text_chunks(data: bytes) -> bytes:
    """The PNG ``data`` without its text chunks (the same object when it has none)."""
    view = memoryview(data)
    kept: list[memoryview] = [view[: len(_PNG_SIGNATURE)]]
    pos, dropped = len(_PNG_SIGNATURE), False
    while pos + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        end = min(pos + 12 + length, len(data))
        if kind in _PNG_TEXT_CHUNKS:
            dropped = True
        else:
            kept.append(view[pos:end])
        pos = end
    if not dropped:
        return data
    kept.append(view[pos:])
    return b"".join(kept)


def _read_png_libpng(path: Path) -> ImageData:
    import imagecodecs

    pixels = imagecodecs.png_decode(_without_text_chunks(path.read_bytes()))
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    icc, exif, orientation = _pillow_metadata(path)
    return ImageData(np.ascontiguousarray(_orient(pixels, orientation)), "png", icc, exif)


def _tifffile_can_decode(page: Any) -> bool:
    """Whether tifffile gives the pixels as they are meant (otherwise Pillow converts them)."""
    from tifffile import PHOTOMETRIC

    if page.photometric in (PHOTOMETRIC.MINISBLACK, PHOTOMETRIC.RGB):
        return page.bitspersample in (8, 16, 32, 64) and page.dtype is not None
    # JPEG-compressed YCbCr comes out of tifffile as RGB.
    return page.photometric == PHOTOMETRIC.YCBCR and page.compression == 7


def _is_tifffile_info(path: Path) -> bool:
    import tifffile

    with tifffile.TiffFile(path) as tif:
        return _tifffile_can_decode(tif.pages.first)


def _read_tifffile(path: Path) -> ImageData:
    import tifffile

    with tifffile.TiffFile(path) as tif:
        page = tif.pages.first
        pixels = page.asarray()
        if page.planarconfig == tifffile.PLANARCONFIG.SEPARATE and pixels.ndim == 3:
            pixels = np.moveaxis(pixels, 0, -1)
        icc = page.iccprofile
        tag = page.tags.get(_ORIENTATION_TAG)
        orientation = int(tag.value) if tag is not None else 1
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    if pixels.dtype == np.float16:
        pixels = pixels.astype(np.float32)
    if pixels.dtype.byteorder not in ("=", "|"):
        pixels = pixels.astype(pixels.dtype.newbyteorder("="))
    # Pillow also gives the EXIF of a TIFF it can open; not every float TIFF is one of those.
    try:
        _icc, exif, _orientation = _pillow_metadata(path)
    except Exception:  # metadata is a bonus, the pixels are read
        exif = None
    return ImageData(np.ascontiguousarray(_orient(pixels, orientation)), "tiff", icc, exif)


def _pillow_metadata(path: Path) -> tuple[bytes | None, bytes | None, int]:
    """(ICC profile, EXIF with orientation reset, orientation) without decoding the pixels."""
    with _pillow_open(path, _HEADER_ONLY) as im:
        return _metadata_of(im)


# Tags that describe a TIFF's pixel layout (size, strips, samples, compression, ICC). A TIFF's
# EXIF as Pillow reads it includes them; carried to an output they would contradict its pixels.
_LAYOUT_TAGS = frozenset(
    {254, 255, 256, 257, 258, 259, 262, 263, 266, 273, 277, 278, 279, 280, 281, 284, 292, 293}
    | {317, 320, 322, 323, 324, 325, 338, 339, 340, 341, 347, 530, 531, 532, 34675}
)


def _metadata_of(im: Any) -> tuple[bytes | None, bytes | None, int]:
    icc = im.info.get("icc_profile") or None
    exif = im.getexif()
    orientation = int(exif.get(_ORIENTATION_TAG, 1) or 1)
    if _ORIENTATION_TAG in exif:
        exif[_ORIENTATION_TAG] = 1
    for tag in _LAYOUT_TAGS.intersection(exif):
        del exif[tag]
    if getattr(exif, "bigtiff", False) and len(exif):
        # A BigTIFF's tags serialise with the BigTIFF header, which no encoder (Pillow's own TIFF
        # writer included) reads back as EXIF: carry them in a classic EXIF block instead.
        from PIL import Image

        classic = Image.Exif()
        for tag, value in exif.items():
            classic[tag] = value
        exif = classic
    exif_bytes = exif.tobytes() if len(exif) else None
    return icc, exif_bytes, orientation


def _read_pillow(path: Path, fmt: str, max_pixels: int) -> ImageData:
    with _pillow_open(path, max_pixels) as im:
        icc, exif, orientation = _metadata_of(im)
        im.load()
        pixels = _pillow_to_array(im)
    return ImageData(np.ascontiguousarray(_orient(pixels, orientation)), fmt, icc, exif)


def _pillow_to_array(im: Any) -> np.ndarray:
    """Pillow image → H×W or H×W×C array, palettes and keyed transparency expanded."""
    mode = im.mode
    transparent = "transparency" in im.info
    if mode in ("I;16", "I;16L", "I;16B", "I;16N"):
        return np.asarray(im).astype(np.uint16)
    if mode == "I":
        arr = np.asarray(im)
        if arr.min() < 0 or arr.max() > 65535:
            raise ImageError("32-bit integer pixels are not supported")
        return arr.astype(np.uint16)
    if mode == "F":
        return np.asarray(im, dtype=np.float32)
    if mode in ("1", "L"):
        return np.asarray(im.convert("LA") if transparent else im.convert("L"))
    if mode == "LA":
        return np.asarray(im)
    if mode in ("La",):
        return np.asarray(im.convert("LA"))
    if mode in ("RGBA", "RGBa", "PA") or transparent:
        return np.asarray(im.convert("RGBA"))
    return np.asarray(im.convert("RGB"))


def _orient(pixels: np.ndarray, orientation: int) -> np.ndarray:
    """Apply an EXIF orientation (1..8) so that the pixels are upright, as exif_transpose does."""
    if orientation == 2:
        return pixels[:, ::-1]
    if orientation == 3:
        return pixels[::-1, ::-1]
    if orientation == 4:
        return pixels[::-1]
    if orientation == 5:
        return pixels.swapaxes(0, 1)
    if orientation == 6:
        return np.rot90(pixels, -1)
    if orientation == 7:
        return pixels[::-1, ::-1].swapaxes(0, 1)
    if orientation == 8:
        return np.rot90(pixels, 1)
    return pixels


# ------------------------------------------------------------------------------------ writing


def _fit_channels(pixels: np.ndarray, fmt: str) -> np.ndarray:
    """Give ``pixels`` a channel layout that ``fmt`` can store."""
    c = 1 if pixels.ndim == 2 else pixels.shape[2]
    if pixels.ndim == 3 and c == 1 and fmt != "npy":
        pixels, c = pixels[:, :, 0], 1
    if fmt in ("jpg", "bmp") and c in (2, 4):
        # JPEG has no alpha; BMP's 32-bit alpha is read back as padding by most readers.
        return pixels[:, :, : c - 1] if c == 4 else pixels[:, :, 0]
    if fmt == "webp" and c in (1, 2):  # WebP has no grey: replicate it into RGB
        grey = pixels if c == 1 else pixels[:, :, 0]
        rgb = np.repeat(grey[:, :, np.newaxis], 3, axis=2)
        return rgb if c == 1 else np.concatenate([rgb, pixels[:, :, 1:2]], axis=2)
    return pixels


def write_image(
    path: str | os.PathLike[str],
    image: ImageData | np.ndarray,
    *,
    fmt: str | None = None,
    quality: int = 95,
    compress_level: int = 6,
    lossless: bool = False,
    overwrite: bool = False,
) -> None:
    """Encode an image into ``path`` atomically.

    Arguments:
        path: the destination; its extension gives the format unless ``fmt`` is given.
        image: an :class:`ImageData` (ICC profile and EXIF are carried where the format can
            hold them: PNG, JPEG, WebP and TIFF) or a bare array. The pixel type must be one
            the format holds (see :func:`output_dtype`); channels are adapted (JPEG drops alpha,
            WebP has no grey).
        fmt: a key of :data:`FORMATS`.
        quality: JPEG and lossy WebP quality, 1..100.
        compress_level: PNG (and TIFF deflate) compression level, 0..9.
        lossless: WebP lossless.
        overwrite: replace an existing ``path``; without it an existing file is an error.

    Raises:
        OutputError: the file exists (without ``overwrite``), is not a regular file, or cannot
            be written.
        ImageError: the pixel type does not fit the format, or the encoder failed.
    """
    data = image if isinstance(image, ImageData) else ImageData(np.asarray(image))
    fmt = fmt or format_from_path(path)
    if fmt not in FORMATS:
        raise UsageError(f"unknown image format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not 1 <= quality <= 100:
        raise UsageError(f"quality must be 1..100, not {quality}")
    if not 0 <= compress_level <= 9:
        raise UsageError(f"compress level must be 0..9, not {compress_level}")
    pixels = data.pixels
    if pixels.dtype != output_dtype(pixels.dtype, fmt):
        raise ImageError(
            f"cannot write {os.fspath(path)}: {fmt.upper()} cannot hold {pixels.dtype} pixels"
        )
    pixels = np.ascontiguousarray(_fit_channels(pixels, fmt))
    writer: Callable[[IO[bytes]], None]
    if fmt == "npy":

        def writer(fh: IO[bytes]) -> None:
            np.save(fh, data.pixels, allow_pickle=False)
    elif fmt == "png":

        def writer(fh: IO[bytes]) -> None:
            fh.write(_encode_png(pixels, compress_level, data.icc_profile, data.exif))
    elif fmt == "tiff" and pixels.dtype != np.uint8:

        def writer(fh: IO[bytes]) -> None:
            _write_tifffile(fh, pixels, compress_level, data.icc_profile)
    else:

        def writer(fh: IO[bytes]) -> None:
            _write_pillow(fh, pixels, fmt, quality, compress_level, lossless, data)

    try:
        with atomic_output(path, overwrite=overwrite) as fh:
            writer(fh)
    except (ImageError, OutputError):
        raise
    except Exception as err:  # encoders raise anything; the line names the file
        # An OSError's own text names the hidden temporary file; its strerror does not.
        reason = err.strerror if isinstance(err, OSError) and err.strerror else _describe(err)
        raise ImageError(f"cannot write {os.fspath(path)}: {reason}") from None


def _pillow_mode(pixels: np.ndarray) -> str:
    c = 1 if pixels.ndim == 2 else pixels.shape[2]
    if pixels.dtype == np.uint16:
        return "I;16"
    return {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[c]


def _write_pillow(
    fh: IO[bytes],
    pixels: np.ndarray,
    fmt: str,
    quality: int,
    compress_level: int,
    lossless: bool,
    data: ImageData,
) -> None:
    from PIL import Image

    im = (
        Image.fromarray(pixels, mode=_pillow_mode(pixels))
        if pixels.ndim == 3
        else (Image.fromarray(pixels))
    )
    kwargs: dict[str, Any] = {}
    if fmt != "bmp" and data.icc_profile:
        kwargs["icc_profile"] = data.icc_profile
    if fmt != "bmp" and data.exif:
        kwargs["exif"] = data.exif
    if fmt == "png":
        kwargs["compress_level"] = compress_level
        name = "PNG"
    elif fmt == "jpg":
        kwargs.update(quality=quality, subsampling=0 if quality >= 90 else 2)
        name = "JPEG"
    elif fmt == "webp":
        kwargs.update(quality=100 if lossless else quality, lossless=lossless, exact=True)
        name = "WEBP"
    elif fmt == "tiff":
        if compress_level:
            kwargs["compression"] = "tiff_adobe_deflate"
        name = "TIFF"
    else:
        name = "BMP"
    im.save(fh, format=name, **kwargs)


#: PNG compress levels up to this one use the fast photographic encoding (see _encode_png).
_PNG_FAST_LEVELS = 6


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def _encode_png(pixels: np.ndarray, level: int, icc: bytes | None, exif: bytes | None) -> bytes:
    import imagecodecs

    # libpng through imagecodecs: 16 bits for every layout. Levels 1..6 use the Paeth row filter
    # with zlib's run-length strategy: on photographs (and blurred outputs) as small as full
    # deflate at level 6, and 5-10x faster; 7..9 search with every row filter and full deflate,
    # for graphics where long matches pay; 0 stores rows unfiltered and uncompressed.
    if imagecodecs.PNG.available:
        png_const = imagecodecs.PNG
        if level == 0:
            png = imagecodecs.png_encode(pixels, level=0, filter=png_const.FILTER.NONE)
        elif level <= _PNG_FAST_LEVELS:
            png = imagecodecs.png_encode(
                pixels, level=level, filter=png_const.FILTER.PAETH, strategy=png_const.STRATEGY.RLE
            )
        else:
            png = imagecodecs.png_encode(pixels, level=level)
    else:
        png = imagecodecs.spng_encode(pixels, level=level)
    # imagecodecs writes pixels only; iCCP and eXIf go right after IHDR (both must precede IDAT).
    extra = b""
    if icc:
        extra += _png_chunk(b"iCCP", b"ICC profile\x00\x00" + zlib.compress(icc))
    if exif:
        extra += _png_chunk(b"eXIf", exif[6:] if exif.startswith(b"Exif\x00\x00") else exif)
    end_of_ihdr = len(_PNG_SIGNATURE) + 8 + 13 + 4
    return png[:end_of_ihdr] + extra + png[end_of_ihdr:]


def _write_tifffile(fh: IO[bytes], pixels: np.ndarray, level: int, icc: bytes | None) -> None:
    import tifffile

    c = 1 if pixels.ndim == 2 else pixels.shape[2]
    tifffile.imwrite(fh, pixels, **_tifffile_options(c, level, icc))


def _tifffile_options(c: int, level: int, icc: bytes | None) -> dict[str, Any]:
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


def with_pixels(image: ImageData, pixels: np.ndarray) -> ImageData:
    """``image`` with other pixels, keeping its metadata."""
    return replace(image, pixels=pixels)
