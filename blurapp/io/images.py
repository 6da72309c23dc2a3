"""Read and write image files faithfully, atomically, through the codec registry
(:mod:`blurapp.io.codecs`, which knows every format blurapp reads and writes).

Pixels come back as numpy arrays in their stored type (uint8, uint16, float32, float64), H×W for
grey and H×W×C otherwise, where C is 2 (grey+alpha), 3 (RGB) or 4 (RGBA); palettes are expanded
and EXIF orientation is applied, so every image is upright. An animation or a multi-page file
comes back with every frame (:attr:`ImageData.animation`), or the one ``frame`` asks for. A
file's format is told by its content (its magic bytes), never by its name. Writes go through
:func:`blurapp.io.atomic.atomic_output`: a temporary file beside the destination, published only
when complete, never over an existing file without ``overwrite``.

blurapp's guard against decompression bombs is ``max_pixels`` (all frames counted), checked on
the header before any pixel is decoded (see :mod:`blurapp.io.codecs.pillow` for Pillow's own).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import replace
from pathlib import Path

import numpy as np

from blurapp.core.errors import ImageError, OutputError, UsageError
from blurapp.core.numbers import MAX_CHANNELS, SUPPORTED_DTYPES
from blurapp.io import codecs
from blurapp.io.atomic import atomic_output
from blurapp.io.codecs.base import (
    Animation,
    ImageData,
    ImageInfo,
    ReadOptions,
    WriteOptions,
    describe,
)

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "FORMATS",
    "Animation",
    "ImageData",
    "ImageInfo",
    "check_pixel_limit",
    "default_output_format",
    "format_from_path",
    "output_dtype",
    "probe_image",
    "read_image",
    "with_pixels",
    "write_image",
]

#: The formats blurapp writes and the file extensions that select them (the first one is the
#: one written), from the codec registry.
FORMATS: dict[str, tuple[str, ...]] = {
    name: codecs.CODECS[name].extensions for name in codecs.writable_formats()
}

#: Images above this many pixels are refused before they are decoded (a decompression bomb, or a
#: file that would not fit in memory): 250 megapixels, about a 16k × 16k photo.
DEFAULT_MAX_PIXELS = 250_000_000

#: How much of a file's start is read to tell its format (ISO BMFF brands need the most).
_SNIFF_BYTES = 64


# ------------------------------------------------------------------------------------ formats


def format_from_path(path: str | os.PathLike[str]) -> str:
    """The format name (a key of :data:`FORMATS`) that ``path``'s extension selects, to write.

    Raises:
        UsageError: for an extension no writer knows, or a read-only format (camera raw).
    """
    ext = Path(path).suffix.lower()
    codec = codecs.codec_for_extension(path)
    if codec is not None and not codec.writes:
        raise UsageError(
            f"blurapp cannot write {codec.label} ({ext}): {os.fspath(path)!r}; write TIFF or PNG "
            "(16 bits kept) instead"
        )
    if codec is None:
        known = ", ".join(sorted(e for exts in FORMATS.values() for e in exts))
        raise UsageError(
            f"cannot tell the image format of {os.fspath(path)!r} from its extension "
            f"{ext or '(none)'!r}; use one of {known}"
        )
    return codec.name


def default_output_format(path: str | os.PathLike[str]) -> str:
    """The format an input named ``path`` is written to when none is asked for: its own, or
    16-bit TIFF for a format blurapp only reads (camera raw).

    Raises:
        UsageError: for an extension no codec knows.
    """
    codec = codecs.codec_for_extension(path)
    if codec is not None and not codec.writes:
        return "tiff"
    return format_from_path(path)


def output_dtype(dtype: np.dtype | type, fmt: str) -> np.dtype:
    """The pixel type written to ``fmt`` for an image of ``dtype``: the same one where it fits.

    JPEG, WebP, BMP and GIF hold 8 bits; PNG, HEIF and AVIF hold 8 or 16 (floats become 16-bit);
    TIFF and ``.npy`` hold every supported type (each codec declares its own).
    """
    return codecs.get_codec(fmt).output_dtype(np.dtype(dtype))


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


def _detect(path: Path) -> codecs.Codec:
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
            head = fh.read(_SNIFF_BYTES)
    except OSError as err:
        raise ImageError(f"cannot read {path}: {err.strerror or err}") from None
    codec = codecs.sniff(head, path)
    if codec is None:
        if not head:
            raise ImageError(f"cannot read {path}: the file is empty")
        raise ImageError(f"cannot read {path}: not a {codecs.labels()} file")
    why = codec.unavailable()
    if why:
        raise ImageError(f"cannot read {path}: a {codec.label} file, and reading it {why}")
    return codec


# ------------------------------------------------------------------------------------ probing


def probe_image(path: str | os.PathLike[str]) -> ImageInfo:
    """Read only the header of an image file: format, size, channels, pixel type and frames.

    Raises:
        ImageError: when the file cannot be read or is not a supported image.
    """
    p = Path(path)
    codec = _detect(p)
    try:
        return codec.probe(p)
    except ImageError:
        raise
    except Exception as err:  # decoders raise anything on a broken file
        raise ImageError(f"cannot read {p}: {describe(err)}") from None


# ------------------------------------------------------------------------------------ reading


def read_image(
    path: str | os.PathLike[str],
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    frame: int | None = None,
    raw_linear: bool = False,
) -> ImageData:
    """Decode an image file.

    Arguments:
        path: a file of a format in :mod:`blurapp.io.codecs` (recognised by its content).
        max_pixels: refuse larger images before decoding them (every frame counted).
        frame: decode this frame of an animation or multi-page file only (0-based); ``None``
            decodes them all.
        raw_linear: develop camera raw to linear light (``--raw-linear``) instead of sRGB.

    Returns:
        An :class:`ImageData`: upright pixels in their stored type, the ICC profile, EXIF
        (orientation reset) and XMP when the file has them, the frames of an animation.

    Raises:
        ImageError: one line naming the file and the problem (unreadable, truncated, not an
            image, too large, an unsupported pixel type or channel count, no such frame).
    """
    p = Path(path)
    codec = _detect(p)
    try:
        info = codec.probe(p)
    except ImageError:
        raise
    except Exception as err:  # decoders raise anything on a broken file
        raise ImageError(f"cannot read {p}: {describe(err)}") from None
    if frame is not None:
        if not 0 <= frame < info.frames:
            has = "1 frame" if info.frames == 1 else f"{info.frames} frames"
            raise ImageError(
                f"cannot read frame {frame} of {p}: it has {has} (0..{info.frames - 1})"
            )
        if info.frames == 1:
            frame = None  # a still image: frame 0 is the image
    check_pixel_limit(p, info, max_pixels, frames=1 if frame is not None else None)
    options = ReadOptions(max_pixels=max_pixels, raw_linear=raw_linear, frame=frame)
    try:
        data = codec.read(p, options)
    except ImageError:
        raise
    except MemoryError:
        raise ImageError(f"cannot read {p}: not enough memory to decode it") from None
    except Exception as err:  # decoders raise anything on a broken file
        raise ImageError(
            f"cannot read {p}: truncated or corrupt {codec.label} file ({describe(err)})"
        ) from None
    for pixels in data.frames:
        _check_pixels(p, pixels)
    return data


def check_pixel_limit(
    path: str | os.PathLike[str], info: ImageInfo, max_pixels: int, *, frames: int | None = None
) -> None:
    """Refuse, from its header, an image of more than ``max_pixels`` pixels, all its frames (or
    ``frames`` of them) counted.

    Raises:
        ImageError: one line naming the file, its size, the limit and the option that allows
            it (``--max-megapixels N``).
    """
    count = info.frames if frames is None else frames
    total = info.pixels * count
    if total <= max_pixels:
        return
    needed = math.ceil(total / 1e6)
    size = f"{info.width}×{info.height}" + (f" × {count} frames" if count > 1 else "")
    raise ImageError(
        f"cannot read {os.fspath(path)}: {size} is "
        f"{total / 1e6:.1f} megapixels, over the limit of {max_pixels / 1e6:g} (a guard "
        f"against decompression bombs: pass --max-megapixels {needed} to allow it)"
    )


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


# ------------------------------------------------------------------------------------ writing


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
    """Encode an image (every frame of an animation) into ``path`` atomically.

    Arguments:
        path: the destination; its extension gives the format unless ``fmt`` is given.
        image: an :class:`ImageData` (ICC profile, EXIF, XMP and frame timing are carried
            where the format can hold them) or a bare array. The pixel type must be one the
            format holds (see :func:`output_dtype`); channels are adapted (JPEG drops alpha,
            WebP has no grey).
        fmt: a key of :data:`FORMATS`.
        quality: JPEG, WebP, HEIF and AVIF quality, 1..100.
        compress_level: PNG (and TIFF deflate) compression level, 0..9.
        lossless: WebP, HEIF and AVIF lossless.
        overwrite: replace an existing ``path``; without it an existing file is an error.

    Raises:
        OutputError: the file exists (without ``overwrite``), is not a regular file, or cannot
            be written.
        ImageError: the pixel type does not fit the format, or the encoder failed.
        UsageError: a format blurapp does not write, or a bad option.
    """
    data = image if isinstance(image, ImageData) else ImageData(np.asarray(image))
    fmt = fmt or format_from_path(path)
    if fmt not in FORMATS:
        codec = codecs.CODECS.get(fmt)
        if codec is not None:
            raise UsageError(f"blurapp cannot write {codec.label}; write TIFF or PNG instead")
        raise UsageError(f"unknown image format {fmt!r}; choose one of {', '.join(FORMATS)}")
    codec = codecs.get_codec(fmt)
    if not 1 <= quality <= 100:
        raise UsageError(f"quality must be 1..100, not {quality}")
    if not 0 <= compress_level <= 9:
        raise UsageError(f"compress level must be 0..9, not {compress_level}")
    why = codec.unavailable()
    if why:
        raise ImageError(f"cannot write {os.fspath(path)}: writing {codec.label} {why}")
    for pixels in data.frames:
        if pixels.dtype != codec.output_dtype(pixels.dtype):
            raise ImageError(
                f"cannot write {os.fspath(path)}: {fmt.upper()} cannot hold {pixels.dtype} pixels"
            )
    frames = tuple(np.ascontiguousarray(codec.fit_channels(f)) for f in data.frames)
    animation = None
    if data.animation is not None and len(frames) > 1:
        animation = replace(data.animation, frames=frames)
    fitted = replace(data, pixels=frames[0], animation=animation)
    options = WriteOptions(quality=quality, compress_level=compress_level, lossless=lossless)
    try:
        with atomic_output(path, overwrite=overwrite) as fh:
            codec.encode(fh, fitted, options)
    except (ImageError, OutputError, UsageError):
        raise
    except Exception as err:  # encoders raise anything; the line names the file
        # An OSError's own text names the hidden temporary file; its strerror does not.
        reason = err.strerror if isinstance(err, OSError) and err.strerror else describe(err)
        raise ImageError(f"cannot write {os.fspath(path)}: {reason}") from None


def with_pixels(image: ImageData, pixels: np.ndarray) -> ImageData:
    """``image`` with other pixels (a still image: its animation dropped), keeping its metadata."""
    return replace(image, pixels=pixels, animation=None)


def with_frames(image: ImageData, frames: list[np.ndarray] | tuple[np.ndarray, ...]) -> ImageData:
    """``image`` with other frames (filtered ones), keeping its timing and metadata."""
    frames = tuple(frames)
    if image.animation is None or len(frames) == 1:
        return replace(image, pixels=frames[0], animation=None)
    return replace(image, pixels=frames[0], animation=replace(image.animation, frames=frames))
