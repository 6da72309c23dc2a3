"""Batch mode: files through the pixel pipeline, decoding, filtering and encoding overlapped.

:func:`run_pipeline` runs :mod:`blurapp.pipeline`'s three stages on threads (prepare while
decoding, run on the one GPU thread, finish while encoding) with a memory budget, so that only
a bounded number of images is in flight whatever the number of files. :func:`process_file` is
one file, for ``blurapp apply``.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from blurapp import pipeline
from blurapp.core.borders import BorderMode
from blurapp.core.colour import ChannelCurves
from blurapp.core.errors import BlurappError, ImageError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.tiling import TILE_TEXELS, TileGrid, plan_grid
from blurapp.engine import tile_grid
from blurapp.heap import trim_heap
from blurapp.io import (
    DEFAULT_MAX_PIXELS,
    ImageData,
    ImageInfo,
    check_pixel_limit,
    output_dtype,
    probe_image,
    read_image,
    with_frames,
    with_pixels,
    write_image,
)
from blurapp.io.bands import PngRowSource, PngWriter, open_png_source
from blurapp.io.codecs import get_codec
from blurapp.io.icc import profile_curves
from blurapp.io.tiffstream import TIFF_TILE, open_tiff_source, tiff_sink
from blurapp.memory import MEMORY_SHARE, available_memory

__all__ = [
    "BAND_TILE_SIDE",
    "BatchInterrupted",
    "EncodeSettings",
    "FileRecord",
    "Job",
    "MemoryBudget",
    "StreamPlan",
    "available_memory",
    "band_bytes",
    "band_side",
    "check_memory",
    "filter_in_place",
    "in_place_bytes",
    "in_place_side",
    "process_file",
    "run_pipeline",
    "start_png_stream",
    "stream_file",
    "stream_plan",
    "streaming_bytes",
]

#: Default bytes of images in flight in a batch (decoded, filtered or being encoded). One image
#: is always let through, however big. An 8-bit 4K RGB photo on the GPU path counts 75 MB (its
#: pixels in and out, and the encoder's buffers), so about three are in flight: enough to keep
#: decoding, the GPU and encoding busy on two cores. The GPU's own textures and readback buffer
#: (about 0.27 GB for a 4K 8-bit output, which reads back rgba8; 0.47 GB for float results; in
#: host memory on lavapipe) are made once per image size, not per image, and are not counted.
DEFAULT_MEMORY_BUDGET = 256 * 2**20

#: batch's PNGs stream a band of rows at a time (:func:`stream_plan`) in tiles of at most this
#: side, halo included (:func:`band_side` picks the side for each image size): a 4K photo's GPU
#: textures are then those of a tile (784²: about 2.5 MB each, 10 MB for the float
#: intermediate) instead of the whole image's 0.27 GB.
BAND_TILE_SIDE = 1024

#: The smallest band tile side :func:`band_side` considers (halo included).
BAND_TILE_MIN = 256

#: What one more tile costs, in texels of GPU work: the fixed part of a tile's run (planning,
#: recording and submitting its passes, mapping its readback; a few ms on lavapipe). Measured on
#: six 4K PNGs (docs/PERFORMANCE.md, "Batch memory"): 784² tiles (15 per image) took 1.3 s less
#: CPU than 512² tiles (40 per image, of 2.7 times the per-tile work and 14 % more texels).
TILE_COST_TEXELS = 1 << 17

#: :func:`band_side` keeps a streamed PNG's own bytes (:func:`band_bytes`) under this.
BAND_BYTES_MAX = 96 * 2**20

#: ``BLURAPP_BANDS=0`` turns band streaming off (every PNG decoded whole, as before it).
BANDS_ENV = "BLURAPP_BANDS"


@dataclass(frozen=True)
class EncodeSettings:
    """How outputs are written."""

    quality: int = 95
    compress_level: int = 6
    lossless: bool = False
    overwrite: bool = False
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_tile_side: int | None = None  # --max-tile-side: tiles of at most this side, halo included
    frame: int | None = None  # --frame N: that frame of an animation or pages only
    raw_linear: bool = False  # --raw-linear: camera raw developed to linear light

    def frames_read(self, info: ImageInfo) -> int:
        """How many of ``info``'s frames these settings decode."""
        return 1 if self.frame is not None else info.frames

    def read(self, source: Path) -> ImageData:
        """Decode ``source`` as these settings ask (pixel limit, frame, raw development)."""
        return read_image(
            source, max_pixels=self.max_pixels, frame=self.frame, raw_linear=self.raw_linear
        )


def check_memory(source: Path, info: ImageInfo, need: int) -> None:
    """Refuse, before decoding, an image whose filtering needs more memory than there is.

    The megapixel limit alone lets a 1 MB PNG declaring 249 MP RGBA through (about 19 GB on
    the float path); what counts is the bytes the pipeline will allocate at once
    (:func:`blurapp.pipeline.working_bytes`).

    Raises:
        ImageError: one line naming the file, the bytes needed and the bytes available.
    """
    available = available_memory()
    if available is None or need <= available * MEMORY_SHARE:
        return
    raise ImageError(
        f"cannot filter {source}: {info.width}×{info.height} with {info.channels} channel(s) "
        f"needs about {need / 2**30:.1f} GiB of memory at once, more than the "
        f"{available * MEMORY_SHARE / 2**30:.1f} GiB this machine can give it (a guard against "
        "decompression bombs)"
    )


