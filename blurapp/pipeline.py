"""The one pixel path: stored pixels in, stored pixels out, as a :class:`FilterSpec` says.

The GUI's preview and save, ``blurapp apply``, ``blurapp batch`` and :func:`filter_image` all
come through here, so the same settings give the same pixels everywhere. One image goes:

    stored pixels → normalised floats → (sRGB → linear) → premultiplied alpha
    → kernel (blurapp.engine) → un-premultiplied → (linear → sRGB) → range → output pixel type

in three stages that batch mode overlaps on threads (:func:`prepare` while decoding,
:func:`run` on the GPU thread, :func:`finish` while encoding) and everything else chains with
:func:`filter_pixels`. The fast paths are decided here too, once: 8-bit pixels with nothing to
do before the kernel go to the GPU as they are (an rgba8unorm texture holds exactly v / 255),
and an 8-bit output that only needs clamping and rounding comes back from an rgba8unorm texture.
An image larger than the device takes streams through :func:`filter_pixels` in tiles with
halos (:mod:`blurapp.core.tiling`), the same three stages per tile.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from blurapp.core.checks import checking
from blurapp.core.colour import ChannelCurves
from blurapp.core.errors import (
    ArrayError,
    ArrayTypeError,
    BlurappError,
    ImageError,
    UsageError,
    readable,
)
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import (
    SUPPORTED_DTYPES,
    beyond_float32,
    check_image,
    copy_pixels,
    finite_bounds,
    from_float,
    to_float,
)
from blurapp.core.strategies import AUTO
from blurapp.core.tiling import TileGrid, gather
from blurapp.core.timing import PassTiming, Timing

__all__ = [
    "FilterResult",
    "Filtered",
    "Prepared",
    "check_array",
    "check_memory",
    "filter_image",
    "filter_pixels",
    "filtering_bytes",
    "finish",
    "finish_floats",
    "prepare",
    "run",
    "stream_pixels",
    "sum_timings",
    "warm_up",
    "warm_up_steps",
    "working_bytes",
]

#: Below this filtered alpha a pixel is invisible: its colour is not divided out (it would be
#: noise over a tiny number) but taken from the input, so that identity round-trips exactly.
_ALPHA_EPS = 1e-7

Convert = Callable[[np.ndarray], np.ndarray]
#: Receives each finished tile: ``(y0, y1, x0, x1)`` and the tile's output pixels.
Sink = Callable[[tuple[int, int, int, int], np.ndarray], None]

#: Tiles of one image in flight on the GPU's side: one reading back, one executing, one
#: waiting with its upload laid out (on lavapipe, whose submissions execute in the submitting
#: thread, fewer leave the device idle between tiles). The live preview uses 1: measured with
#: benchmarks/live_preview.py, 3 made the last of a burst of sigma steps show 224-295 ms after
#: the last input instead of 104 ms (the new run queued behind the cancelled render's tiles),
#: for a full result no sooner (1.18-1.22 s either way).
TILES_IN_FLIGHT = 3

#: After a run in tiles, textures for tiles up to this many texels stay on the GPU (a live
#: preview that renders in small tiles reuses them); larger ones are released.
_KEEP_TILE_TEXELS = 1 << 20


@dataclass(frozen=True)
class FilterResult:
    """A filtered image, how long it took, which strategy ran and (for ``auto``) why."""

    image: np.ndarray
    timing: Timing
    strategy: str
    reason: str


@dataclass
class Prepared:
    """An image ready for the filter stage, and every decision about its way back."""

    spec: FilterSpec
    source: np.ndarray  # the stored pixels (invisible pixels keep their colour from here)
    x: np.ndarray  # what the filter receives: H×W×C floats, or uint8 for storage "rgba8"
    storage: str  # the GPU input texture's format
    out_dtype: np.dtype
    convert: Convert | None  # makes the output pixels straight from the filter's result
    output: str  # the GPU output texture's format
    key: Hashable | None  # names x's pixels for the GPU (skip the upload of an equal key)
    curves: ChannelCurves | None = None  # --linear's transfer curves (None: sRGB's)

    @property
    def squeeze(self) -> bool:
        return self.source.ndim == 2


@dataclass
class Filtered:
    """The filter stage's result: ``y`` is final pixels when ``final``, else floats."""

    prepared: Prepared
    y: np.ndarray
    final: bool
    timing: Timing
    strategy: str
    reason: str


