"""The contract of an image codec (what a format stores and how it is probed, read and written)
and the pixel and metadata containers that every codec fills.

A codec is one module of :mod:`blurapp.io.codecs`; it imports its library (Pillow, imagecodecs,
tifffile, pillow-heif, rawpy) inside its functions, so that ``blurapp --help`` and a machine
without an optional library still work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, ClassVar

import numpy as np

from blurapp.core.errors import ImageError

__all__ = [
    "METADATA_KINDS",
    "Animation",
    "Codec",
    "ImageData",
    "ImageInfo",
    "ReadOptions",
    "WriteOptions",
    "describe",
]

#: What a codec can carry from a file to an output besides the pixels.
METADATA_KINDS = ("exif", "icc", "xmp", "timing")


@dataclass(frozen=True)
class ImageInfo:
    """What a file's header says, read without decoding the pixels.

    ``frames`` counts the images of an animation or a multi-page file (1 for a still image);
    every frame has the size and layout of the first."""

    format: str
    width: int
    height: int
    channels: int
    dtype: np.dtype
    frames: int = 1

    @property
    def pixels(self) -> int:
        """The pixels of one frame."""
        return self.width * self.height


@dataclass(frozen=True)
class Animation:
    """The frames of an animated or multi-page image, and their timing.

    ``frames`` holds every frame (the first included), each of the first one's shape and type;
    ``durations`` are milliseconds per frame (empty for pages, which have none), ``loop`` the
    loop count (0: for ever; ``None`` for pages) and ``disposal`` the per-frame disposal codes of
    GIF and APNG (empty where the format has none).
    """

    frames: tuple[np.ndarray, ...]
    durations: tuple[int, ...] = ()
    loop: int | None = 0
    disposal: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.frames)


@dataclass(frozen=True)
class ImageData:
    """Decoded pixels and the metadata worth carrying to an output.

    ``pixels`` is H×W (grey) or H×W×C; with C = 2 or 4 the last channel is straight alpha.
    ``exif`` has its orientation tag already reset to 1 (the pixels are upright). For an
    animation or a multi-page file, ``pixels`` is its first frame and ``animation`` holds all
    of them (``None`` for a still image).
    """

    pixels: np.ndarray
    format: str = "npy"
    icc_profile: bytes | None = None
    exif: bytes | None = None
    xmp: bytes | None = None
    animation: Animation | None = field(default=None, compare=False)
    #: One-line notes on what the decoder met and blurapp does not handle (an HDR gain map).
    notes: tuple[str, ...] = field(default=(), compare=False)

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

    @property
    def frame_count(self) -> int:
        return 1 if self.animation is None else len(self.animation)

    @property
    def frames(self) -> tuple[np.ndarray, ...]:
        """Every frame: the animation's, or the pixels alone."""
        return (self.pixels,) if self.animation is None else self.animation.frames


@dataclass(frozen=True)
class ReadOptions:
    """How to decode: the pixel limit, raw development, the frame wanted.

    Attributes:
        max_pixels: refuse images of more pixels than this, all frames counted, before any
            pixel is decoded.
        raw_linear: develop camera raw to linear 16-bit instead of sRGB.
        frame: decode this frame only (0-based); ``None``: every frame.
    """

    max_pixels: int
    raw_linear: bool = False
    frame: int | None = None


@dataclass(frozen=True)
class WriteOptions:
    """How to encode (the ``files`` options of apply and batch)."""

    quality: int = 95
    compress_level: int = 6
    lossless: bool = False


