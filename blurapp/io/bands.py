"""PNG files a band of rows at a time: decoded row by row and encoded row by row through libspng
(the copy imagecodecs ships), so that a batch of photos holds a few bands of rows in memory, not
whole images.

:func:`open_png_source` gives a :class:`PngRowSource` for a PNG that libspng gives as it is
meant (8 or 16 bits, grey, grey+alpha, RGB or RGBA, not interlaced, no tRNS colour key, upright):
an array-like with ``shape``, ``dtype`` and 2-D slicing whose pixels equal what
:func:`blurapp.io.read_image` gives for the same file, read in the order of a tile grid (row by
row). Rows are decoded once, as the requests reach them, and let go once no later request of
the grid can reach them (``look_back`` rows above the furthest row asked for: a row of tiles with
its halo spans that many rows, and every later request of the grid starts within or below it); a
request above the rows held (a second pass, as ``--range normalize`` makes) decodes the file
again from its start.

:func:`png_sink` writes a PNG from windows handed to it in the order of a tile grid (as
:func:`blurapp.pipeline.stream_pixels` calls its sink): each finished row of windows goes to an
encoder thread that deflates it row by row into the file through
:func:`blurapp.io.atomic.atomic_output` (published when complete; removed on any error, Ctrl-C
included). The encoding is the whole-image writer's, except for the row filter of levels
1..6: the run-length strategy after the Up filter (the whole-image writer's libpng uses
Paeth, which it filters with SIMD; libspng's scalar Paeth took a third of this writer's time,
for a fifth smaller files: docs/PERFORMANCE.md, "Seventh session"), written here without
libspng: numpy filters the rows and zlib-ng deflates them (0.17-0.18 CPU-s for a blurred 4K
RGB image instead of the system zlib's 0.27-0.29 s); 7..9 every filter, 0 stored, through
libspng; the ICC profile and EXIF go in iCCP and eXIf chunks.

libspng reports errors as return codes (no ``longjmp`` through Python), which is why it is
used here rather than libpng; it is called through :mod:`ctypes`, with the GIL released while
it decodes or deflates (zlib-ng's deflate releases it too).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.core.errors import ImageError, OutputError
from blurapp.io.atomic import atomic_output
from blurapp.io.bandqueue import AbortedError, BandQueue

__all__ = [
    "PngRowSource",
    "PngSink",
    "PngWriter",
    "open_png_source",
    "png_sink",
    "spng_available",
]

# libspng's constants (spng.h, 0.7).
_SPNG_IO_EOF = -1
_SPNG_IO_ERROR = -2
_SPNG_EOI = 75
_SPNG_CTX_ENCODER = 2
_SPNG_FMT_PNG = 256
_SPNG_DECODE_PROGRESSIVE = 256
_SPNG_ENCODE_PROGRESSIVE = 1
_SPNG_ENCODE_FINALIZE = 2
_SPNG_IMG_COMPRESSION_LEVEL = 2
_SPNG_IMG_COMPRESSION_STRATEGY = 5
_SPNG_FILTER_CHOICE = 10
_FILTER_NONE, _FILTER_UP, _FILTER_ALL = 8, 32, 8 | 16 | 32 | 64 | 128
_Z_FILTERED, _Z_RLE = 1, 3

#: PNG compress levels up to this one use the fast photographic encoding (as the whole-image
#: writer, blurapp.io.images).
_FAST_LEVELS = 6

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type → channels
_COLOUR_TYPE = {c: t for t, c in _CHANNELS.items()}

#: Bytes of rows the band writer filters and deflates at a time (levels 1..6).
_ENCODE_STEP_BYTES = 1 << 20

#: Rows decoded per step of a source (one libspng call per row; this bounds the lock's hold).
_DECODE_STEP = 64


class _Ihdr(ctypes.Structure):
    _fields_ = [
        ("width", ctypes.c_uint32),
        ("height", ctypes.c_uint32),
        ("bit_depth", ctypes.c_uint8),
        ("color_type", ctypes.c_uint8),
        ("compression_method", ctypes.c_uint8),
        ("filter_method", ctypes.c_uint8),
        ("interlace_method", ctypes.c_uint8),
    ]


class _Iccp(ctypes.Structure):
    _fields_ = [
        ("profile_name", ctypes.c_char * 80),
        ("profile_len", ctypes.c_size_t),
        ("profile", ctypes.c_char_p),
    ]


class _Exif(ctypes.Structure):
    _fields_ = [("length", ctypes.c_size_t), ("data", ctypes.c_char_p)]


_RW = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
)


@functools.lru_cache(maxsize=1)
def _spng() -> Any:
    """imagecodecs' libspng through ctypes, or ``None`` where its symbols cannot be found."""
    try:
        import imagecodecs._spng as module

        lib = ctypes.CDLL(module.__file__)
        ctx, size, ptr = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p
        protos: dict[str, tuple[Any, list[Any]]] = {
            "spng_ctx_new": (ctx, [ctypes.c_int]),
            "spng_ctx_free": (None, [ctx]),
            "spng_set_png_stream": (ctypes.c_int, [ctx, _RW, ptr]),
            "spng_set_image_limits": (ctypes.c_int, [ctx, ctypes.c_uint32, ctypes.c_uint32]),
            "spng_get_ihdr": (ctypes.c_int, [ctx, ctypes.POINTER(_Ihdr)]),
            "spng_set_ihdr": (ctypes.c_int, [ctx, ctypes.POINTER(_Ihdr)]),
            "spng_set_iccp": (ctypes.c_int, [ctx, ctypes.POINTER(_Iccp)]),
            "spng_set_exif": (ctypes.c_int, [ctx, ctypes.POINTER(_Exif)]),
            "spng_set_option": (ctypes.c_int, [ctx, ctypes.c_int, ctypes.c_int]),
            "spng_decode_image": (ctypes.c_int, [ctx, ptr, size, ctypes.c_int, ctypes.c_int]),
            "spng_decode_row": (ctypes.c_int, [ctx, ptr, size]),
            "spng_encode_image": (ctypes.c_int, [ctx, ptr, size, ctypes.c_int, ctypes.c_int]),
            "spng_encode_row": (ctypes.c_int, [ctx, ptr, size]),
            "spng_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        }
        for name, (restype, argtypes) in protos.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
    except (ImportError, OSError, AttributeError):
        return None
    return lib


def spng_available() -> bool:
    """Whether PNGs can be read and written a band of rows at a time on this machine."""
    return _spng() is not None


def _strerror(code: int) -> str:
    lib = _spng()
    text = lib.spng_strerror(code) if lib is not None else None
    return text.decode(errors="replace") if text else f"libspng error {code}"


# ------------------------------------------------------------------------------------ reading


_ORIENTATION_TAG = 0x0112


def _scan(path: Path) -> tuple[tuple[int, int, int, int, int], bytes | None, bytes | None] | None:
    """A PNG's header (width, height, bit depth, colour type, interlace), ICC profile and raw
    EXIF, read from its chunks; ``None`` when it is not one a source reads: a palette or low bit
    depth, a tRNS colour key (Pillow expands those), frames (acTL), EXIF in a legacy text chunk
    (only Pillow reads that)."""
    with open(path, "rb") as fh:
        head = fh.read(33)
        if len(head) < 33 or not head.startswith(_PNG_SIGNATURE) or head[12:16] != b"IHDR":
            return None
        width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", head[16:29])
        if depth not in (8, 16) or colour not in _CHANNELS:
            return None
        icc = exif = None
        fh.seek(33)
        while True:  # every chunk's header (eXIf may follow the pixels); the pixels are skipped
            chunk = fh.read(8)
            if len(chunk) < 8:
                return None
            length, kind = struct.unpack(">I4s", chunk)
            if kind == b"IEND":
                return (width, height, depth, colour, interlace), icc, exif
            if kind in (b"tRNS", b"acTL"):
                return None
            if kind in (b"iCCP", b"eXIf", b"tEXt", b"zTXt", b"iTXt"):
                body = fh.read(length)
                fh.seek(4, os.SEEK_CUR)
                if kind == b"iCCP":
                    _name, _, rest = body.partition(b"\x00")
                    icc = zlib.decompress(rest[1:]) if rest[:1] == b"\x00" else None
                elif kind == b"eXIf":
                    exif = body
                elif body.startswith(b"Raw profile type exif"):
                    return None
                continue
            fh.seek(length + 4, os.SEEK_CUR)


def _upright_exif(raw: bytes | None) -> tuple[bytes | None, int]:
    """(EXIF with its orientation reset to 1, the orientation), as the whole-image reader
    gives them (Pillow's EXIF serialisation)."""
    if not raw:
        return None, 1
    from PIL import Image

    exif = Image.Exif()
    exif.load(raw if raw.startswith(b"Exif\x00\x00") else b"Exif\x00\x00" + raw)
    orientation = int(exif.get(_ORIENTATION_TAG, 1) or 1)
    if _ORIENTATION_TAG in exif:
        exif[_ORIENTATION_TAG] = 1
    return (exif.tobytes() if len(exif) else None), orientation


class PngRowSource:
    """A PNG's pixels read in the order of a tile grid (see the module docstring).

    ``source[y0:y1, x0:x1]`` gives a new array; calls may come from several threads (one at a
    time is served). ``icc_profile`` and ``exif`` are the file's (EXIF orientation upright).
    ``decoded_rows`` counts the rows decoded (a second pass counts again) and ``peak_rows`` the
    most rows held at once, for tests and benchmarks.
    """

    def __init__(
        self,
        path: Path,
        header: tuple[int, int, int, int, int],
        look_back: int,
        icc_profile: bytes | None,
        exif: bytes | None,
    ) -> None:
        width, height, depth, colour, _interlace = header
        self.path = path
        self.icc_profile = icc_profile
        self.exif = exif
        self.dtype = np.dtype(np.uint8 if depth == 8 else np.uint16)
        self._channels = _CHANNELS[colour]
        self._width, self._height = width, height
        self.shape: tuple[int, ...] = (
            (height, width) if self._channels == 1 else (height, width, self._channels)
        )
        self._row_bytes = width * self._channels * self.dtype.itemsize
        self._look_back = max(0, int(look_back))
        self._lock = threading.Lock()
        self._buf = np.empty((0, width, self._channels), self.dtype)
        self._lo = self._hi = 0  # rows [lo, hi) are held, at buf[0 : hi - lo]
        self._reach = 0  # the furthest row asked for (exclusive)
        self._ctx: int | None = None
        self._fh: IO[bytes] | None = None
        self._reader: Any = None
        self.decoded_rows = 0
        self.peak_rows = 0

    # ------------------------------------------------------------------------- libspng

    def _open(self) -> None:
        lib = _spng()
        fh = open(self.path, "rb")

        def read(_ctx: int, _user: int, dst: int, length: int) -> int:
            try:
                data = fh.read(length)
            except OSError:
                return _SPNG_IO_ERROR
            if len(data) < length:
                return _SPNG_IO_EOF
            ctypes.memmove(dst, data, length)
            return 0

        self._fh, self._reader = fh, _RW(read)  # the callback must outlive the context
        ctx = lib.spng_ctx_new(0)
        if not ctx:
            fh.close()
            raise ImageError(f"cannot read {self.path}: not enough memory to decode it")
        self._ctx = ctx
        self._check(lib.spng_set_png_stream(ctx, self._reader, None))
        self._check(lib.spng_set_image_limits(ctx, self._width, self._height))
        ihdr = _Ihdr()
        self._check(lib.spng_get_ihdr(ctx, ctypes.byref(ihdr)))
        if (ihdr.width, ihdr.height) != (self._width, self._height):
            raise ImageError(f"cannot read {self.path}: the file changed while being read")
        flags = _SPNG_DECODE_PROGRESSIVE
        self._check(lib.spng_decode_image(ctx, None, 0, _SPNG_FMT_PNG, flags))

    def _check(self, code: int, *, last: bool = False) -> None:
        if code == 0 or (last and code == _SPNG_EOI):
            return
        raise ImageError(
            f"cannot read {self.path}: truncated or corrupt PNG file ({_strerror(code)})"
        )

    def _close_decoder(self) -> None:
        if self._ctx is not None:
            _spng().spng_ctx_free(self._ctx)
            self._ctx = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._reader = None

    def close(self) -> None:
        with self._lock:
            self._close_decoder()
            self._buf = np.empty((0, self._width, self._channels), self.dtype)
            self._lo = self._hi = 0

    def __enter__(self) -> PngRowSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------- rows

    def _restart(self) -> None:
        self._close_decoder()
        self._lo = self._hi = 0

    def _decode_to(self, r1: int, keep_from: int) -> None:
        """Decode rows until ``r1`` is held, letting go of the rows above ``keep_from``."""
        lib = _spng()
        if self._ctx is None:
            self._open()
        while self._hi < r1:
            step = min(_DECODE_STEP, self._height - self._hi)
            self._make_room(step, keep_from)
            base = self._buf.ctypes.data + (self._hi - self._lo) * self._row_bytes
            for i in range(step):
                row = self._hi + i
                code = lib.spng_decode_row(self._ctx, base + i * self._row_bytes, self._row_bytes)
                self._check(code, last=row == self._height - 1)
            self._hi += step
            self.decoded_rows += step
            self.peak_rows = max(self.peak_rows, self._hi - self._lo)

    def _make_room(self, rows: int, keep_from: int) -> None:
        drop = max(0, min(keep_from, self._hi) - self._lo)
        held = self._hi - self._lo - drop
        if held + rows > self._buf.shape[0]:
            # Made once, of the rows a grid's requests hold (the look-back and a decoding step);
            # only a request larger than that (a test's whole image) grows it further, doubling.
            planned = self._look_back + _DECODE_STEP
            size = max(held + rows, planned if held + rows <= planned else 2 * held)
            grown = np.empty((size, *self._buf.shape[1:]), self.dtype)
            grown[:held] = self._buf[drop : drop + held]
            self._buf = grown
        elif drop:
            self._buf[:held] = self._buf[drop : drop + held]
        self._lo += drop

    def prefetch(self, rows: int) -> None:
        """Decode the first ``rows`` rows now (at most what the buffer holds: the look-back and
        a decoding step), so that the first requests find them: a batch decodes the next
        file's first row of tiles while the GPU runs the current one's. Does nothing once rows
        have been requested."""
        with self._lock:
            if self._reach or self._lo:
                return
            self._decode_to(min(self._height, max(0, rows), self._look_back), 0)

    def __getitem__(self, key: tuple[slice, slice]) -> np.ndarray:
        ys, xs = key
        r0, r1, step = ys.indices(self._height)
        if step != 1:
            raise IndexError("a PNG source reads runs of rows")
        r1 = max(r0, r1)
        with self._lock:
            if r0 < self._lo:  # a second pass: from the start again
                self._restart()
                self._reach = 0
            self._reach = max(self._reach, r1)
            keep_from = max(self._lo, min(r0, self._reach - self._look_back))
            self._decode_to(r1, keep_from)
            block = np.array(self._buf[r0 - self._lo : r1 - self._lo, xs])
        return block[:, :, 0] if self._channels == 1 else block


def open_png_source(path: str | os.PathLike[str], *, look_back: int) -> PngRowSource | None:
    """A :class:`PngRowSource` for ``path``, or ``None`` when the whole-image reader must take
    it (libspng missing, a palette, a low bit depth, a tRNS colour key, interlacing, several
    frames, an EXIF orientation other than upright).

    Arguments:
        look_back: rows above the furthest row requested that later requests may still reach
            (a tile with its halo: what the grid's windows of one row span).
    """
    if _spng() is None:
        return None
    p = Path(path)
    scanned = _scan(p)
    if scanned is None or scanned[0][4] != 0:
        return None
    header, icc, raw_exif = scanned
    exif, orientation = _upright_exif(raw_exif)
    if orientation != 1:
        return None
    return PngRowSource(p, header, look_back, icc, exif)


# ------------------------------------------------------------------------------------ writing


class PngSink(BandQueue):
    """The sink of :func:`png_sink`: call it with ``(y0, y1, x0, x1)`` and the pixels of each
    window, in the order of a tile grid (row by row, each row left to right, windows of one
    row sharing ``y0`` and ``y1``). A complete row of windows goes to the encoder; at most
    ``backlog`` of them wait for it. ``peak_rows`` is the most image rows held at once."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, backlog: int = 1) -> None:
        super().__init__(shape, dtype, backlog, "PNG")
        self._band: np.ndarray | None = None
        # Bands the encoder is done with, filled again: no new mapping (and page faults) per
        # band. At most one band being filled, ``backlog`` queued and one being encoded exist.
        self._spare: list[np.ndarray] = []
        self._closed = False  # every window given: no band is filled again

    def __call__(self, window: tuple[int, int, int, int], pixels: np.ndarray) -> None:
        y0, y1, x0, x1 = window
        if self._accept(window):
            rows = y1 - y0
            spare = self._spare.pop() if self._spare else None
            if spare is None or spare.shape[0] < rows:
                spare = np.empty((rows, self._width, self._channels), self.dtype)
            self._band = spare[:rows]
            self._count(rows)
        assert self._band is not None
        self._band[:, x0:x1] = pixels if pixels.ndim == 3 else pixels[:, :, np.newaxis]
        self._filled = x1
        if x1 < self._width:
            return
        self._filled = 0
        band, self._band = self._band, None
        self._put(band)

    def finish(self) -> None:
        """All windows were given: tell the encoder, which then completes the file. The bands
        already encoded are let go (none is filled again)."""
        self._finish(self._row_y1)
        self._closed = True
        self._spare.clear()

    def bands(self) -> Iterator[np.ndarray]:
        """The rows, a band at a time (run on the encoder's thread); each band is filled again
        once the encoder asks for the next one (until :meth:`finish`)."""
        for band in self._received():
            yield band
            if not self._closed:
                self._spare.append(band if band.base is None else band.base)
            del band


def _encode(
    fh: IO[bytes],
    sink: PngSink,
    compress_level: int,
    icc_profile: bytes | None,
    exif: bytes | None,
) -> None:
    """Deflate the sink's bands into ``fh`` as one PNG (run on the encoder's thread)."""
    if 1 <= compress_level <= _FAST_LEVELS:
        _encode_up(fh, sink, compress_level, icc_profile, exif)
        return
    lib = _spng()
    failure: list[BaseException] = []

    def write(_ctx: int, _user: int, src: int, length: int) -> int:
        try:
            fh.write(ctypes.string_at(src, length))
        except BaseException as err:  # the file's error is raised below, not lost in C
            failure.append(err)
            return _SPNG_IO_ERROR
        return 0

    writer = _RW(write)
    ctx = lib.spng_ctx_new(_SPNG_CTX_ENCODER)
    if not ctx:
        raise MemoryError("libspng could not make an encoder")

    def check(code: int, *, last: bool = False) -> None:
        if failure:
            raise failure[0]
        if code and not (last and code == _SPNG_EOI):
            raise ImageError(f"PNG encoder: {_strerror(code)}")

    try:
        height, width = sink.shape[0], sink.shape[1]
        ihdr = _Ihdr(width, height, sink.dtype.itemsize * 8, _COLOUR_TYPE[sink._channels], 0, 0, 0)
        check(lib.spng_set_png_stream(ctx, writer, None))
        check(lib.spng_set_ihdr(ctx, ctypes.byref(ihdr)))
        if compress_level == 0:
            options = ((_SPNG_FILTER_CHOICE, _FILTER_NONE), (_SPNG_IMG_COMPRESSION_LEVEL, 0))
        elif compress_level <= _FAST_LEVELS:
            options = (
                (_SPNG_FILTER_CHOICE, _FILTER_UP),
                (_SPNG_IMG_COMPRESSION_LEVEL, compress_level),
                (_SPNG_IMG_COMPRESSION_STRATEGY, _Z_RLE),
            )
        else:
            options = (
                (_SPNG_FILTER_CHOICE, _FILTER_ALL),
                (_SPNG_IMG_COMPRESSION_LEVEL, compress_level),
                (_SPNG_IMG_COMPRESSION_STRATEGY, _Z_FILTERED),
            )
        for option, value in options:
            check(lib.spng_set_option(ctx, option, value))
        if icc_profile:
            iccp = _Iccp(b"ICC profile", len(icc_profile), icc_profile)
            check(lib.spng_set_iccp(ctx, ctypes.byref(iccp)))
        if exif:
            body = exif[6:] if exif.startswith(b"Exif\x00\x00") else exif
            if _valid_exif(body):
                check(lib.spng_set_exif(ctx, ctypes.byref(_Exif(len(body), body))))
        flags = _SPNG_ENCODE_PROGRESSIVE | _SPNG_ENCODE_FINALIZE
        check(lib.spng_encode_image(ctx, None, 0, _SPNG_FMT_PNG, flags))
        row_bytes = width * sink._channels * sink.dtype.itemsize
        row = 0
        for band in sink.bands():
            band = np.ascontiguousarray(band)
            base = band.ctypes.data
            for i in range(band.shape[0]):
                if sink.abort.is_set():
                    raise AbortedError
                code = lib.spng_encode_row(ctx, base + i * row_bytes, row_bytes)
                check(code, last=row == height - 1)
                row += 1
    finally:
        lib.spng_ctx_free(ctx)
        del writer


@functools.lru_cache(maxsize=1)
def _deflater() -> Any:
    """zlib-ng's drop-in zlib module (its run-length deflate takes 0.17-0.18 CPU-s for a
    blurred 4K RGB image after the Up filter, the system zlib's 0.27-0.29 s, for the same
    bytes), or the standard library's where it is missing."""
    try:
        from zlib_ng import zlib_ng

        return zlib_ng
    except ImportError:  # pragma: no cover - zlib-ng is a dependency
        return zlib