def _has_alpha(channels: int) -> bool:
    return channels in (2, 4)


def _channels(pixels: np.ndarray) -> int:
    return 1 if pixels.ndim == 2 else int(pixels.shape[2])


def _premultiplies(spec: FilterSpec, channels: int) -> bool:
    return _has_alpha(channels) and spec.alpha == "premultiply"


def uploads_stored(dtype: np.dtype, channels: int, spec: FilterSpec) -> bool:
    """Whether stored pixels go to the GPU as they are: 8-bit pixels with nothing to do in
    float before the kernel (no linear light, no alpha to premultiply), a quarter of the bytes
    and no float copy."""
    return (
        np.dtype(dtype) == np.uint8
        and spec.runs_on_gpu
        and not spec.linear
        and not _premultiplies(spec, channels)
    )


def _quantiser(spec: FilterSpec, channels: int, dtype: np.dtype, squeeze: bool) -> Convert | None:
    """A function that makes the output pixels straight from the filter's float result (on the
    GPU: from the readback buffer, with no float copy), when :func:`finish` would do nothing
    else than quantise; otherwise ``None``."""
    if (
        dtype.kind != "u"
        or spec.range_mode != "clamp"
        or spec.linear
        or _premultiplies(spec, channels)
    ):
        return None

    def quantise(y: np.ndarray) -> np.ndarray:
        if y.dtype == np.uint8:  # already quantised (output="rgba8"); y may view the GPU buffer
            return np.array(y[:, :, 0]) if squeeze else copy_pixels(y)
        if y.dtype == np.float32:
            return _quantise_f32(y, dtype, squeeze)
        return from_float(y, dtype, range_mode="clamp", squeeze=squeeze)

    return quantise