class Codec:
    """One image format: what it stores, and how it is recognised, probed, read and written.

    Subclasses set the class attributes and implement :meth:`sniff`, :meth:`probe`,
    :meth:`read` and (where ``writes``) :meth:`encode`; :mod:`blurapp.io.codecs` registers one
    instance of each. Every list of formats (the command line's ``--format`` choices, the
    window's open and save filters, ``blurapp info``, the README's table) is read from there.
    """

    #: The format's name in blurapp (``--format``, reports).
    name: ClassVar[str]
    #: The name users know it by.
    label: ClassVar[str]
    #: What a file dialog calls its files.
    description: ClassVar[str] = ""
    #: Extensions in lower case, with the dot; the first is the one written.
    extensions: ClassVar[tuple[str, ...]]
    #: The magic bytes, as said in ``blurapp info`` and the README (``sniff`` checks them).
    magic: ClassVar[str]
    #: Pixel types it stores (for a read-only format: the ones it gives).
    dtypes: ClassVar[tuple[str, ...]]
    #: Channel counts it stores (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA).
    channels: ClassVar[tuple[int, ...]] = (1, 2, 3, 4)
    #: What it carries besides the pixels: a subset of :data:`METADATA_KINDS`.
    metadata: ClassVar[frozenset[str]] = frozenset()
    #: The library that decodes and encodes it (imported lazily).
    library: ClassVar[str] = "Pillow"
    #: It can be written (camera raw cannot).
    writes: ClassVar[bool] = True
    #: Writing loses detail (JPEG; WebP, HEIF and AVIF unless lossless; GIF's palettes).
    lossy: ClassVar[bool] = False
    #: It can hold several frames (an animation or pages).
    multi_frame: ClassVar[bool] = False
    #: What the ``--quality`` option does to it, if anything.
    quality_note: ClassVar[str] = ""
    #: Said once when a file of this format is written (what the format loses).
    write_note: ClassVar[str] = ""

    # ------------------------------------------------------------------ recognising

    def sniff(self, head: bytes, path: Path) -> bool:
        """Whether a file whose first bytes are ``head`` is of this format."""
        raise NotImplementedError

    def unavailable(self) -> str | None:
        """Why this machine cannot read or write the format (a library missing), or ``None``."""
        return None

    # ------------------------------------------------------------------ the work

    def probe(self, path: Path) -> ImageInfo:
        """The header: size, channels, pixel type and frames, without decoding pixels."""
        raise NotImplementedError

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        """Decode ``path`` (already probed and within the pixel limit)."""
        raise NotImplementedError

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        """The pixel type written for an image of ``dtype``: the same one where it fits, else
        the widest the format stores."""
        if dtype.name in self.dtypes:
            return dtype
        if "uint16" in self.dtypes and dtype != np.uint8:
            return np.dtype(np.uint16)
        return np.dtype(np.uint8)

    def fit_channels(self, pixels: np.ndarray) -> np.ndarray:
        """``pixels`` in a channel layout the format stores (alpha dropped, grey made RGB)."""
        c = 1 if pixels.ndim == 2 else pixels.shape[2]
        if pixels.ndim == 3 and c == 1:
            pixels, c = pixels[:, :, 0], 1
        if c in self.channels:
            return pixels
        if c in (2, 4) and c - 1 in self.channels:  # no alpha: drop it
            return pixels[:, :, : c - 1] if c == 4 else pixels[:, :, 0]
        if c in (1, 2) and c + 2 in self.channels:  # no grey: replicate it into RGB
            grey = pixels if c == 1 else pixels[:, :, 0]
            rgb = np.repeat(grey[:, :, np.newaxis], 3, axis=2)
            return rgb if c == 1 else np.concatenate([rgb, pixels[:, :, 1:2]], axis=2)
        if c == 2 and 3 in self.channels:  # grey+alpha into RGB, alpha dropped
            return np.repeat(pixels[:, :, :1], 3, axis=2)
        return pixels

    def losses(self, data: ImageData) -> tuple[str, ...]:
        """What writing ``data`` in this format leaves out of what it holds (metadata a writer
        cannot carry), one line each, for the command to say: nothing is dropped silently."""
        return ()

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        """Write ``data`` (its pixels already of :meth:`output_dtype` and :meth:`fit_channels`)
        into the open file ``fh``."""
        raise ImageError(f"blurapp cannot write {self.label} files")

    def dialog_filter(self) -> str:
        """A file dialog's filter for the format, both cases of each extension (a phone's
        ``IMG_0001.HEIC``): "HEIC/HEIF image (*.heic *.HEIC ...)"."""
        return f"{self.description or self.label + ' image'} ({self.patterns()})"

    def patterns(self) -> str:
        """The extensions as globs, lower and upper case."""
        return " ".join(f"*{e} *{e.upper()}" for e in self.extensions)

    def __repr__(self) -> str:
        return f"<codec {self.name}>"


def describe(err: BaseException) -> str:
    """The first line of a library's error, or its type's name when it says nothing."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return text or type(err).__name__
