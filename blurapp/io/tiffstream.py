"""Large TIFFs a region at a time: a source that reads only what is asked for, and a writer that
takes finished windows row by row and writes 256×256 tiles, both holding a bounded amount.

:func:`open_tiff_source` gives a :class:`TiffSource` for a single-image TIFF that tifffile
decodes as it is meant (the conditions of the whole-image reader in :mod:`blurapp.io.images`):
an array-like with ``shape``, ``dtype`` and 2-D slicing whose pixels equal what
:func:`blurapp.io.read_image` gives for the same file (grey H×W, H×W×C otherwise, native byte
order, float16 as float32). Uncompressed contiguous pixels are read through a read-only memory
map whose pages are let go after each read (the resident set stays at the regions in use);
compressed or tiled pixels through tifffile's own per-segment decoder, with a small cache of
decoded strips or tiles (a band of strips is decoded once for the tiles of a row of the grid,
not once per tile). Anything else (EXIF orientation other than upright, volumes, a compressed
image in one huge strip, several frames) gives ``None``: the whole-image reader takes it.

:func:`tiff_sink` writes a TIFF from windows handed to it in the order of a tile grid (row by
row, each row left to right, as :func:`blurapp.pipeline.stream_pixels` calls its sink): each
finished row of windows is cut into rows of 256×256 tiles and encoded by tifffile's iterator
form of ``TiffWriter.write`` on a thread of its own, through :func:`blurapp.io.atomic_output`
(a temporary beside the destination, published when complete; removed on any error, Ctrl-C
included). Rows are held a row of tiles (256 image rows) at a time: those of the row of windows
being filled, and at most about one band more waiting for the encoder, each let go once encoded.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blurapp.core.errors import ImageError, OutputError
from blurapp.core.numbers import MAX_CHANNELS, SUPPORTED_DTYPES
from blurapp.io.atomic import atomic_output
from blurapp.io.bandqueue import AbortedError, BandQueue

__all__ = [
    "TIFF_TILE",
    "TiffMetadata",
    "TiffSink",
    "TiffSource",
    "open_tiff_source",
    "tiff_sink",
]

#: Side of the tiles written (TIFF tiles must be multiples of 16; 256 is libvips' and GDAL's).
TIFF_TILE = 256

#: A compressed strip or tile larger than this decoded is not streamed (an image stored as one
#: huge strip would be decoded whole for every region): the whole-image reader takes the file.
MAX_SEGMENT_BYTES = 256 * 2**20

#: The decoded-segment cache holds at least this much (it grows to twice the largest region's
#: segments, so that the strips of one row of tiles are decoded once).
MIN_CACHE_BYTES = 32 * 2**20

#: Raw sizes above this are written as BigTIFF (tifffile's own rule: 4 GiB less 32 MiB).
BIGTIFF_BYTES = 2**32 - 2**25

_ORIENTATION_TAG = 274

# Tags of the input carried to a streamed output, as the 8-bit whole-image path carries them
# through Pillow's EXIF: the descriptive baseline ones (ASCII, bytes, single numbers), not the
# pixel layout, not pointers to other IFDs (their offsets mean nothing in a new file).
_CARRIED_TYPES = frozenset({1, 2, 3, 4, 7})  # BYTE, ASCII, SHORT, LONG, UNDEFINED
_NOT_CARRIED = frozenset(
    {254, 255, 256, 257, 258, 259, 262, 263, 266, 273, 277, 278, 279, 280, 281, 282, 283, 284}
    | {292, 293, 296, 301, 305, 317, 318, 319, 320, 322, 323, 324, 325, 330, 338, 339, 340, 341}
    | {347, 529, 530, 531, 532, 34665, 34675, 34853, 40965}
)
_CARRIED_PRIVATE = frozenset({33432, 33723})  # Copyright... is 33432, IPTC 33723


@dataclass(frozen=True)
class TiffMetadata:
    """What a streamed TIFF output carries over from its input: the ICC profile, the resolution
    and the descriptive tags (Artist, Copyright, DateTime, Software, XMP, ...)."""

    icc_profile: bytes | None = None
    resolution: tuple[Any, Any] | None = None
    resolution_unit: int | None = None
    software: str | None = None
    extratags: tuple[tuple[int, int, int, Any, bool], ...] = field(default=())


class TiffSource:
    """Pixels of one TIFF image, read a region at a time (see the module docstring).

    ``source[y0:y1, x0:x1]`` gives a new array of those pixels; calls may come from several
    threads. ``bytes_read`` counts the bytes taken from the file (compressed segments, or the
    regions copied out of the memory map) and ``bytes_decoded`` the bytes of segments decoded,
    for tests and benchmarks. Close it (or use it as a context manager) to release the file.
    """

    def __init__(
        self,
        tif: Any,
        page: Any,
        shape: tuple[int, ...],
        dtype: np.dtype,
        metadata: TiffMetadata,
    ) -> None:
        self._tif = tif
        self._page = page
        self.path = str(tif.filehandle.path)
        self.shape = shape
        self.dtype = dtype
        self.metadata = metadata
        self.bytes_read = 0
        self.bytes_decoded = 0
        self.decodes: dict[int, int] = {}  # segment index → times decoded
        self._lock = threading.RLock()
        self._height, self._width = shape[0], shape[1]
        planes, _depth, _h, _w, contig = page.shaped
        self._planes, self._contig = int(planes), int(contig)
        self._file_dtype = np.dtype(tif.byteorder + page._dtype.char)
        self._mmap: mmap.mmap | None = None
        self._view: np.ndarray | None = None
        self._cache: OrderedDict[int, np.ndarray | None] = OrderedDict()
        self._cache_bytes = 0
        self._capacity = MIN_CACHE_BYTES
        if page.is_final and page.parent.filehandle.is_file:
            self._open_map()
        else:
            self._decode = page.decode  # tifffile's per-segment decoder (built once)
            if page.is_tiled:
                self._seg_h, self._seg_w = int(page.tilelength), int(page.tilewidth)
            else:
                self._seg_h, self._seg_w = min(int(page.rowsperstrip), self._height), self._width
            self._seg_rows = math.ceil(self._height / self._seg_h)
            self._seg_cols = math.ceil(self._width / self._seg_w)

    # ------------------------------------------------------------------------- set-up

    @property
    def mapped(self) -> bool:
        """Whether the pixels are read through a memory map (uncompressed, contiguous)."""
        return self._view is not None

    @property
    def segment_shape(self) -> tuple[int, int] | None:
        """(rows, columns) of one strip or tile; ``None`` when memory-mapped."""
        return None if self.mapped else (self._seg_h, self._seg_w)

    def _open_map(self) -> None:
        page = self._page
        offset = int(page.dataoffsets[0])
        nbytes = self._planes * self._height * self._width * self._contig
        nbytes *= self._file_dtype.itemsize
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        fh = self._tif.filehandle
        self._mmap = mmap.mmap(
            fh.fileno(), offset - start + nbytes, access=mmap.ACCESS_READ, offset=start
        )
        self._map_start = start
        flat = np.frombuffer(
            self._mmap, self._file_dtype, count=nbytes // self._file_dtype.itemsize,
            offset=offset - start,
        )  # fmt: skip
        self._view = flat.reshape(self._planes, self._height, self._width, self._contig)

    def cache_bound(self, rows: int, cols: int) -> int:
        """The most bytes of decoded segments held while regions of ``rows`` × ``cols`` are
        read (0 when memory-mapped): twice the segments that cover one such region."""
        if self.mapped:
            return 0
        seg_rows = min(self._seg_rows, math.ceil((rows - 1) / self._seg_h) + 1)
        seg_cols = min(self._seg_cols, math.ceil((cols - 1) / self._seg_w) + 1)
        segment = self._seg_h * self._seg_w * self._contig * self._file_dtype.itemsize
        return max(MIN_CACHE_BYTES, 2 * self._planes * seg_rows * seg_cols * segment)

    def close(self) -> None:
        with self._lock:
            self._cache.clear()
            self._cache_bytes = 0
            self._view = None
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            self._tif.close()

    def __enter__(self) -> TiffSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------- reading

    def __getitem__(self, key: tuple[slice, slice]) -> np.ndarray:
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("a TiffSource takes two slices: source[y0:y1, x0:x1]")
        rows, cols = key
        if not isinstance(rows, slice) or not isinstance(cols, slice):
            raise TypeError("a TiffSource takes two slices: source[y0:y1, x0:x1]")
        y0, y1, ys = rows.indices(self._height)
        x0, x1, xs = cols.indices(self._width)
        if ys != 1 or xs != 1:
            raise TypeError("a TiffSource takes slices with a step of 1")
        y1, x1 = max(y0, y1), max(x0, x1)
        try:
            if self.mapped:
                raw = self._read_mapped(y0, y1, x0, x1)
            else:
                raw = self._read_segments(y0, y1, x0, x1)
        except MemoryError:
            raise ImageError(f"cannot read {self.path}: not enough memory to decode it") from None
        except Exception as err:  # decoders raise anything on a broken file
            reason = str(err) or type(err).__name__
            raise ImageError(
                f"cannot read {self.path}: truncated or corrupt TIFF file ({reason})"
            ) from None
        if len(self.shape) == 2:
            raw = raw[:, :, 0]
        return np.ascontiguousarray(raw, dtype=self.dtype)

    def _read_mapped(self, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        view = self._view
        assert view is not None and self._mmap is not None
        out = np.empty((y1 - y0, x1 - x0, self._planes * self._contig), self._file_dtype)
        for p in range(self._planes):
            out[:, :, p * self._contig : (p + 1) * self._contig] = view[p, y0:y1, x0:x1]
        self.bytes_read += out.nbytes
        if y1 > y0 and x1 > x0 and hasattr(self._mmap, "madvise"):
            # The pages just copied are let go (they stay in the page cache): without this, a
            # memory map read from end to end counts the whole file in the resident set.
            row = self._width * self._contig * self._file_dtype.itemsize
            base = int(self._page.dataoffsets[0]) - self._map_start
            for p in range(self._planes):
                first = base + (p * self._height + y0) * row
                last = base + (p * self._height + y1) * row
                first -= first % mmap.PAGESIZE
                with contextlib.suppress(OSError, ValueError):
                    self._mmap.madvise(mmap.MADV_DONTNEED, first, last - first)
        return out

    def _segment(self, index: int) -> tuple[np.ndarray | None, tuple[int, ...], tuple[int, ...]]:
        """Decode one strip or tile (under the lock): (pixels or None, where, shape)."""
        page = self._page
        offset, count = int(page.dataoffsets[index]), int(page.databytecounts[index])
        data = None
        if offset and count:
            fh = self._tif.filehandle
            fh.seek(offset)
            data = fh.read(count)
            self.bytes_read += len(data)
        pixels, where, shape = self._decode(
            data, index, jpegtables=page.jpegtables, jpegheader=page.jpegheader, _fullsize=False
        )
        self.decodes[index] = self.decodes.get(index, 0) + 1
        if pixels is not None:
            self.bytes_decoded += pixels.nbytes
        return pixels, where, shape

    def _read_segments(self, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        out = np.empty((y1 - y0, x1 - x0, self._planes * self._contig), self._file_dtype)
        if y1 <= y0 or x1 <= x0:
            return out
        r0, r1 = y0 // self._seg_h, (y1 - 1) // self._seg_h + 1
        c0, c1 = x0 // self._seg_w, (x1 - 1) // self._seg_w + 1
        per_plane = self._seg_rows * self._seg_cols
        wanted = [
            p * per_plane + r * self._seg_cols + c
            for p in range(self._planes)
            for r in range(r0, r1)
            for c in range(c0, c1)
        ]
        segment = self._seg_h * self._seg_w * self._contig * self._file_dtype.itemsize
        with self._lock:
            self._capacity = max(self._capacity, 2 * len(wanted) * segment)
            for index in wanted:
                entry = self._cache.get(index)
                if entry is None and index not in self._cache:
                    pixels, where, shape = self._segment(index)
                    entry = (pixels, where, shape)  # type: ignore[assignment]
                    self._cache[index] = entry  # type: ignore[assignment]
                    self._cache_bytes += 0 if pixels is None else pixels.nbytes
                else:
                    self._cache.move_to_end(index)
                pixels, (s, _d, h, w, _c), shape = entry  # type: ignore[misc]
                self._place(out, pixels, s, h, w, shape, y0, y1, x0, x1)
                while self._cache_bytes > self._capacity and len(self._cache) > 1:
                    _, (old, _, _) = self._cache.popitem(last=False)  # type: ignore[misc]
                    self._cache_bytes -= 0 if old is None else old.nbytes
        return out

    def _place(
        self,
        out: np.ndarray,
        pixels: np.ndarray | None,
        s: int,
        h: int,
        w: int,
        shape: tuple[int, ...],
        y0: int,
        y1: int,
        x0: int,
        x1: int,
    ) -> None:
        """Copy the part of one decoded segment at rows h.., columns w.. of plane s that falls
        in the region [y0, y1) × [x0, x1) into ``out`` (cropped to the image, as tifffile's
        own asarray crops)."""
        seg_h = min(int(shape[1]), self._height - h)
        seg_w = min(int(shape[2]), self._width - w)
        ty0, ty1 = max(y0, h), min(y1, h + seg_h)
        tx0, tx1 = max(x0, w), min(x1, w + seg_w)
        if ty1 <= ty0 or tx1 <= tx0:
            return
        channels = slice(s * self._contig, (s + 1) * self._contig)
        target = out[ty0 - y0 : ty1 - y0, tx0 - x0 : tx1 - x0, channels]
        if pixels is None:
            target[...] = self._page.nodata
        else:
            target[...] = pixels[0, ty0 - h : ty1 - h, tx0 - w : tx1 - w]


def _metadata(page: Any) -> TiffMetadata:
    tags = page.tags
    extratags = []
    for tag in tags:
        code = int(tag.code)
        if code in _NOT_CARRIED or (code >= 32768 and code not in _CARRIED_PRIVATE):
            continue
        if int(tag.dtype) not in _CARRIED_TYPES:
            continue
        if int(tag.dtype) in (3, 4) and tag.count != 1:
            continue
        value = tag.value
        if int(tag.dtype) == 2 and not isinstance(value, str):
            continue
        if int(tag.dtype) in (3, 4) and not isinstance(value, int):
            value = int(value)  # an enum (Orientation.TOPLEFT) as the number it is
        extratags.append((code, int(tag.dtype), int(tag.count), value, True))
    resolution = None
    if 282 in tags and 283 in tags:
        resolution = (tags[282].value, tags[283].value)
    unit = int(tags[296].value) if 296 in tags else None
    software = tags[305].value if 305 in tags and isinstance(tags[305].value, str) else None
    return TiffMetadata(page.iccprofile, resolution, unit, software, tuple(extratags))


def open_tiff_source(path: str | os.PathLike[str]) -> TiffSource | None:
    """A :class:`TiffSource` for ``path``, or ``None`` when it is not a TIFF this reader takes
    as the whole-image reader would (then that one reads it, or says why not).

    Raises:
        OSError, tifffile.TiffFileError: the file cannot be opened or parsed.
    """
    import tifffile

    tif = tifffile.TiffFile(os.fspath(path))
    try:
        source = _source_of(tif, tifffile)
    except BaseException:
        tif.close()
        raise
    if source is None:
        tif.close()
    else:
        source.path = os.fspath(path)  # as the user wrote it, for messages
    return source


def _source_of(tif: Any, tifffile: Any) -> TiffSource | None:
    from blurapp.io.codecs.tiff import tiff_frames, tifffile_can_decode

    if tiff_frames(tif) != 1:
        return None
    page = tif.pages.first
    if not isinstance(page, tifffile.TiffPage) or not tifffile_can_decode(page):
        return None
    if _ORIENTATION_TAG in page.tags and int(page.tags[_ORIENTATION_TAG].value) != 1:
        return None  # the whole-image reader turns the pixels upright
    if page._dtype is None or len(page.dataoffsets) == 0 or page.is_subifd:
        return None
    planes, depth, height, width, contig = (int(v) for v in page.shaped)
    if depth != 1 or height == 0 or width == 0 or page.imagedepth != 1:
        return None
    if planes > 1 and contig > 1:
        return None
    channels = planes * contig
    if not 1 <= channels <= MAX_CHANNELS:
        return None
    dtype = np.dtype(page.dtype).newbyteorder("=")
    if dtype == np.float16:
        dtype = np.dtype(np.float32)
    if dtype not in SUPPORTED_DTYPES:
        return None
    if not page.is_final:
        if page.is_tiled:
            seg_h, seg_w = int(page.tilelength), int(page.tilewidth)
        else:
            seg_h, seg_w = min(int(page.rowsperstrip), height), width
        if seg_h * seg_w * contig * dtype.itemsize > MAX_SEGMENT_BYTES:
            return None
        if len(page.dataoffsets) != planes * math.ceil(height / seg_h) * math.ceil(width / seg_w):
            return None
    shape = (height, width) if channels == 1 else (height, width, channels)
    return TiffSource(tif, page, shape, dtype, _metadata(page))


# ------------------------------------------------------------------------------------ writing


class TiffSink(BandQueue):
    """The sink of :func:`tiff_sink`: call it with ``(y0, y1, x0, x1)`` and the pixels of each
    window, in the order of a tile grid (row by row, each row left to right, windows of one
    row sharing ``y0`` and ``y1``).

    The rows are held in arrays of one row of TIFF tiles each (256 rows of the image): those of
    the row of windows being filled, and those handed to the encoder and not yet encoded (at
    most one more band; each is let go as soon as it is encoded). ``peak_rows`` is the most
    rows held at once, for tests."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, band_rows: int) -> None:
        backlog = max(2, math.ceil(band_rows / TIFF_TILE) + 1)  # rows of tiles: about one band
        super().__init__(shape, dtype, backlog, "TIFF")
        self._chunks: dict[int, np.ndarray] = {}  # row of tiles k → image rows 256k..
        self._next = 0  # the first row not yet handed to the encoder

    def _chunk(self, k: int) -> np.ndarray:
        chunk = self._chunks.get(k)
        if chunk is None:
            rows = min(TIFF_TILE, self._height - k * TIFF_TILE)
            chunk = np.empty((rows, self._width, self._channels), self.dtype)
            self._chunks[k] = chunk
            self._count(rows)
        return chunk

    def __call__(self, window: tuple[int, int, int, int], pixels: np.ndarray) -> None:
        y0, y1, x0, x1 = window
        self._accept(window)
        block = pixels if pixels.ndim == 3 else pixels[:, :, np.newaxis]
        for k in range(y0 // TIFF_TILE, (y1 - 1) // TIFF_TILE + 1):
            top, bottom = max(y0, k * TIFF_TILE), min(y1, (k + 1) * TIFF_TILE)
            chunk = self._chunk(k)
            chunk[top - k * TIFF_TILE : bottom - k * TIFF_TILE, x0:x1] = block[
                top - y0 : bottom - y0
            ]
        self._filled = x1
        if x1 < self._width:
            return
        self._filled = 0
        # The row of windows is complete: hand over every complete row of tiles; the one that
        # goes on below it waits for the next row of windows.
        for k in sorted(self._chunks):
            chunk = self._chunks[k]
            if k * TIFF_TILE + chunk.shape[0] > y1:
                break
            del self._chunks[k]
            self._put(chunk)
            self._next = k * TIFF_TILE + chunk.shape[0]

    def finish(self) -> None:
        """All windows were given: tell the encoder, which then completes the file."""
        self._finish(self._next)

    def tiles(self) -> Iterator[np.ndarray]:
        """What tifffile's writer pulls: the tiles, row by row (run on the writer's thread)."""
        for rows in self._received():
            for x0 in range(0, self._width, TIFF_TILE):
                if self.abort.is_set():
                    raise AbortedError
                yield rows[:, x0 : x0 + TIFF_TILE]


def tiff_write_options(
    channels: int, compress_level: int, metadata: TiffMetadata | None
) -> dict[str, Any]:
    """tifffile's ``write`` arguments for a streamed output: those of the whole-image TIFF
    writer, plus the input's resolution and descriptive tags."""
    from blurapp.io.codecs.tiff import tifffile_options

    icc = metadata.icc_profile if metadata is not None else None
    kwargs = tifffile_options(channels, compress_level, icc)
    if metadata is not None:
        if metadata.resolution is not None:
            kwargs["resolution"] = metadata.resolution
            if metadata.resolution_unit is not None:
                kwargs["resolutionunit"] = metadata.resolution_unit
        kwargs["software"] = metadata.software if metadata.software else False
        if metadata.extratags:
            kwargs["extratags"] = list(metadata.extratags)
    return kwargs


@contextlib.contextmanager
def tiff_sink(
    path: str | os.PathLike[str],
    shape: tuple[int, ...],
    dtype: np.dtype | type,
    *,
    band_rows: int,
    metadata: TiffMetadata | None = None,
    compress_level: int = 6,
    overwrite: bool = False,
) -> Iterator[TiffSink]:
    """Write the TIFF ``path`` from the windows given to the yielded :class:`TiffSink`.

    The file is complete and published (never over an existing file without ``overwrite``)
    when the block ends normally having given every window; on any exception (Ctrl-C
    included) the encoder stops and its temporary file is removed.

    Arguments:
        path: the destination.
        shape: H×W or H×W×C of the image.
        dtype: its pixel type.
        band_rows: the most rows of one row of windows (the grid's tile side), for the bound
            on what is queued for the encoder.
        metadata: ICC profile, resolution and tags to carry (from :class:`TiffSource`).
        compress_level: 0 stores the tiles, 1..9 deflates them at that level.
        overwrite: replace an existing ``path``.

    Raises:
        OutputError: the file exists (without ``overwrite``), or cannot be written.
    """
    import tifffile

    dtype = np.dtype(dtype)
    height, width = shape[0], shape[1]
    channels = 1 if len(shape) == 2 else shape[2]
    sink = TiffSink(tuple(shape), dtype, band_rows)
    kwargs = tiff_write_options(channels, compress_level, metadata)
    raw = height * width * channels * dtype.itemsize
    tile_row = math.ceil(width / TIFF_TILE) * TIFF_TILE * TIFF_TILE * channels * dtype.itemsize
    stored = (height, width) if channels == 1 else (height, width, channels)

    def write() -> None:
        try:
            with atomic_output(path, overwrite=overwrite) as fh:
                with tifffile.TiffWriter(fh, bigtiff=raw > BIGTIFF_BYTES) as tw:
                    tw.write(
                        sink.tiles(),
                        shape=stored,
                        dtype=dtype,
                        tile=(TIFF_TILE, TIFF_TILE),
                        buffersize=tile_row,  # tifffile pulls and encodes one row of tiles
                        **kwargs,
                    )
        except BaseException as err:
            sink.error = err
            sink.abort.set()

    thread = threading.Thread(target=write, name="blurapp-tiff-writer", daemon=True)
    try:
        # Started inside: a Ctrl-C while start() waits for the thread must still abort it (and
        # so remove the temporary it may have made).
        thread.start()
        yield sink
        sink.finish()
        while thread.is_alive():
            thread.join(0.1)
    except BaseException:
        sink.abort.set()
        while thread.is_alive():
            thread.join(0.1)
        raise
    if sink.error is not None:
        err = sink.error
        if isinstance(err, OutputError):
            raise err
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise OutputError(f"cannot write {os.fspath(path)}: {reason or type(err).__name__}")