def _quantise_f32(y: np.ndarray, dtype: np.dtype, squeeze: bool) -> np.ndarray:
    """from_float's clamp mode for a float32 GPU result, without its float64 copies.

    The values are the same except where the float32 product lands within float32 rounding of
    a .5 tie, which the GPU's own float32 accumulation leaves undecided anyway. NaN becomes 0,
    as in from_float.
    """
    top = np.float32(np.iinfo(dtype).max)
    out = np.empty(y.shape, dtype)
    rows = max(1, (1 << 20) // max(1, y.shape[1] * y.shape[2] * 4))  # cache-sized slabs
    tmp = np.empty((min(rows, y.shape[0]), *y.shape[1:]), np.float32)
    for r0 in range(0, y.shape[0], rows):
        r1 = min(r0 + rows, y.shape[0])
        t = tmp[: r1 - r0]
        # Clamped first: a value near float32's largest times 65535 would overflow to inf
        # with a RuntimeWarning (the same pixels: beyond 1 is the top either way).
        np.clip(y[r0:r1], 0.0, 1.0, out=t)
        np.multiply(t, top, out=t)
        np.nan_to_num(t, copy=False, nan=0.0)
        np.rint(t, out=t)
        out[r0:r1] = t
    return out[:, :, 0] if squeeze else out


def _float_dtype(spec: FilterSpec, pixels: np.ndarray | None = None) -> type:
    # The reference works in float64 (bit for bit what blurapp.core.reference.correlate gives);
    # the GPU in float32, so a float64 copy would only cost memory. Under auto, float64 pixels
    # beyond float32 stay float64: the engine then runs the reference (an explicit GPU
    # strategy refuses them in to_float).
    if spec.strategy == AUTO and pixels is not None and beyond_float32(pixels):
        return np.float64
    return np.float32 if spec.runs_on_gpu else np.float64


_SRGB_CURVES = ChannelCurves()


def _to_filter_floats(
    pixels: np.ndarray, spec: FilterSpec, curves: ChannelCurves | None = None
) -> np.ndarray:
    """Stored pixels → the float H×W×C image the kernel sees (linear by ``curves``, sRGB's by
    default; premultiplied as asked)."""
    x = to_float(pixels, _float_dtype(spec, pixels))
    channels = x.shape[2]
    colour = channels - 1 if _has_alpha(channels) else channels
    premultiply = _premultiplies(spec, channels)
    if not spec.linear and not premultiply:
        return x
    x = x.copy()  # to_float may return a view of the input
    if spec.linear:
        x[:, :, :colour] = (curves or _SRGB_CURVES).to_linear(x[:, :, :colour])
    if premultiply:
        x[:, :, :colour] *= x[:, :, colour:]
    return x


def working_bytes(
    width: int, height: int, channels: int, dtype: np.dtype, spec: FilterSpec, out_dtype: np.dtype
) -> int:
    """Host bytes one image holds at its worst moment on this path (batch's memory budget).

    Stored pixels in and out and the encoder's buffers (about one more copy), plus the float
    input unless the pixels are uploaded as they are, plus the float result and from_float's
    float64 work array unless the filter stage quantises.
    """
    itemsize = np.dtype(dtype).itemsize
    per_sample = 3 * itemsize
    if not uploads_stored(dtype, channels, spec):
        per_sample += np.dtype(_float_dtype(spec)).itemsize
    if _quantiser(spec, channels, np.dtype(out_dtype), False) is None:
        per_sample += 4 + 8
    return width * height * max(channels, 1) * per_sample


def filtering_bytes(
    shape: tuple[int, ...],
    dtype: np.dtype,
    spec: FilterSpec,
    out_dtype: np.dtype,
    grid: TileGrid,
    in_flight: int = TILES_IN_FLIGHT,
) -> int:
    """Host bytes :func:`filter_pixels` allocates for an image of ``shape`` already in memory:
    the output, and the float copies of the whole image (:func:`working_bytes` less the stored
    copies it counts) or of the tiles gathered, in flight and being finished."""
    height, width = int(shape[0]), int(shape[1])
    channels = int(shape[2]) if len(shape) == 3 else 1
    itemsize = np.dtype(dtype).itemsize

    def work(rows: int, cols: int) -> int:
        stored = 3 * rows * cols * channels * itemsize
        return working_bytes(cols, rows, channels, dtype, spec, out_dtype) - stored

    out = height * width * channels * np.dtype(out_dtype).itemsize
    if grid.whole:
        return out + work(height, width)
    side = grid.side
    tile = work(side, side) + side * side * channels * itemsize  # + the gathered stored tile
    return out + (in_flight + 2) * tile


def check_memory(need: int, shape: tuple[int, ...]) -> None:
    """Refuse, before allocating, a filter that needs more host memory than this process can
    still get (the command line's guard, for the Python API: numpy's MemoryError, or the
    system's OOM killer, otherwise).

    Raises:
        ArrayError: one line with the image's size, the bytes needed and those available.
    """
    from blurapp.memory import MEMORY_SHARE, available_memory

    available = available_memory()
    if available is None or need <= available * MEMORY_SHARE:
        return
    size = "×".join(readable(int(n)) for n in shape)
    raise ArrayError(
        f"cannot filter a {size} image: it needs about {need / 2**30:.1f} GiB of memory at "
        f"once, more than the {available * MEMORY_SHARE / 2**30:.1f} GiB this process can get; "
        "filter it in pieces (blurapp.dask.correlate on a chunked array)"
    )


def check_array(image: Any) -> None:
    """:func:`blurapp.core.numbers.check_image` for the Python API: what it refuses is an
    :class:`ArrayTypeError` (not an array, an unsupported pixel type: a ``TypeError``) or an
    :class:`ArrayError` (a shape or a mask: a ``ValueError``)."""
    if not isinstance(image, np.ndarray):
        raise ArrayTypeError(
            f"image must be a numpy array (H×W or H×W×C), not {type(image).__name__}"
        )
    try:
        check_image(image)
    except ImageError as err:
        unsupported = image.dtype not in SUPPORTED_DTYPES
        raise (ArrayTypeError if unsupported else ArrayError)(str(err)) from None


def prepare(
    pixels: np.ndarray,
    spec: FilterSpec,
    *,
    dtype: np.dtype | type | None = None,
    input_key: Hashable | None = None,
    curves: ChannelCurves | None = None,
) -> Prepared:
    """The first stage: check the pixels and make what the filter receives.

    Arguments:
        pixels: H×W or H×W×C (C ≤ 4; with 2 or 4 channels the last is straight alpha) of
            uint8, uint16, float32 or float64.
        spec: the filter.
        dtype: the output's pixel type (default: ``spec.dtype``, else the input's).
        input_key: names ``pixels`` (equal keys, equal pixels) so that the GPU skips uploading
            an image its input texture already holds (a live preview); ``None`` uploads.
        curves: the transfer curves ``--linear`` decodes and encodes with: the image's ICC
            profile's (:func:`blurapp.io.icc.profile_curves`); ``None``: sRGB's.
    """
    check_image(pixels)
    out_dtype = np.dtype(dtype) if dtype is not None else spec.output_dtype(pixels.dtype)
    channels = _channels(pixels)
    squeeze = pixels.ndim == 2
    convert = _quantiser(spec, channels, out_dtype, squeeze)
    output = "rgba8" if convert is not None and out_dtype == np.uint8 else "rgba32f"
    if uploads_stored(pixels.dtype, channels, spec):
        x, storage = (pixels if pixels.ndim == 3 else pixels[:, :, np.newaxis]), "rgba8"
    else:
        x, storage = _to_filter_floats(pixels, spec, curves), "rgba32f"
    key = None
    if input_key is not None:
        # What the filter receives depends on the preparation as well as on the pixels.
        decoded = (spec.linear, curves if spec.linear else None)
        key = (input_key, pixels.dtype.str, pixels.shape, storage, decoded, spec.alpha)
    return Prepared(spec, pixels, x, storage, out_dtype, convert, output, key, curves)


def run(prepared: Prepared) -> Filtered:
    """The second stage: run the kernel (GPU or reference) on what :func:`prepare` made."""
    from blurapp.engine import filter_float

    spec = prepared.spec
    start = time.perf_counter()
    y, timing, ran, reason = filter_float(
        prepared.x,
        spec.effective_kernel,
        spec.border,
        spec.strategy,
        spec.tile,
        storage=prepared.storage,
        convert=prepared.convert,
        output=prepared.output,
        input_key=prepared.key,
        tolerance=spec.tolerance,
    )
    wall_ms = (time.perf_counter() - start) * 1e3
    timing = replace(timing, wall_ms=wall_ms)
    return Filtered(prepared, y, prepared.convert is not None, timing, ran, reason)


def finish_floats(filtered: Filtered) -> np.ndarray:
    """Filtered floats un-premultiplied and sRGB-encoded as the spec says, before the range
    mapping and quantisation of :func:`finish`."""
    p = filtered.prepared
    spec, y = p.spec, filtered.y
    channels = y.shape[2]
    colour = channels - 1 if _has_alpha(channels) else channels
    if _premultiplies(spec, channels):
        y = np.array(y, dtype=np.float64)
        alpha = y[:, :, colour:]
        visible = np.abs(alpha) > _ALPHA_EPS
        np.divide(y[:, :, :colour], alpha, out=y[:, :, :colour], where=visible)
        hidden = ~visible[:, :, 0]
        if hidden.any():
            # The colour of an invisible pixel is undefined after premultiplication; the input's
            # own colour there keeps identity exact and transparent areas unchanged.
            src = to_float(p.source, np.float64)
            if spec.linear:
                src = src.copy()
                src[:, :, :colour] = (p.curves or _SRGB_CURVES).to_linear(src[:, :, :colour])
            y[hidden, :colour] = src[hidden, :colour]
    if spec.linear:
        y = np.array(y, copy=True)
        y[:, :, :colour] = (p.curves or _SRGB_CURVES).from_linear(y[:, :, :colour])
    return y


def finish(filtered: Filtered, *, bounds: tuple[float, float] | None = None) -> np.ndarray:
    """The last stage: filtered floats → the output's pixels (un-premultiplied, sRGB-encoded
    and range-mapped as the spec says); the pixels themselves when the filter made them.

    ``bounds``: the whole image's finite (min, max) for ``--range normalize`` when
    ``filtered`` is one tile of it.
    """
    p = filtered.prepared
    if filtered.final:
        out = filtered.y
    else:
        y = finish_floats(filtered)
        if y.dtype == np.float32 and p.out_dtype.kind == "u" and p.spec.range_mode == "clamp":
            out = _quantise_f32(y, p.out_dtype, p.squeeze)
        else:
            out = from_float(
                y, p.out_dtype, range_mode=p.spec.range_mode, squeeze=p.squeeze, bounds=bounds
            )
    return _keep_channels(out, p)


def _keep_channels(out: np.ndarray, p: Prepared) -> np.ndarray:
    """``out`` with the channels the spec does not filter (``--channels``) copied from the
    input, in the output's type (GIMP's channel toggles)."""
    spec, source = p.spec, p.source
    channels = _channels(source)
    kept = [c for c in range(channels) if not spec.filters_channel(c, channels)]
    if not kept:
        return out
    if source.dtype == p.out_dtype:
        stored = source
    else:  # the input's values in the output's type, as apply converts a file's pixels
        stored = from_float(to_float(source), p.out_dtype, squeeze=source.ndim == 2)
    if out.ndim == 2:
        return np.array(stored, copy=True)
    out = np.array(out, copy=True) if not out.flags.writeable else out
    out[..., kept] = stored[..., kept]
    return out


def filter_pixels(
    pixels: np.ndarray,
    spec: FilterSpec,
    *,
    dtype: np.dtype | type | None = None,
    input_key: Hashable | None = None,
    max_tile_side: int | None = None,
    check: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    in_flight: int = TILES_IN_FLIGHT,
    curves: ChannelCurves | None = None,
) -> FilterResult:
    """Filter one image's pixels as ``spec`` says: :func:`prepare`, :func:`run`, :func:`finish`.

    An image larger than the device takes (or than the memory budget, or than
    ``max_tile_side``) streams through in tiles with halos (:mod:`blurapp.core.tiling`); the
    result is the untiled one, bit for bit where the strategy's arithmetic per pixel does not
    depend on the image size (direct, tiled, separable, transpose and the reference).

    Arguments:
        pixels, spec, dtype, input_key, curves: see :func:`prepare`.
        max_tile_side: tiles of at most this many pixels per side, halo included.
        check: called between tiles (and between the bands of a long GPU pass); it raises to
            cancel the work (the exception propagates).
        progress: called with (tiles done, tiles in all) after each tile; on an image that
            runs whole, with (bands done, bands in all) of a long GPU pass, then (1, 1).
        in_flight: tiles on the GPU's side at once (:data:`TILES_IN_FLIGHT`, for throughput);
            1 for an interactive caller, whose cancel then waits for one tile only, and whose
            other runs do not queue behind several tiles for the GPU.

    Returns:
        A :class:`FilterResult` whose image has the input's shape and the output's pixel type
        (``dtype``, else ``spec.dtype``, else the input's); its timing's ``wall_ms`` covers the
        whole call and its passes sum the tiles'.
    """
    from blurapp.engine import tile_grid

    start = time.perf_counter()
    check_image(pixels)
    if isinstance(in_flight, bool) or not isinstance(in_flight, int) or in_flight < 1:
        raise UsageError(f"in_flight must be a whole number of tiles ≥ 1, not {in_flight!r}")
    grid = tile_grid(
        pixels.shape, spec.effective_kernel, spec.strategy, max_tile_side=max_tile_side
    )
    if grid.whole:
        with checking(check, progress):  # between the bands of a long GPU pass
            filtered = run(prepare(pixels, spec, dtype=dtype, input_key=input_key, curves=curves))
        image = finish(filtered)
        timings, ran, reason = [filtered.timing], filtered.strategy, filtered.reason
        if progress is not None:
            progress(1, 1)
    else:
        image, timings, ran, reason = _filter_tiles(
            pixels, spec, grid, dtype, check, progress, in_flight=in_flight, curves=curves
        )
    wall_ms = (time.perf_counter() - start) * 1e3
    pixel_count = int(pixels.shape[0] * pixels.shape[1])
    return FilterResult(image, sum_timings(timings, pixel_count, wall_ms), ran, reason)


def stream_pixels(
    source: Any,
    spec: FilterSpec,
    sink: Sink,
    *,
    dtype: np.dtype | type | None = None,
    max_tile_side: int | None = None,
    check: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    curves: ChannelCurves | None = None,
) -> FilterResult:
    """:func:`filter_pixels` for an image that need not be in memory: tiles are read from
    ``source`` and their results handed to ``sink``, so that only the tiles in flight are held
    (a large TIFF read through a memory map or tile by tile, written tile by tile).

    Arguments:
        source: an array-like with ``shape`` (H×W or H×W×C), ``dtype`` and 2-D slicing
            (``source[y0:y1, x0:x1]`` gives an array); only each tile and its halo are read.
        sink: called with ``(y0, y1, x0, x1)`` and the output pixels of that window, once per
            window, row by row (the grid's order), from one thread at a time.
        dtype, max_tile_side, check, progress, curves: see :func:`filter_pixels`.

    Returns:
        A :class:`FilterResult` whose ``image`` is ``None``: the pixels went to ``sink``.
    """
    from blurapp.engine import tile_grid

    start = time.perf_counter()
    check_image(np.asarray(source[:1, :1]))  # dtype and channels, without reading the image
    grid = tile_grid(
        source.shape, spec.effective_kernel, spec.strategy, max_tile_side=max_tile_side
    )
    _, timings, ran, reason = _filter_tiles(
        source, spec, grid, dtype, check, progress, sink, curves=curves
    )
    wall_ms = (time.perf_counter() - start) * 1e3
    pixel_count = int(source.shape[0] * source.shape[1])
    return FilterResult(None, sum_timings(timings, pixel_count, wall_ms), ran, reason)  # type: ignore[arg-type]


def sum_timings(timings: list[Timing], pixels: int, wall_ms: float) -> Timing:
    """One Timing for a run in tiles: each pass's time and bytes, and the compiles, summed over
    the tiles; ``pixels`` and ``wall_ms`` those of the whole run."""
    if len(timings) == 1:
        t = timings[0]
        return replace(t, wall_ms=wall_ms)
    ms: dict[str, float] = {}
    moved: dict[str, int] = {}
    for t in timings:
        for p in t.passes:
            ms[p.name] = ms.get(p.name, 0.0) + p.ms
            moved[p.name] = moved.get(p.name, 0) + p.bytes_modelled
    passes = tuple(PassTiming(name, ms[name], moved[name]) for name in ms)
    timer = "gpu" if timings and all(t.timer == "gpu" for t in timings) else "wall"
    compile_ms = sum(t.compile_ms for t in timings)
    first = any(t.first_run for t in timings)
    return Timing(passes, timer, pixels, wall_ms, compile_ms, first)


class _StoppedError(Exception):
    """A tile's run stopped because the tile loop is stopping (never seen by callers)."""


def _filter_tiles(
    pixels: Any,
    spec: FilterSpec,
    grid: TileGrid,
    dtype: np.dtype | type | None,
    check: Callable[[], None] | None,
    progress: Callable[[int, int], None] | None,
    sink: Sink | None = None,
    *,
    in_flight: int = TILES_IN_FLIGHT,
    curves: ChannelCurves | None = None,
) -> tuple[np.ndarray | None, list[Timing], str, str]:
    """Run the image tile by tile: the next tile is gathered and prepared, and the previous one
    finished, on worker threads while the current one runs (the GPU's own work is one queue).

    ``pixels`` is an array or an array-like that slices (see :func:`stream_pixels`). The
    finished tiles go into a new array, returned, or to ``sink`` in the grid's order (row by
    row), and then ``None`` is returned.

    ``--range normalize`` needs the whole image's range before any tile can be quantised: its
    tiles run twice, first for the range, then for the pixels.
    """
    out_dtype = np.dtype(dtype) if dtype is not None else spec.output_dtype(np.dtype(pixels.dtype))
    out = np.empty(pixels.shape, out_dtype) if sink is None else None
    windows = list(grid.windows())
    bounds: tuple[float, float] | None = None
    normalize = spec.range_mode == "normalize" and out_dtype.kind == "u"
    timings: list[Timing] = []
    ran = reason = ""
    from blurapp.engine import release_gpu_memory

    def prepared_tile(window: tuple[int, int, int, int]) -> tuple[Prepared, tuple[int, int]]:
        padded, origin = gather(pixels, grid, window, spec.border)
        return prepare(padded, spec, dtype=out_dtype, curves=curves), origin

    def interior(
        filtered: Filtered, window: tuple[int, int, int, int], origin: tuple[int, int]
    ) -> Filtered:
        y0, y1, x0, x1 = window
        oy, ox = origin
        p = filtered.prepared
        # Only the window's own pixels: its source (invisible pixels' colour, cut from the
        # gathered tile rather than read from the image again) and its result.
        source = p.source[oy : oy + y1 - y0, ox : ox + x1 - x0]
        kept = Prepared(
            p.spec, source, p.x, p.storage, p.out_dtype, p.convert, p.output, None, p.curves
        )
        y = filtered.y[oy : oy + y1 - y0, ox : ox + x1 - x0]
        return Filtered(kept, y, filtered.final, filtered.timing, filtered.strategy, "")

    def store(filtered: Filtered, window: tuple[int, int, int, int]) -> None:
        y0, y1, x0, x1 = window
        if out is None:
            sink(window, finish(filtered, bounds=bounds))
        else:
            out[y0:y1, x0:x1] = finish(filtered, bounds=bounds)

    def widen(filtered: Filtered, window: tuple[int, int, int, int]) -> None:
        nonlocal bounds
        found = finite_bounds(np.asarray(finish_floats(filtered)))
        if found is not None:
            lo, hi = (
                found if bounds is None else (min(bounds[0], found[0]), max(bounds[1], found[1]))
            )
            bounds = (lo, hi)

    stopping = threading.Event()

    def stopped() -> None:
        if stopping.is_set():
            raise _StoppedError
        if check is not None:
            check()  # the caller's cancel reaches a tile in progress, not only the next tile

    def run_tile(prepared: Prepared) -> Filtered:
        with checking(stopped):  # a long tile stops between its bands (or blocks of taps)
            return run(prepared)

    passes = [widen, store] if normalize else [store]
    total = len(windows) * len(passes)
    done = 0
    shape: tuple[int, ...] | None = None
    # Tiles in flight on GPU threads: while one tile's passes execute, the next one is planned
    # and laid out for upload (then waits for the GPU's lock) and the previous one is read
    # back (GpuFilter.run holds its lock only up to the submission).
    with (
        ThreadPoolExecutor(max_workers=2, thread_name_prefix="blurapp-tile") as pool,
        ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="blurapp-gpu") as gpu,
    ):
        running: deque[tuple[Future[Filtered], tuple[int, int, int, int], tuple[int, int]]]
        running = deque()
        consuming: Future[None] | None = None

        def hand_over(consume: Callable[[Filtered, tuple[int, int, int, int]], None]) -> None:
            """The oldest running tile's result to ``consume``, in the windows' order."""
            nonlocal consuming, done, ran, reason
            future, window, origin = running.popleft()
            filtered = future.result()
            timings.append(filtered.timing)
            ran, reason = filtered.strategy, filtered.reason
            if consuming is not None:
                consuming.result()
            consuming = pool.submit(consume, interior(filtered, window, origin), window)
            done += 1
            if progress is not None:
                progress(done, total)

        for consume in passes:
            timings.clear()
            upcoming = pool.submit(prepared_tile, windows[0])
            consuming = None
            try:
                for i, window in enumerate(windows):
                    if check is not None:
                        check()
                    prepared, origin = upcoming.result()
                    if i + 1 < len(windows):
                        upcoming = pool.submit(prepared_tile, windows[i + 1])
                    if shape is not None and prepared.x.shape != shape:
                        while running:
                            hand_over(consume)
                        release_gpu_memory()  # one tile size's textures at a time
                    shape = prepared.x.shape
                    running.append((gpu.submit(run_tile, prepared), window, origin))
                    del prepared
                    if len(running) == in_flight:
                        hand_over(consume)
                while running:
                    hand_over(consume)
                if consuming is not None:
                    consuming.result()
            except BaseException:
                stopping.set()
                upcoming.cancel()
                for future, _, _ in running:
                    future.cancel()
                running.clear()
                if consuming is not None:
                    consuming.cancel()
                raise
    if shape is not None and shape[0] * shape[1] > _KEEP_TILE_TEXELS:
        release_gpu_memory()  # large tiles' textures are of no use to the next image
    tiles = f"{len(windows)} tiles of up to {grid.side}×{grid.side}"
    reason = f"{reason}; {tiles}" if reason else tiles
    return out, timings, ran, reason