def file_dtype(spec: FilterSpec, stored: np.dtype, fmt: str) -> np.dtype:
    """The output pixel type: the spec's (else the input's), as far as ``fmt`` holds it."""
    return output_dtype(spec.output_dtype(stored), fmt)


@dataclass(frozen=True)
class StreamPlan:
    """How a file streams (see :func:`stream_plan`): a large TIFF into a TIFF, or (batch) a PNG
    into a PNG a band of rows at a time.

    Attributes:
        grid: the tiles it runs in.
        max_tile_side: the tile side to ask :func:`blurapp.pipeline.stream_pixels` for
            (``--max-tile-side``, or tiles of the usual size when only memory is short).
        need: the bytes streaming holds at its worst moment (:func:`streaming_bytes`,
            :func:`band_bytes`).
        kind: ``"tiff"`` (:mod:`blurapp.io.tiffstream`) or ``"png"`` (:mod:`blurapp.io.bands`).
    """

    grid: TileGrid
    max_tile_side: int | None
    need: int
    kind: str = "tiff"

    @property
    def look_back(self) -> int:
        """Rows of one row of the grid's tiles, halo included: how far above the furthest row
        requested a band source must keep rows."""
        top, bottom, _, _ = self.grid.halo
        return min(self.grid.side, self.grid.height) + top + bottom


def streaming_bytes(
    grid: TileGrid,
    channels: int,
    dtype: np.dtype,
    spec: FilterSpec,
    out_dtype: np.dtype,
    cache: int = 0,
) -> int:
    """Host bytes a streamed file holds at its worst moment: the tiles in flight (one gathered
    and prepared, one on the GPU, one being finished: :func:`blurapp.pipeline.working_bytes`
    of a tile each), the GPU's textures and readback buffer of one tile (host memory on
    lavapipe: four RGBA float images), two bands of output rows for the TIFF writer (one being
    filled, one being encoded, plus the rows of 256×256 tiles queued between them), and the
    source's cache of decoded strips or tiles (``cache``)."""
    top, bottom, left, right = grid.halo
    rows = min(grid.side, grid.height) + top + bottom
    cols = min(grid.side, grid.width) + left + right
    tile = pipeline.working_bytes(cols, rows, channels, dtype, spec, out_dtype)
    gpu = rows * cols * 16 * 4
    band_rows = 2 * (min(grid.side, grid.height) + 2 * TIFF_TILE)
    band = band_rows * grid.width * max(channels, 1) * np.dtype(out_dtype).itemsize
    return 3 * tile + gpu + band + cache


def band_bytes(
    grid: TileGrid, channels: int, dtype: np.dtype, spec: FilterSpec, out_dtype: np.dtype
) -> int:
    """Host bytes a PNG streamed a band at a time holds at its worst moment: the tiles in flight
    and one tile's GPU resources (as :func:`streaming_bytes`), the source's rows (a row of tiles
    with its halo and a decoding step) and the writer's bands (one being filled, one queued, one
    being encoded)."""
    top, bottom, left, right = grid.halo
    rows = min(grid.side, grid.height) + top + bottom
    cols = min(grid.side, grid.width) + left + right
    tile = pipeline.working_bytes(cols, rows, channels, dtype, spec, out_dtype)
    gpu = rows * cols * 16 * 4
    row_in = grid.width * max(channels, 1) * np.dtype(dtype).itemsize
    row_out = grid.width * max(channels, 1) * np.dtype(out_dtype).itemsize
    return 3 * tile + gpu + (rows + 64) * row_in + 3 * min(grid.side, grid.height) * row_out


def band_side(
    shape: tuple[int, int],
    kernel_shape: tuple[int, int],
    channels: int,
    dtype: np.dtype,
    spec: FilterSpec,
    out_dtype: np.dtype,
    largest: int = BAND_TILE_SIDE,
) -> int:
    """The band tile side (halo included) a PNG of ``shape`` streams in: of the sides from
    :data:`BAND_TILE_MIN` to ``largest`` whose :func:`band_bytes` stay under
    :data:`BAND_BYTES_MAX`, the one that runs the fewest texels, each tile counting
    :data:`TILE_COST_TEXELS` more. Edge tiles run whole (:func:`blurapp.core.tiling.gather`), so
    a side whose tiles fit the image's width and height wastes the least: a 3840×2160 photo
    with a 17×17 kernel runs in 15 tiles of 784² (768² outputs each) rather than 40 of 512²."""
    height, width = shape
    top, bottom, left, right = halo = (
        kernel_shape[0] // 2,
        kernel_shape[0] - 1 - kernel_shape[0] // 2,
        kernel_shape[1] // 2,
        kernel_shape[1] - 1 - kernel_shape[1] // 2,
    )
    pad = max(top + bottom, left + right)
    floor = max(BAND_TILE_MIN, 4 * max(kernel_shape))  # halos a small share of a tile
    if largest <= floor:
        return max(largest, 4 * max(kernel_shape))
    best: tuple[float, int] | None = None
    for side in range(floor, largest + 1, 16):
        grid = TileGrid(height, width, side - pad, halo)
        if best is not None and band_bytes(grid, channels, dtype, spec, out_dtype) > BAND_BYTES_MAX:
            continue
        rows = min(side, height + top + bottom)
        cols = min(side, width + left + right)
        cost = grid.count * (rows * cols + TILE_COST_TEXELS)
        if best is None or cost < best[0]:
            best = (cost, side)
    assert best is not None
    return best[1]


