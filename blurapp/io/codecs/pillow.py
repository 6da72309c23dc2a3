"""What the Pillow-backed codecs share: opening under blurapp's own pixel limit, metadata
(ICC, EXIF, XMP, orientation), Pillow images to arrays and back, EXIF orientation, and the
frames of animations (GIF, APNG, animated WebP).

Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``) is left as it is for the
process. blurapp's own guard is ``max_pixels``, checked on the header before any pixel is
decoded; Pillow's limit is raised to it only for the duration of blurapp's own ``Image.open``
calls, under a lock, and put back afterwards (see :func:`pillow_open`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs.base import Animation, Codec, ImageData, ImageInfo, ReadOptions, WriteOptions

ORIENTATION_TAG = 0x0112

#: Serialises blurapp's changes to Pillow's process-wide decompression-bomb limit.
_PILLOW_LIMIT_LOCK = threading.Lock()

#: The limit for reading a header only: no pixel is decoded then, and the size that the header
#: gives is what blurapp's own ``max_pixels`` check looks at.
HEADER_ONLY = sys.maxsize // 4


@contextlib.contextmanager
def pillow_open(
    path: Path, max_pixels: int, formats: tuple[str, ...] | None = None
) -> Iterator[Any]:
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
            im = Image.open(path, formats=formats)
        finally:
            Image.MAX_IMAGE_PIXELS = before
    with im:
        yield im


# Tags that describe a TIFF's pixel layout (size, strips, samples, compression, ICC). A TIFF's
# EXIF as Pillow reads it includes them; carried to an output they would contradict its pixels.
_LAYOUT_TAGS = frozenset(
    {254, 255, 256, 257, 258, 259, 262, 263, 266, 273, 277, 278, 279, 280, 281, 284, 292, 293}
    | {317, 320, 322, 323, 324, 325, 338, 339, 340, 341, 347, 530, 531, 532, 34675}
)


def metadata_of(im: Any) -> tuple[bytes | None, bytes | None, int]:
    """(ICC profile, EXIF with orientation reset, orientation) of an open Pillow image."""
    icc = im.info.get("icc_profile") or None
    exif = im.getexif()
    orientation = int(exif.get(ORIENTATION_TAG, 1) or 1)
    if ORIENTATION_TAG in exif:
        exif[ORIENTATION_TAG] = 1
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


def xmp_of(im: Any) -> bytes | None:
    """The XMP packet Pillow found, as bytes (``None`` without one)."""
    xmp = im.info.get("xmp")
    if isinstance(xmp, str):
        xmp = xmp.encode("utf-8")
    return xmp or None


def pillow_metadata(path: Path) -> tuple[bytes | None, bytes | None, int]:
    """(ICC profile, EXIF with orientation reset, orientation) without decoding the pixels."""
    with pillow_open(path, HEADER_ONLY) as im:
        return metadata_of(im)


def pillow_to_array(im: Any) -> np.ndarray:
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
        return _raw_array(im.convert("LA") if transparent else _as_mode(im, "L"))
    if mode == "LA":
        return _raw_array(im)
    if mode in ("La",):
        return _raw_array(im.convert("LA"))
    if mode in ("RGBA", "RGBa", "PA") or transparent:
        return _raw_array(_as_mode(im, "RGBA"))
    return _raw_array(_as_mode(im, "RGB"))


def _as_mode(im: Any, mode: str) -> Any:
    """``im`` in ``mode``: itself when it is already (``convert`` would copy it)."""
    return im if im.mode == mode else im.convert(mode)


_CHANNELS_OF = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}


def _raw_array(im: Any) -> np.ndarray:
    """An 8-bit L, LA, RGB or RGBA Pillow image's pixels, as ``np.asarray`` gives them, but
    encoded straight into a new writeable array: ``np.asarray`` goes through ``tobytes``, whose
    chunks and their join hold two more copies of the image at once (a 4K RGB JPEG peaked at
    112 MB more than its pixels' 25 MB; now 33 MB: Pillow's own image)."""
    from PIL import Image

    channels = _CHANNELS_OF[im.mode]
    width, height = im.size
    shape = (height, width) if channels == 1 else (height, width, channels)
    try:
        encoder = Image._getencoder(im.mode, "raw", im.mode)
    except Exception:  # Pillow's raw encoder changed: its public way
        return np.asarray(im)
    out = np.empty(shape, np.uint8)
    view = memoryview(out).cast("B")
    try:  # as Image.tobytes runs the encoder (Pillow 13)
        encoder.setimage(im.im, (0, 0, *im.size))
        pos, bufsize = 0, max(1 << 16, width * 4 * 16)
        while True:
            _, code, data = encoder.encode(bufsize)
            if pos + len(data) > out.nbytes:
                code = -1
                break
            view[pos : pos + len(data)] = data
            pos += len(data)
            if code:
                break
    except Exception:
        code = -1
    finally:
        encoder.cleanup()
    if code < 0 or pos != out.nbytes:
        return np.asarray(im)  # as Pillow itself would say what went wrong
    return out


def pillow_layout(im: Any) -> tuple[int, np.dtype]:
    """(channels, pixel type) that :func:`pillow_to_array` gives for ``im``, from its header."""
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
    return channels, dtype


def pillow_mode(pixels: np.ndarray) -> str:
    c = 1 if pixels.ndim == 2 else pixels.shape[2]
    if pixels.dtype == np.uint16:
        return "I;16"
    return {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[c]


def to_pillow(pixels: np.ndarray) -> Any:
    from PIL import Image

    if pixels.ndim == 3:
        return Image.fromarray(pixels, mode=pillow_mode(pixels))
    return Image.fromarray(pixels)


def orient(pixels: np.ndarray, orientation: int) -> np.ndarray:
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


# ------------------------------------------------------------------------ animations


def frame_count(im: Any) -> int:
    return int(getattr(im, "n_frames", 1) or 1)


def _frame_rgb(im: Any, alpha: bool) -> np.ndarray:
    if im.mode in ("I;16", "I;16L", "I;16B", "I;16N", "I"):
        # 16-bit grey frames stay 16-bit grey (Pillow's convert("RGB") would clip them at 255).
        return np.clip(np.asarray(im), 0, 65535).astype(np.uint16)
    return np.asarray(im.convert("RGBA" if alpha else "RGB"))


def read_frames(im: Any, fmt: str, options: ReadOptions, orientation: int) -> Animation:
    """Every frame of an open animated image (or the one ``options.frame`` asks for), each
    composited onto the canvas as a viewer shows it, in RGB, or RGBA when any frame has
    transparency; the durations, loop count and disposal codes with them."""
    count = frame_count(im)
    wanted = range(count) if options.frame is None else (options.frame,)
    # Every frame in one layout: RGBA when any has transparency (a GIF's later frames may
    # bring it), else RGB. Looking costs a seek per frame, no decode of the pixels beyond it.
    alpha = False
    frames: list[np.ndarray] = []
    durations: list[int] = []
    disposal: list[int] = []
    loop = im.info.get("loop")
    for i in range(count):
        im.seek(i)
        if im.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in im.info:
            alpha = True
    for i in wanted:
        im.seek(i)
        frames.append(np.ascontiguousarray(orient(_frame_rgb(im, alpha), orientation)))
        durations.append(int(im.info.get("duration", 0) or 0))
        code = getattr(im, "disposal_method", im.info.get("disposal"))
        if code is not None:
            disposal.append(int(code))
    del fmt
    if alpha and all(f[:, :, 3].min() == 255 for f in frames):
        # Pillow gives every frame of an animated WebP as RGBA: opaque ones are RGB.
        frames = [np.ascontiguousarray(f[:, :, :3]) for f in frames]
    return Animation(
        tuple(frames),
        tuple(durations),
        None if loop is None else int(loop),
        tuple(disposal) if len(disposal) == len(frames) else (),
    )


class PillowCodec(Codec):
    """A format that Pillow reads and writes whole (JPEG, WebP, BMP, GIF; PNG's and TIFF's
    fallbacks). Subclasses name Pillow's format and its save arguments."""

    #: Pillow's name of the format (``Image.open(formats=...)``, ``save(format=...)``).
    pillow_format: str

    def probe(self, path: Path) -> ImageInfo:
        with pillow_open(path, HEADER_ONLY) as im:
            width, height = im.size
            channels, dtype = pillow_layout(im)
            frames = frame_count(im) if self.multi_frame else 1
        if frames > 1 and dtype != np.uint16:  # read as RGB or RGBA (read_frames)
            channels = 4 if channels in (2, 4) else 3
            dtype = np.dtype(np.uint8)
        return ImageInfo(self.name, width, height, channels, dtype, frames)

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        with pillow_open(path, options.max_pixels) as im:
            icc, exif, orientation = metadata_of(im)
            xmp = xmp_of(im) if "xmp" in self.metadata else None
            if self.multi_frame and frame_count(im) > 1:
                animation = read_frames(im, self.name, options, orientation)
                if options.frame is not None:
                    return ImageData(animation.frames[0], self.name, icc, exif, xmp)
                return ImageData(animation.frames[0], self.name, icc, exif, xmp, animation)
            im.load()
            pixels = pillow_to_array(im)
        return ImageData(
            np.ascontiguousarray(orient(pixels, orientation)), self.name, icc, exif, xmp
        )

    def save_arguments(self, options: WriteOptions) -> dict[str, Any]:
        """The format's own arguments to ``Image.save``."""
        return {}

    def prepare_frame(self, pixels: np.ndarray) -> Any:
        """A Pillow image of one frame, as this format's encoder wants it."""
        return to_pillow(pixels)

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        kwargs = self.save_arguments(options)
        if "icc" in self.metadata and data.icc_profile:
            kwargs["icc_profile"] = data.icc_profile
        if "exif" in self.metadata and data.exif:
            kwargs["exif"] = data.exif
        if "xmp" in self.metadata and data.xmp:
            kwargs["xmp"] = data.xmp
        if data.animation is not None and len(data.animation) > 1 and self.multi_frame:
            kwargs.update(self.animation_arguments(data.animation))
            frames = [self.prepare_frame(f) for f in data.animation.frames]
            frames[0].save(
                fh, format=self.pillow_format, save_all=True, append_images=frames[1:], **kwargs
            )
            return
        self.prepare_frame(data.pixels).save(fh, format=self.pillow_format, **kwargs)

    def animation_arguments(self, animation: Animation) -> dict[str, Any]:
        """Pillow's arguments that keep an animation's timing."""
        kwargs: dict[str, Any] = {}
        if animation.durations:
            kwargs["duration"] = list(animation.durations)
        if animation.loop is not None:
            kwargs["loop"] = animation.loop
        return kwargs