def warm_up(
    spec: FilterSpec,
    *,
    check: Callable[[], None] | None = None,
) -> int:
    """Run ``spec``'s border with a separable kernel of every 1-D size bucket on tiny 8-bit and
    float images, so that a live preview's first run of any separable kernel finds its
    pipelines compiled (and, on drivers that finish compiling at the first dispatch, such as
    lavapipe, run once). For an application's start-up, in the background; ``check`` is called
    between runs (raise to stop). Returns the runs made; nothing without a GPU adapter.
    """
    from blurapp.core.errors import GpuUnavailableError

    runs = 0
    for image, warm in _warm_up_runs(spec):
        if check is not None:
            check()
        try:
            filter_pixels(image, warm)
        except GpuUnavailableError:
            return runs
        runs += 1
    return runs


def _warm_up_runs(spec: FilterSpec) -> list[tuple[np.ndarray, FilterSpec]]:
    """:func:`warm_up`'s runs: (image, spec) per size bucket, 8-bit before float."""
    from blurapp.gpu.strategies import LOOP_BUCKET, TAP_BUCKETS

    images = (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 3), np.float32))
    out = []
    # The unrolled buckets, and the looped ones up to a radius of 128 (sigma 32).
    for taps in (*TAP_BUCKETS, LOOP_BUCKET * 2 + 1, LOOP_BUCKET * 4 + 1):
        kernel = Kernel.parse(f"gaussian:sigma={max(0.5, taps / 8):g},radius={taps // 2}")
        try:
            warm = spec.replace(kernel=kernel, strategy="separable", tile=None, convolve=False)
        except BlurappError:
            break
        out.extend((image, warm) for image in images)
    return out