def in_place_side(
    info: ImageInfo, fmt: str, spec: FilterSpec, encode: EncodeSettings
) -> int | None:
    """The band tile side an image decoded whole (a JPEG, a WebP...) is filtered in, into its
    own array (:class:`blurapp.batch.inplace.InPlaceBands`), or ``None`` (the whole-image
    path): for one frame on the GPU whose result has the stored pixel type, unless the border
    wraps (the first rows' halo is the last rows), ``--range normalize`` reads every tile twice,
    or the image runs in one tile or in tiles of ``--max-tile-side`` anyway."""
    out_dtype = file_dtype(spec, info.dtype, fmt)
    if (
        not spec.runs_on_gpu
        or encode.frames_read(info) != 1
        or out_dtype != np.dtype(info.dtype)
        or spec.border.mode is BorderMode.WRAP
        or spec.range_mode == "normalize"
        or encode.max_tile_side is not None
        or os.environ.get(BANDS_ENV) == "0"
    ):
        return None
    shape = (info.height, info.width)
    kernel = spec.effective_kernel
    try:
        if not tile_grid(shape, kernel, spec.strategy).whole:
            return None  # larger than the device takes: the tiled path
        side = band_side(shape, kernel.shape, info.channels, info.dtype, spec, out_dtype)
        if tile_grid(shape, kernel, spec.strategy, max_tile_side=side).whole:
            return None  # fits one band tile: nothing to gain
    except UsageError:  # the whole-image path says what is wrong
        return None
    return side


def in_place_bytes(info: ImageInfo, fmt: str, spec: FilterSpec, side: int) -> int:
    """Host bytes an image filtered in place in band tiles holds at its worst moment: the tiles
    and rows of results as :func:`band_bytes` counts them, the image itself and its encoder's
    copy."""
    out_dtype = file_dtype(spec, info.dtype, fmt)
    grid = plan_grid(info.height, info.width, spec.effective_kernel.shape, max_tile_side=side)
    stored = info.pixels * max(1, info.channels) * np.dtype(info.dtype).itemsize
    return band_bytes(grid, info.channels, info.dtype, spec, out_dtype) + 2 * stored


def _band_plan(
    source: Path, info: ImageInfo, fmt: str, spec: FilterSpec, encode: EncodeSettings
) -> StreamPlan | None:
    """A PNG into a PNG a band of rows at a time, or ``None`` (the whole-image path): for a
    PNG that :func:`blurapp.io.bands.open_png_source` reads, unless the border wraps (the first
    rows' halo would be the last rows) or the kernel is too large for band tiles."""
    if info.format != "png" or fmt != "png" or spec.border.mode is BorderMode.WRAP:
        return None
    if os.environ.get(BANDS_ENV) == "0":  # switched off (benchmarks/batch_vs_peers.py compares)
        return None
    if encode.frame is not None:  # --frame N: the frame reader says what there is
        return None
    out_dtype = file_dtype(spec, info.dtype, fmt)
    side = band_side(
        (info.height, info.width), spec.effective_kernel.shape, info.channels, info.dtype, spec,
        out_dtype, min(encode.max_tile_side or BAND_TILE_SIDE, BAND_TILE_SIDE),
    )  # fmt: skip
    try:
        grid = tile_grid(
            (info.height, info.width), spec.effective_kernel, spec.strategy, max_tile_side=side
        )
    except UsageError:  # the whole-image path says what is wrong
        return None
    if grid.whole:  # it fits one band tile: bands would hold as much as the whole image
        return None
    plan = StreamPlan(grid, side, 0, kind="png")
    try:
        src = open_png_source(source, look_back=plan.look_back)
    except Exception:  # the whole-image reader says what is wrong with the file
        return None
    if src is None:
        return None
    with src:
        need = band_bytes(grid, info.channels, src.dtype, spec, out_dtype)
    return StreamPlan(grid, side, need, kind="png")


def stream_plan(
    source: Path,
    info: ImageInfo,
    fmt: str,
    spec: FilterSpec,
    encode: EncodeSettings,
    *,
    bands: bool = False,
) -> StreamPlan | None:
    """Whether ``source`` streams into an output of ``fmt`` instead of being decoded whole.

    With ``bands`` (batch), a PNG into a PNG streams a band of rows at a time in tiles of
    :data:`BAND_TILE_SIDE` (:mod:`blurapp.io.bands`), so that a batch of photos holds a few
    bands of rows instead of whole images (:func:`band_bytes`).

    A TIFF into a TIFF streams, read a region at a time and written a row of tiles at a time
    (:mod:`blurapp.io.tiffstream`), when tifffile reads it region by region and it runs in
    tiles anyway (larger than the device or the whole-image budget takes, or
    ``--max-tile-side``), or when decoding it whole would not fit in memory (then in tiles of
    the usual size). ``None``: the whole-image path.
    """
    if bands:
        band = _band_plan(source, info, fmt, spec, encode)
        if band is not None:
            return band
    if info.format != "tiff" or fmt != "tiff":
        return None
    out_dtype = file_dtype(spec, info.dtype, fmt)
    shape = (info.height, info.width)
    grid = tile_grid(
        shape, spec.effective_kernel, spec.strategy, max_tile_side=encode.max_tile_side
    )
    side = encode.max_tile_side
    if grid.whole:
        whole = pipeline.working_bytes(
            info.width, info.height, info.channels, info.dtype, spec, out_dtype
        )
        available = available_memory()
        if available is None or whole <= available * MEMORY_SHARE:
            return None
        side = math.isqrt(TILE_TEXELS)  # decoding it whole would not fit: tiles of the usual size
        grid = tile_grid(shape, spec.effective_kernel, spec.strategy, max_tile_side=side)
        if grid.whole:
            return None
    try:
        src = open_tiff_source(source)
    except Exception:  # the whole-image reader says what is wrong with the file
        return None
    if src is None:
        return None
    with src:
        top, bottom, left, right = grid.halo
        rows = min(grid.side, grid.height) + top + bottom
        cols = min(grid.side, grid.width) + left + right
        cache = src.cache_bound(rows, cols)
        need = streaming_bytes(grid, info.channels, src.dtype, spec, out_dtype, cache)
    return StreamPlan(grid, side, need)