def _encode_up(
    fh: IO[bytes],
    sink: PngSink,
    compress_level: int,
    icc_profile: bytes | None,
    exif: bytes | None,
) -> None:
    """The fast levels (1..6): every row Up-filtered by numpy, a band at a time, and deflated
    with the run-length strategy into IDAT chunks (zlib-ng, the GIL released while it runs).
    libspng did the same with the system's zlib and its own scalar filter loop."""
    z = _deflater()
    height, width = sink.shape[0], sink.shape[1]
    channels, itemsize = sink._channels, sink.dtype.itemsize

    def chunk(kind: bytes, body: bytes | memoryview) -> None:
        fh.write(struct.pack(">I", len(body)) + kind)
        fh.write(body)
        fh.write(struct.pack(">I", z.crc32(body, z.crc32(kind))))

    fh.write(_PNG_SIGNATURE)
    ihdr = struct.pack(">IIBBBBB", width, height, itemsize * 8, _COLOUR_TYPE[channels], 0, 0, 0)
    chunk(b"IHDR", ihdr)
    if icc_profile:
        chunk(b"iCCP", b"ICC profile\x00\x00" + z.compress(icc_profile))
    if exif:
        body = exif[6:] if exif.startswith(b"Exif\x00\x00") else exif
        if _valid_exif(body):
            chunk(b"eXIf", body)
    row_bytes = width * channels * itemsize
    deflate = z.compressobj(compress_level, zlib.DEFLATED, 15, 8, _Z_RLE)
    prev = np.zeros(row_bytes, np.uint8)  # the row above the first: zeros (Up is then None)
    # Filtered a step of rows at a time: a small buffer, not a band's worth of bytes more.
    step = max(1, min(height, _ENCODE_STEP_BYTES // (row_bytes + 1)))
    filtered = np.empty((step, row_bytes + 1), np.uint8)
    filtered[:, 0] = 2  # the Up filter
    for band in sink.bands():
        if itemsize > 1:  # PNG's samples are big-endian
            band = band.astype(band.dtype.newbyteorder(">"))
        flat = np.ascontiguousarray(band).view(np.uint8).reshape(band.shape[0], row_bytes)
        del band
        for r0 in range(0, flat.shape[0], step):
            if sink.abort.is_set():
                raise AbortedError
            rows = flat[r0 : r0 + step]
            out = filtered[: rows.shape[0]]
            np.subtract(rows[0], prev, out=out[0, 1:])
            np.subtract(rows[1:], rows[:-1], out=out[1:, 1:])
            prev[:] = rows[-1]
            data = deflate.compress(out)
            if data:
                chunk(b"IDAT", data)
        del flat, rows
    chunk(b"IDAT", deflate.flush())
    chunk(b"IEND", b"")


def _valid_exif(body: bytes) -> bool:
    """Whether libspng takes this EXIF (it checks for a TIFF header); another is left out, as
    the whole-image writer's readers would not read it either."""
    return body[:4] in (b"II*\x00", b"MM\x00*")


class PngWriter:
    """A PNG being written from the windows given to its :attr:`sink`, deflated on an encoder
    thread of its own into the atomic writer's temporary file (see :func:`png_sink`, which is
    this as a ``with`` block).

    :meth:`start` starts the encoder; the windows go to :attr:`sink`; :meth:`close` says that
    all were given and returns at once, so that the caller can go on (a batch streams its next
    file) while the encoder deflates the last rows; :meth:`wait` waits for the file to be
    complete and published, and raises what went wrong. :meth:`abort` stops the encoder and
    removes its temporary (nothing is published); it is what any failure of the caller's must
    end with.

    Raises (the constructor):
        OutputError: libspng is not available.
        ImageError: a pixel type PNG cannot hold.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        shape: tuple[int, ...],
        dtype: np.dtype | type,
        *,
        icc_profile: bytes | None = None,
        exif: bytes | None = None,
        compress_level: int = 6,
        overwrite: bool = False,
    ) -> None:
        if _spng() is None:
            raise OutputError("cannot write a PNG a band at a time: libspng is not available")
        dtype = np.dtype(dtype)
        if dtype not in (np.uint8, np.uint16):
            raise ImageError(f"cannot write {os.fspath(path)}: PNG cannot hold {dtype} pixels")
        self.path = path
        self.sink = PngSink(tuple(shape), dtype)
        self._finished = threading.Event()
        settings = (compress_level, icc_profile, exif)
        self._thread = threading.Thread(
            target=self._write, args=(overwrite, settings), name="blurapp-png-writer", daemon=True
        )

    def _write(self, overwrite: bool, settings: tuple[int, bytes | None, bytes | None]) -> None:
        sink = self.sink
        try:
            with atomic_output(self.path, overwrite=overwrite) as fh:
                _encode(fh, sink, *settings)
        except BaseException as err:
            sink.error = err
            sink.abort.set()
        finally:
            self._finished.set()

    def start(self) -> None:
        """Start the encoder's thread."""
        self._thread.start()

    def close(self) -> None:
        """All windows were given: the encoder completes the file on its own (:meth:`wait`).

        Raises:
            ValueError: not every row was given.
            OutputError: the encoder stopped (the caller then aborts).
        """
        self.sink.finish()

    def _wait(self) -> None:
        # An event, not Thread.join: on Python 3.11 a Ctrl-C inside join can mark the writer
        # stopped while it still runs, and the temporary would outlive the process.
        if self._thread.ident is None:  # never started
            return
        while not self._finished.wait(0.1):
            pass

    def wait(self) -> None:
        """Wait until the file is complete and published.

        Raises:
            OutputError: it could not be written (it is not there then).
        """
        self._wait()
        err = self.sink.error
        if err is None:
            return
        if isinstance(err, OutputError):
            raise err
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise OutputError(f"cannot write {os.fspath(self.path)}: {reason or type(err).__name__}")

    def abort(self) -> None:
        """Stop the encoder and wait for it to remove its temporary file."""
        self.sink.abort.set()
        self._wait()


@contextlib.contextmanager
def png_sink(
    path: str | os.PathLike[str],
    shape: tuple[int, ...],
    dtype: np.dtype | type,
    *,
    icc_profile: bytes | None = None,
    exif: bytes | None = None,
    compress_level: int = 6,
    overwrite: bool = False,
) -> Iterator[PngSink]:
    """Write the PNG ``path`` from the windows given to the yielded :class:`PngSink`.

    The file is complete and published (never over an existing file without ``overwrite``)
    when the block ends normally having given every window; on any exception (Ctrl-C included)
    the encoder stops and its temporary file is removed.

    Arguments:
        path: the destination.
        shape: H×W or H×W×C (C ≤ 4) of the image.
        dtype: uint8 or uint16.
        icc_profile, exif: carried in iCCP and eXIf chunks.
        compress_level: 0..9, as :func:`blurapp.io.write_image` takes it.
        overwrite: replace an existing ``path``.

    Raises:
        OutputError: the file exists (without ``overwrite``), or cannot be written.
    """
    writer = PngWriter(
        path, shape, dtype, icc_profile=icc_profile, exif=exif, compress_level=compress_level,
        overwrite=overwrite,
    )  # fmt: skip
    try:
        writer.start()  # inside: a Ctrl-C during start() still aborts the writer
        yield writer.sink
        writer.close()
        writer._wait()
    except BaseException:
        writer.abort()
        raise
    writer.wait()