def warm_up_steps(spec: FilterSpec) -> list[Callable[[Callable[[], None], object], None]]:
    """:func:`warm_up` as separate steps ``step(check, report)``, for a scheduler that runs
    background work between the user's (the window's): each step is one run, and stops
    (raising from ``check``) between its bands; without an adapter the steps do nothing."""
    from blurapp.core.errors import GpuUnavailableError

    def step_for(image: np.ndarray, warm: FilterSpec):
        def step(check: Callable[[], None], report: object) -> None:
            try:
                filter_pixels(image, warm, check=check)
            except GpuUnavailableError:
                pass

        return step

    return [step_for(image, warm) for image, warm in _warm_up_runs(spec)]


def filter_image(
    image: np.ndarray,
    kernel: Kernel | str | FilterSpec,
    *,
    input_key: Hashable | None = None,
    max_tile_side: int | None = None,
    **options: Any,
) -> FilterResult:
    """Filter an image with a kernel, exactly as ``blurapp apply`` and the GUI do.

    Arguments:
        image: H×W or H×W×C (C ≤ 4) array of uint8, uint16, float32 or float64; with 2 or 4
            channels the last one is (straight) alpha.
        kernel: a :class:`Kernel`, a spec string such as ``"gaussian:sigma=2"``, or a whole
            :class:`FilterSpec` (then no other filter options).
        input_key: a hashable that names ``image``'s pixels, for callers that filter the same
            image again and again (a live preview): the GPU does not receive the pixels of an
            equal key again. Equal keys must mean equal pixels; ``None`` uploads every time.
        max_tile_side: run in tiles of at most this many pixels per side, halo included
            (``--max-tile-side``; images beyond the device's limits are tiled anyway).
        options: the filter's settings, as :meth:`FilterSpec.create` takes them (and the
            command line spells them): ``border`` (``"mirror"``, ``"constant=0.5"``, ...),
            ``strategy`` (``auto`` by default), ``tile``, ``convolve``, ``range_mode``
            (``clamp``, ``abs``, ``offset``, ``normalize``), ``alpha`` (``premultiply``, the
            default, or ``straight``), ``linear``, ``dtype`` (the result's pixel type),
            ``tolerance`` (lowrank's), ``channels`` (e.g. ``"rgb"``).

    Returns:
        A :class:`FilterResult`.

    Example:
        >>> import numpy as np, blurapp
        >>> img = np.zeros((5, 5), np.uint8); img[2, 2] = 255
        >>> blurapp.filter_image(img, "box:3", strategy="cpu").image[1:4, 1:4].tolist()
        [[28, 28, 28], [28, 28, 28], [28, 28, 28]]
    """
    from blurapp.engine import tile_grid

    check_array(image)
    spec = FilterSpec.of(kernel, **options)
    grid = tile_grid(image.shape, spec.effective_kernel, spec.strategy, max_tile_side=max_tile_side)
    out_dtype = spec.output_dtype(image.dtype)
    check_memory(filtering_bytes(image.shape, image.dtype, spec, out_dtype, grid), image.shape)
    return filter_pixels(image, spec, input_key=input_key, max_tile_side=max_tile_side)