def stream_file(
    source: Path,
    output: Path,
    spec: FilterSpec,
    encode: EncodeSettings,
    plan: StreamPlan,
    *,
    check: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pipeline.FilterResult:
    """Filter the TIFF ``source`` into the TIFF ``output`` a tile at a time, as ``plan`` says:
    regions read from the file (:class:`blurapp.io.tiffstream.TiffSource`) through
    :func:`blurapp.pipeline.stream_pixels` into the tiled writer
    (:func:`blurapp.io.tiffstream.tiff_sink`), which publishes the file atomically when it is
    complete and removes its temporary on any error, Ctrl-C or SIGTERM included.

    Arguments:
        check: called between tiles; it raises to cancel (the output is then not written).
        progress: called with (tiles done, tiles in all).

    Returns:
        The filter's result; its ``image`` is ``None`` (the pixels went to the file).
    """
    if plan.kind == "png":
        return _stream_png(source, output, spec, encode, plan, check=check, progress=progress)
    try:
        src = open_tiff_source(source)
    except Exception as err:
        raise ImageError(f"cannot read {source}: {err}") from None
    if src is None:  # it was streamable a moment ago
        raise ImageError(f"cannot read {source}: the file changed while being read")
    out_dtype = file_dtype(spec, src.dtype, "tiff")
    with (
        src,
        tiff_sink(
            output,
            src.shape,
            out_dtype,
            band_rows=min(plan.grid.side, plan.grid.height),
            metadata=src.metadata,
            compress_level=encode.compress_level,
            overwrite=encode.overwrite,
        ) as sink,
    ):
        return pipeline.stream_pixels(
            src, spec, sink, dtype=out_dtype, max_tile_side=plan.max_tile_side, check=check,
            progress=progress, curves=linear_curves(spec, src.metadata.icc_profile),
        )  # fmt: skip


def _stream_png(
    source: Path,
    output: Path,
    spec: FilterSpec,
    encode: EncodeSettings,
    plan: StreamPlan,
    *,
    check: Callable[[], None] | None,
    progress: Callable[[int, int], None] | None,
) -> pipeline.FilterResult:
    """:func:`stream_file` for a PNG into a PNG: rows decoded as the tiles reach them
    (:class:`blurapp.io.bands.PngRowSource`), encoded a row of tiles at a time
    (:class:`blurapp.io.bands.PngWriter`); returns once the file is published."""
    result, writer = start_png_stream(
        source, output, spec, encode, plan, check=check, progress=progress
    )
    try:
        writer.wait()
    except BaseException:
        writer.abort()
        raise
    return result


def start_png_stream(
    source: Path,
    output: Path,
    spec: FilterSpec,
    encode: EncodeSettings,
    plan: StreamPlan,
    *,
    check: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    rows: PngRowSource | None = None,
) -> tuple[pipeline.FilterResult, PngWriter]:
    """Filter the PNG ``source`` into the PNG ``output`` a band of rows at a time (``plan``'s
    kind ``"png"``), returning as soon as every tile has run: the writer still deflates the
    last rows on its own thread, so that a batch's next file starts meanwhile. The caller must
    end with the writer's :meth:`~blurapp.io.bands.PngWriter.wait` (the file complete and
    published; it raises what went wrong) or, on any failure of its own,
    :meth:`~blurapp.io.bands.PngWriter.abort` (its temporary removed). On an error here the
    writer is aborted before the error propagates. ``rows``: ``source`` already opened with
    ``plan``'s look-back (:func:`open_png_source`; it may have decoded its first rows), closed
    here."""
    src = rows if rows is not None else open_png_source(source, look_back=plan.look_back)
    if src is None:  # it was streamable a moment ago
        raise ImageError(f"cannot read {source}: the file changed while being read")
    with src:
        out_dtype = file_dtype(spec, src.dtype, "png")
        writer = PngWriter(
            output, src.shape, out_dtype, icc_profile=src.icc_profile, exif=src.exif,
            compress_level=encode.compress_level, overwrite=encode.overwrite,
        )  # fmt: skip
        try:
            writer.start()
            result = pipeline.stream_pixels(
                src, spec, writer.sink, dtype=out_dtype, max_tile_side=plan.max_tile_side,
                check=check, progress=progress, curves=linear_curves(spec, src.icc_profile),
            )  # fmt: skip
            writer.close()
        except BaseException:
            writer.abort()
            raise
    return result, writer


def filter_in_place(
    image: ImageData,
    spec: FilterSpec,
    side: int,
    fmt: str,
    *,
    check: Callable[[], None] | None = None,
) -> pipeline.FilterResult:
    """Filter ``image``'s pixels (writeable, one frame) in band tiles of ``side``
    (:func:`in_place_side`) into their own array (:class:`blurapp.batch.inplace.InPlaceBands`):
    the same pixels as :func:`blurapp.pipeline.filter_pixels` gives, without the whole image's
    GPU textures or a second image-sized array. Returns the result, its ``image`` that array."""
    from blurapp.batch.inplace import InPlaceBands

    pixels = image.pixels
    dtype = file_dtype(spec, pixels.dtype, fmt)
    grid = tile_grid(pixels.shape, spec.effective_kernel, spec.strategy, max_tile_side=side)
    top, bottom, _, _ = grid.halo
    bands = InPlaceBands(pixels, min(grid.side, grid.height) + top + bottom)
    result = pipeline.stream_pixels(
        bands, spec, bands, dtype=dtype, max_tile_side=side, check=check,
        curves=linear_curves(spec, image.icc_profile),
    )  # fmt: skip
    return replace(result, image=bands.finish())


def linear_curves(spec: FilterSpec, icc_profile: bytes | None) -> ChannelCurves | None:
    """The transfer curves ``--linear`` decodes an image of this ICC profile with (its own:
    Adobe RGB's gamma, a camera's table; sRGB's without a profile), or ``None`` without
    ``--linear``."""
    return profile_curves(icc_profile) if spec.linear else None


def process_file(
    source: Path,
    output: Path,
    fmt: str,
    spec: FilterSpec,
    encode: EncodeSettings,
    *,
    progress: Callable[[int, int], None] | None = None,
    note: Callable[[str], None] | None = None,
) -> pipeline.FilterResult:
    """Read ``source``, filter it and write ``output`` (atomically) in ``fmt``; ``progress``
    is called with (pieces done, pieces in all) of the filter (tiles, or a long pass's bands),
    ``note`` with each one-line note of the decoder (an HDR gain map it leaves out).

    A large TIFF into a TIFF streams a tile at a time (:func:`stream_plan`,
    :func:`stream_file`): then the memory guard counts what streaming holds, and the result's
    ``image`` is ``None``.

    Returns:
        The filter's result (its pixels as written, or ``None`` when streamed).
    """
    info = probe_image(source)
    check_pixel_limit(source, info, encode.max_pixels, frames=encode.frames_read(info))
    plan = stream_plan(source, info, fmt, spec, encode)
    if plan is not None:
        check_memory(source, info, plan.need)
        return stream_file(source, output, spec, encode, plan, progress=progress)
    need = pipeline.working_bytes(
        info.width, info.height, info.channels, info.dtype, spec,
        file_dtype(spec, info.dtype, fmt),
    )  # fmt: skip
    check_memory(source, info, frames_bytes(need, info, encode))
    image = encode.read(source)
    for text in image.notes if note is not None else ():
        note(text)
    dtype = file_dtype(spec, image.pixels.dtype, fmt)
    if image.frame_count > 1:
        result, filtered = filter_frames(image, spec, dtype, encode, progress=progress)
    else:
        result = pipeline.filter_pixels(
            image.pixels, spec, dtype=dtype, max_tile_side=encode.max_tile_side, progress=progress,
            curves=linear_curves(spec, image.icc_profile),
        )  # fmt: skip
        # The input's pixels are not needed to encode (only its metadata): let them go first,
        # which lowers the peak memory of a large image by its own size.
        filtered = with_pixels(image, result.image)
    del image
    for text in get_codec(fmt).losses(filtered) if note is not None else ():
        note(f"{output.name}: {text}")
    _write(output, fmt, filtered, encode)
    return result


def frames_bytes(need: int, info: ImageInfo, encode: EncodeSettings) -> int:
    """The memory an image of ``info.frames`` frames holds while one of them is filtered (``need``
    bytes): every frame decoded and every filtered one kept until all are written."""
    frames = encode.frames_read(info)
    if frames <= 1:
        return need
    stored = info.pixels * max(1, info.channels) * np.dtype(info.dtype).itemsize
    return need + 2 * (frames - 1) * stored


def filter_frames(
    image: ImageData,
    spec: FilterSpec,
    dtype: np.dtype,
    encode: EncodeSettings,
    *,
    progress: Callable[[int, int], None] | None = None,
    check: Callable[[], None] | None = None,
) -> tuple[pipeline.FilterResult, ImageData]:
    """Every frame of an animation or multi-page ``image`` filtered with the same settings.

    Returns:
        The last frame's result (its timing summed over the frames) and ``image`` with the
        filtered frames, its durations, loop count, disposal and order kept.
    """
    frames = image.frames
    curves = linear_curves(spec, image.icc_profile)
    done: list[np.ndarray] = []
    results: list[pipeline.FilterResult] = []
    for i, frame in enumerate(frames):
        if check is not None:
            check()
        result = pipeline.filter_pixels(
            frame, spec, dtype=dtype, max_tile_side=encode.max_tile_side, curves=curves
        )
        done.append(result.image)
        results.append(replace(result, image=None))  # type: ignore[arg-type]
        if progress is not None:
            progress(i + 1, len(frames))
    timings = [r.timing for r in results]
    timing = replace(
        timings[-1],
        passes=tuple(p for t in timings for p in t.passes),
        pixels=sum(t.pixels for t in timings),
        wall_ms=sum(t.wall_ms for t in timings),
        compile_ms=sum(t.compile_ms for t in timings),
        first_run=any(t.first_run for t in timings),
    )
    return replace(results[-1], image=done[-1], timing=timing), with_frames(image, done)


def _write(output: Path, fmt: str, image: ImageData, encode: EncodeSettings) -> None:
    write_image(
        output,
        image,
        fmt=fmt,
        quality=encode.quality,
        compress_level=encode.compress_level,
        lossless=encode.lossless,
        overwrite=encode.overwrite,
    )


# ------------------------------------------------------------------------------ batch


@dataclass(frozen=True)
class Job:
    """One input and the output it becomes."""

    input: Path
    output: Path
    format: str


@dataclass
class FileRecord:
    """What happened to one job; the report's row."""

    input: str
    output: str
    status: str = "pending"  # ok, failed, skipped, cancelled
    width: int | None = None
    height: int | None = None
    channels: int | None = None
    dtype: str | None = None
    frames: int = 1  # of an animation or a multi-page file, every one filtered
    notes: tuple[str, ...] = ()  # what the decoder met and blurapp does not handle
    strategy: str | None = None
    reason: str | None = None
    timer: str | None = None
    gpu_ms: float | None = None
    filter_ms: float | None = None
    total_ms: float | None = None
    error: str | None = None
    started: float = field(default=0.0, repr=False)

    @property
    def pixels(self) -> int:
        """Every frame's pixels."""
        return (self.width or 0) * (self.height or 0) * self.frames


class MemoryBudget:
    """A counting semaphore in bytes: a stage waits until the images in flight leave room.

    One reservation is always granted when nothing else is held, so an image larger than the
    whole budget still goes through (alone).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._cond = threading.Condition()

    def acquire(self, n: int, stop: threading.Event) -> bool:
        """Reserve ``n`` bytes; returns False (reserving nothing) if ``stop`` is set meanwhile."""
        with self._cond:
            while self.used and self.used + n > self.limit:
                if stop.is_set():
                    return False
                self._cond.wait(0.1)
            if stop.is_set():
                return False
            self.used += n
            self.peak = max(self.peak, self.used)
            return True

    def release(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()


@dataclass
class _Item:
    job: Job
    record: FileRecord
    image: ImageData | None  # None for a streamed file (never decoded whole)
    reserved: int
    prepared: pipeline.Prepared | None = None  # whole images: the stages overlap on threads
    filtered: pipeline.Filtered | None = None
    tiled: bool = False  # larger than the device takes: the filter thread streams its tiles
    result: pipeline.FilterResult | None = None
    plan: StreamPlan | None = None  # a large TIFF: read, filtered and written on the GPU thread
    shape: tuple[int, int] = (0, 0)
    in_place: int | None = None  # decoded whole, filtered in band tiles of this side in place
    writer: PngWriter | None = None  # a streamed PNG whose last rows are still being deflated
    rows: PngRowSource | None = None  # a streamed PNG opened (its first rows decoded) ahead


class _CancelledError(Exception):
    """The batch was stopped while a streamed file was being filtered."""


_DONE = object()


class _Stage(threading.Thread):
    """A pipeline thread whose end is an event: the main thread waits on that, never on
    ``Thread.join``. On Python 3.11 a Ctrl-C (or SIGTERM) landing inside ``join`` can mark a
    thread that is still running as stopped (its state lock released by join's own clean-up),
    and every later ``join`` then returns at once: the batch said "interrupted" and exited
    while a streamed file's writer was still writing, leaving its temporary behind."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._work = target
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self._work()
        finally:
            self.done.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the end (an event's wait, safe to interrupt and to call again)."""
        if timeout is not None:
            self.done.wait(timeout)
            return
        while not self.done.wait(0.1):
            pass


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a batch; ``records`` says what was done before."""

    def __init__(self, records: list[FileRecord]) -> None:
        super().__init__("interrupted")
        self.records = records


def run_pipeline(
    jobs: Sequence[Job],
    spec: FilterSpec,
    encode: EncodeSettings,
    *,
    workers: int,
    on_done: Callable[[FileRecord], None] | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    stop: threading.Event | None = None,
) -> list[FileRecord]:
    """Run ``jobs`` with decoding, filtering and encoding overlapped.

    ``workers`` threads decode and as many encode; one thread filters (the GPU queue is one
    queue, and its device and pipelines are made once, by the engine, for the whole run). A
    failed file is recorded and the others go on. Ctrl-C (KeyboardInterrupt in the calling
    thread) or ``stop`` makes every stage stop at its next step; files being written are
    finished or removed, never left partial. Records of unfinished jobs are ``cancelled``.

    Returns:
        One :class:`FileRecord` per job, in the jobs' order.
    """
    stop = stop or threading.Event()
    budget = MemoryBudget(memory_budget)
    records = [FileRecord(str(j.input), str(j.output)) for j in jobs]
    # Bounded hand-overs as well as the byte budget: a stage that runs ahead waits.
    filter_q: queue.Queue[object] = queue.Queue(maxsize=max(1, workers))
    encode_q: queue.Queue[object] = queue.Queue(maxsize=max(1, workers))
    next_job = iter(range(len(jobs)))
    job_lock = threading.Lock()
    done_lock = threading.Lock()

    def finish_record(record: FileRecord, status: str, error: str | None = None) -> None:
        record.status = status
        record.error = error
        record.total_ms = (time.perf_counter() - record.started) * 1e3
        if on_done is not None:
            with done_lock:
                on_done(record)

    def decoder() -> None:
        while not stop.is_set():
            # The last file's pixels are not held while this one waits for the budget and is
            # decoded (a 4K JPEG is 25 MB: the locals would keep two in memory at once).
            image = item = None
            with job_lock:
                index = next(next_job, None)
            if index is None:
                return
            job, record = jobs[index], records[index]
            record.started = time.perf_counter()
            reserved = 0
            try:
                info = probe_image(job.input)
                record.width, record.height = info.width, info.height
                check_pixel_limit(
                    job.input, info, encode.max_pixels, frames=encode.frames_read(info)
                )
                out_dtype = file_dtype(spec, info.dtype, job.format)
                plan = stream_plan(job.input, info, job.format, spec, encode, bands=True)
                in_place = None
                if plan is None:
                    in_place = in_place_side(info, job.format, spec, encode)
                if plan is not None:
                    reserved = plan.need
                elif in_place is not None:
                    reserved = in_place_bytes(info, job.format, spec, in_place)
                else:
                    reserved = pipeline.working_bytes(
                        info.width, info.height, info.channels, info.dtype, spec, out_dtype
                    )
                reserved = frames_bytes(reserved, info, encode)
                check_memory(job.input, info, reserved)
                reserved = min(reserved, memory_budget)
                if not budget.acquire(reserved, stop):
                    return
                if plan is not None:  # read, filtered and written by the filter thread
                    record.channels = info.channels
                    stored = np.float32 if info.dtype == np.float16 else info.dtype
                    record.dtype = np.dtype(stored).name
                    item = _Item(job, record, None, reserved, plan=plan)
                    item.shape = (info.height, info.width)
                    if plan.kind == "png":
                        # Its first row of tiles decoded here, while the GPU runs the file
                        # before it: the filter thread starts it without waiting for rows.
                        item.rows = open_png_source(job.input, look_back=plan.look_back)
                        if item.rows is not None:
                            try:
                                item.rows.prefetch(plan.look_back)
                            except BaseException:
                                item.rows.close()
                                raise
                    filter_q.put(item)
                    continue
                image = encode.read(job.input)
                record.channels, record.dtype = image.channels, image.pixels.dtype.name
                record.frames, record.notes = image.frame_count, image.notes
                if in_place is not None and (
                    image.frame_count != 1
                    or image.pixels.dtype != file_dtype(spec, image.pixels.dtype, job.format)
                ):
                    in_place = None  # not as probed: the whole-image path
                if in_place is not None and not image.pixels.flags.writeable:
                    image = with_pixels(image, np.array(image.pixels))  # Pillow's are read-only
                item = _Item(job, record, image, reserved, in_place=in_place)
                item.shape = image.pixels.shape[:2]
                grid = tile_grid(
                    image.pixels.shape,
                    spec.effective_kernel,
                    spec.strategy,
                    max_tile_side=encode.max_tile_side,
                )
                # Frames are filtered one after another on the filter thread, as tiles are.
                item.tiled = not grid.whole or image.frame_count > 1
                if not item.tiled and in_place is None:
                    dtype = file_dtype(spec, image.pixels.dtype, job.format)
                    item.prepared = pipeline.prepare(
                        image.pixels, spec, dtype=dtype,
                        curves=linear_curves(spec, image.icc_profile),
                    )  # fmt: skip
                filter_q.put(item)
            except BlurappError as err:
                budget.release(reserved)
                finish_record(record, "failed", str(err))
            except Exception as err:  # a bug or an odd file must not stop the other files
                budget.release(reserved)
                finish_record(record, "failed", f"{type(err).__name__}: {err}")

    def warm_up() -> None:
        # Create the device and compile the pipelines on a tiny image while the first files
        # decode. The plan does not depend on the image size; a failure here (no adapter) is
        # reported by the files themselves.
        if not spec.runs_on_gpu:
            return
        try:
            # As an 8-bit RGB file would run: the same pipelines (input and output formats).
            pipeline.run(pipeline.prepare(np.zeros((8, 8, 3), np.uint8), spec))
        except Exception:  # each file reports the same error on its own
            return

    def filterer() -> None:
        # The compiles run beside the first file's start (a streamed PNG decodes its first
        # rows of tiles meanwhile); its first run waits for them on the engine's lock.
        warming = _Stage(warm_up, "blurapp-warm-up")
        warming.start()
        shape: tuple[int, int] | None = None
        while True:
            item = src = rows = None  # the last file is the encoder's now: not held waiting
            item = filter_q.get()
            if item is _DONE:
                warming.join()
                return
            assert isinstance(item, _Item)
            rows, item.rows = item.rows, None
            if stop.is_set():
                if rows is not None:
                    rows.close()
                budget.release(item.reserved)
                continue
            try:
                if shape is not None and item.shape != shape and spec.runs_on_gpu:
                    # The GPU keeps textures per image size; one size at a time bounds memory.
                    from blurapp.gpu.engine import get_filter

                    get_filter().clear()
                shape = item.shape
                if item.plan is not None:

                    def check() -> None:
                        if stop.is_set():
                            raise _CancelledError

                    if item.plan.kind == "png":
                        # The writer deflates the last rows while the next file starts here.
                        item.result, item.writer = start_png_stream(
                            item.job.input, item.job.output, spec, encode, item.plan,
                            check=check, rows=rows,
                        )  # fmt: skip
                        rows = None
                    else:
                        item.result = stream_file(
                            item.job.input, item.job.output, spec, encode, item.plan, check=check
                        )
                    encode_q.put(item)
                    continue
                assert item.image is not None
                src = item.image.pixels
                if item.image.frame_count > 1:
                    dtype = file_dtype(spec, src.dtype, item.job.format)

                    def stopped() -> None:
                        if stop.is_set():
                            raise _CancelledError

                    item.result, item.image = filter_frames(
                        item.image, spec, dtype, encode, check=stopped
                    )
                elif item.in_place is not None:

                    def cancelled() -> None:
                        if stop.is_set():
                            raise _CancelledError

                    item.result = filter_in_place(
                        item.image, spec, item.in_place, item.job.format, check=cancelled
                    )
                elif item.tiled:
                    dtype = file_dtype(spec, src.dtype, item.job.format)
                    item.result = pipeline.filter_pixels(
                        src, spec, dtype=dtype, max_tile_side=encode.max_tile_side,
                        curves=linear_curves(spec, item.image.icc_profile),
                    )  # fmt: skip
                else:
                    assert item.prepared is not None
                    item.filtered = pipeline.run(item.prepared)
                    item.prepared = None
                    item.filtered.prepared.x = None  # type: ignore[assignment]  # free the input
                encode_q.put(item)
            except _CancelledError:
                budget.release(item.reserved)  # recorded as cancelled; nothing was written
            except Exception as err:
                budget.release(item.reserved)
                msg = str(err) if isinstance(err, BlurappError) else f"{type(err).__name__}: {err}"
                finish_record(item.record, "failed", msg)
            finally:
                if rows is not None:  # opened ahead, never streamed
                    rows.close()

    def encoder() -> None:
        while True:
            item = done = pixels = None  # the last file written is let go before waiting
            item = encode_q.get()
            if item is _DONE:
                return
            assert isinstance(item, _Item)
            try:
                if item.writer is not None:  # streamed: the file completes on its writer's thread
                    writer, item.writer = item.writer, None
                    try:
                        writer.wait()
                    except BaseException:
                        writer.abort()
                        raise
                    del writer
                streamed = item.plan is not None  # already written by the filter thread
                if stop.is_set() and not streamed:
                    continue
                done = item.result  # a tiled image: filtered to its pixels on the GPU thread
                if done is None:
                    f = item.filtered
                    assert f is not None
                    done = pipeline.FilterResult(pipeline.finish(f), f.timing, f.strategy, f.reason)
                item.filtered = item.result = None
                if not streamed:
                    assert item.image is not None
                    if item.image.frame_count > 1:  # filter_frames put the filtered frames in
                        pixels = item.image
                    else:
                        pixels = with_pixels(item.image, done.image)
                    losses = get_codec(item.job.format).losses(pixels)
                    name = item.job.output.name
                    item.record.notes = (*item.record.notes, *(f"{name}: {t}" for t in losses))
                    _write(item.job.output, item.job.format, pixels, encode)
                timing = done.timing
                rec = item.record
                rec.strategy, rec.reason, rec.timer = done.strategy, done.reason, timing.timer
                rec.filter_ms = timing.total_ms
                rec.gpu_ms = timing.total_ms if timing.timer == "gpu" else None
                finish_record(rec, "ok")
            except Exception as err:
                msg = str(err) if isinstance(err, BlurappError) else f"{type(err).__name__}: {err}"
                finish_record(item.record, "failed", msg)
            finally:
                item.image = item.result = None
                trim_heap()  # what this file's threads freed, back before the next one's peak
                budget.release(item.reserved)

    decoders = [_Stage(decoder, f"blurapp-decode-{i}") for i in range(workers)]
    encoders = [_Stage(encoder, f"blurapp-encode-{i}") for i in range(workers)]
    gpu = _Stage(filterer, "blurapp-filter")
    for t in (*decoders, gpu, *encoders):
        t.start()

    def shut_down() -> None:
        for t in decoders:
            t.join()
        filter_q.put(_DONE)
        gpu.join()
        for _ in encoders:
            encode_q.put(_DONE)
        for t in encoders:
            t.join()

    try:
        # Join with a timeout so that the main thread stays responsive to Ctrl-C.
        while not all(t.done.is_set() for t in decoders):
            for t in decoders:
                t.done.wait(0.1)
        shut_down()
    except BaseException as err:
        stop.set()
        shut_down()
        for record in records:
            if record.status == "pending":
                record.status = "cancelled"
        if isinstance(err, KeyboardInterrupt):
            raise BatchInterrupted(records) from None
        raise
    for record in records:
        if record.status == "pending":  # stopped through ``stop`` without an interrupt
            record.status = "cancelled"
    return records
