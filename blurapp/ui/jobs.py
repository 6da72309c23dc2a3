"""The work the window hands to its worker thread: the live filter, the strategies comparison and
the border-modes comparison. Plain functions of numpy data; the only Qt they touch is QImage,
which may be built off the GUI thread.

The live filter is two jobs (docs/PERFORMANCE.md, "Start-up and the live preview"), scheduled
by :mod:`blurapp.live` and sized by its measured rates:

1. :func:`first_picture`, on a lane of its own: what is visible, at the view's reduction or
   more (one picture pixel for ``f`` × ``f`` image pixels: the visible region of an
   area-downscaled copy filtered with the kernel resampled to that scale,
   :func:`reduced_kernel`, an approximation the window says: "preview at 25 %…"), so that it
   is computed within the first-picture budget; exact pixels where ``f`` is 1;
2. :func:`run_full`, on the GPU's lane once the first picture is done: the whole image at
   full resolution, in tiles of about :data:`TILE_BUDGET_MS` that a newer request stops
   between (and inside, between bands); this is what Save writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from PySide6.QtGui import QImage

from blurapp import engine, pipeline
from blurapp.core.borders import BORDER_MODES, Border, BorderMode
from blurapp.core.colour import ChannelCurves
from blurapp.core.errors import BlurappError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.strategies import compared_names, get_info
from blurapp.core.tiling import TileGrid, gather, halo_indices
from blurapp.core.timing import Timing
from blurapp.live import plan as live_plan
from blurapp.live.scaling import downscale, reduced_kernel
from blurapp.ui.convert import heat_rgb, to_qimage
from blurapp.ui.image_view import DisplayColour

Check = Callable[[], None]
Report = Callable[[object], None]
Window = tuple[int, int, int, int]  # y0, y1, x0, x1 in image pixels
COMPARED_STRATEGIES = compared_names()
CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")

#: The default region of the strategies comparison: the visible region, at most this many
#: pixels per side around its centre (the whole image on request).
COMPARE_SIDE = 1024


# ---------------------------------------------------------------------------------- costs

#: What sizes the live preview's work (first pictures, tiles): :mod:`blurapp.live.plan`.
RATES = live_plan.RATES
TILE_BUDGET_MS = live_plan.TILE_BUDGET_MS
WHOLE_BUDGET_MS = live_plan.WHOLE_BUDGET_MS


def _crop_filter(
    pixels: np.ndarray,
    spec: FilterSpec,
    window: Window,
    check: Check,
    *,
    max_tile_side: int | None = None,
    curves: ChannelCurves | None = None,
) -> pipeline.FilterResult:
    """``window`` of ``pixels`` filtered as the whole image would be there: the window plus
    its halo (the border applied only at true image edges), filtered, interior kept.
    ``curves``: ``--linear``'s transfer curves (the image's ICC profile's; ``None``: sRGB's)."""
    y0, y1, x0, x1 = window
    h, w = pixels.shape[:2]
    kernel = spec.effective_kernel
    if (y0, y1, x0, x1) == (0, h, 0, w):
        return pipeline.filter_pixels(
            pixels, spec, max_tile_side=max_tile_side, check=check, in_flight=1, curves=curves
        )
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    grid = TileGrid(h, w, max(y1 - y0, x1 - x0), (ar, rows - 1 - ar, ac, cols - 1 - ac))
    padded, (oy, ox) = gather(pixels, grid, window, spec.border)
    check()
    result = pipeline.filter_pixels(
        padded, spec, max_tile_side=max_tile_side, check=check, in_flight=1, curves=curves
    )
    image = np.ascontiguousarray(result.image[oy : oy + y1 - y0, ox : ox + x1 - x0])
    return pipeline.FilterResult(image, result.timing, result.strategy, result.reason)


# ---------------------------------------------------------------------------------- live


@dataclass(frozen=True)
class Viewport:
    """What the result view shows: ``window`` (y0, y1, x0, x1) of the image, at one screen
    pixel per ``factor`` × ``factor`` image pixels (1: full resolution or more)."""

    window: Window
    factor: int = 1

    @classmethod
    def whole(cls, shape: tuple[int, ...], factor: int = 1) -> Viewport:
        return cls((0, int(shape[0]), 0, int(shape[1])), max(1, int(factor)))

    def covers(self, shape: tuple[int, ...]) -> bool:
        return self.window == (0, int(shape[0]), 0, int(shape[1]))


@dataclass
class LivePreview:
    """A picture of part of the result, shown before the full result is ready."""

    spec: FilterSpec
    qimage: QImage
    window: Window  # the image pixels it covers
    factor: int  # image pixels per picture pixel (1: exact pixels)
    timing: Timing
    strategy: str
    image_key: Hashable | None = None
    request: int = 0  # the window's count of live requests: newer pictures replace older

    @property
    def exact(self) -> bool:
        return self.factor == 1


@dataclass
class LiveProgress:
    """The full-resolution run: ``done`` of ``total`` tiles."""

    spec: FilterSpec
    done: int
    total: int


@dataclass
class LiveResult:
    spec: FilterSpec  # what decided the pixels (also what "Export CLI" writes)
    image: np.ndarray  # in the input's dtype and shape, exactly what apply would write
    timing: Timing
    strategy: str  # the strategy that ran (auto resolved)
    reason: str
    display: QImage | None = None  # what the view shows: the result at 1 / display_factor
    display_factor: int = 1
    first_run: bool = False  # the timing includes compiling this run's GPU pipelines
    image_key: Hashable | None = None
    request: int = 0  # the window's count of live requests

    @cached_property
    def qimage(self) -> QImage:
        """The full-resolution picture (clipboard); the view shows :attr:`display`."""
        return to_qimage(self.image)

    def display_image(self) -> QImage:
        return self.display if self.display is not None else self.qimage


class LiveCache:
    """Held by the worker thread between jobs: downscaled copies of the image and the last full
    result (which a save of the same settings reuses instead of filtering again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._making = threading.Lock()  # one downscale at a time: a second caller reuses it
        self._small: dict[tuple[Hashable, int], np.ndarray] = {}
        self._result: LiveResult | None = None

    def small(self, image: np.ndarray, key: Hashable, factor: int) -> np.ndarray:
        """``image`` (named ``key``) downscaled by ``factor``, made once per key and factor
        (the first picture and the "before" picture of a 12 MP photo need the same one)."""
        with self._making:
            with self._lock:
                found = self._small.get((key, factor))
                # A larger reduction comes from a smaller one already made (the view's).
                made = [f for k, f in self._small if k == key and factor % f == 0 and f < factor]
                base = max(made, default=1)
                source = self._small[(key, base)] if base > 1 else image
            if found is None:
                found = downscale(source, factor // base)
                with self._lock:
                    self._small = {k: v for k, v in self._small.items() if k[0] == key}
                    self._small[(key, factor)] = found
        return found

    def store(self, result: LiveResult) -> None:
        with self._lock:
            self._result = result

    def result_for(self, key: Hashable, spec: FilterSpec, dtype: np.dtype) -> LiveResult | None:
        with self._lock:
            r = self._result
        if r is not None and r.image_key == key and r.spec == spec and r.image.dtype == dtype:
            return r
        return None


def preview_spec(spec: FilterSpec, factor: int, strategy: str | None = None) -> FilterSpec:
    """The spec of a reduced preview: the resampled kernel, on ``strategy`` (by default the
    planner's; ``cpu`` stays ``cpu``: the preview is approximate anyway)."""
    if strategy is None:
        strategy = "cpu" if get_info(spec.strategy).runs_on == "cpu" else "auto"
    kernel = reduced_kernel(spec.effective_kernel, factor)
    return spec.replace(kernel=kernel, convolve=False, strategy=strategy, tile=None)


def _warm_key(strategy: str, kernel: Kernel, spec: FilterSpec, dtype: np.dtype) -> tuple:
    """What a GPU run's compiled pipelines depend on, as the rates remember it."""
    return (strategy, kernel.shape, spec.border.mode, np.dtype(dtype).kind)


def first_picture(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    image_key: Hashable | None = None,
    viewport: Viewport | None = None,
    cache: LiveCache | None = None,
    *,
    gpu_idle: Callable[[], bool] = lambda: False,
    cores_shared: Callable[[], bool] = lambda: False,
    request: int = 0,
    curves: ChannelCurves | None = None,
    colour: DisplayColour | None = None,
) -> LivePreview:
    """A change's first picture: the visible region, reduced as the measured rates say so that
    it is computed within :data:`blurapp.live.plan.FIRST_BUDGET_MS` (never less reduced than
    the view shows it), on the reference (no compile, no wait for the GPU) unless the GPU is
    idle, has run this kind of kernel before and is estimated faster. At one image pixel per
    screen pixel the picture is exact. Where ``cores_shared()`` (a software adapter's work, a
    full result or a warm-up compile, runs on the same cores) the budget is halved: beside it
    the same picture took 2-3x as long (the 512² sample's exact first picture, 35 against
    100-110 ms on lavapipe), which the rates, learned from runs mostly made alone, miss."""
    viewport = viewport or Viewport.whole(image.shape)
    y0, y1, x0, x1 = viewport.window
    kernel = spec.effective_kernel
    channels = image.shape[2] if image.ndim == 3 else 1
    ready = gpu_idle() and RATES.is_warm(_warm_key(spec.strategy, kernel, spec, image.dtype))
    budget = live_plan.FIRST_BUDGET_MS / (2 if cores_shared() else 1)
    plan = RATES.first_picture(
        (y1 - y0, x1 - x0), channels, kernel, spec.strategy, viewport.factor, gpu_ready=ready,
        budget_ms=budget,
    )  # fmt: skip
    factor = plan.factor
    check()
    if factor >= 2:
        small = cache.small(image, image_key, factor) if cache else downscale(image, factor)
        sh, sw = small.shape[:2]
        swin = (y0 // factor, min(sh, -(-y1 // factor)), x0 // factor, min(sw, -(-x1 // factor)))
        pspec = preview_spec(spec, factor, plan.strategy)
    else:
        small, swin = image, viewport.window
        same = plan.strategy == spec.strategy
        pspec = spec.replace(strategy=plan.strategy, tile=spec.tile if same else None)
        if same and viewport.covers(image.shape):
            # The first picture is the full result: made once, kept for run_full.
            full = pipeline.filter_pixels(
                image, spec, input_key=image_key, check=check, curves=curves
            )
            live = _live_result(image, spec, full, viewport, image_key, request, colour)
            if cache is not None:
                cache.store(live)
            return LivePreview(
                spec, live.display_image(), viewport.window, 1, full.timing, full.strategy,
                image_key, request,
            )  # fmt: skip
    part = _crop_filter(small, pspec, swin, check, curves=curves)
    if not part.timing.first_run:
        sy0, sy1, sx0, sx1 = swin
        RATES.learn(
            part.strategy or plan.strategy, pspec.effective_kernel, (sy1 - sy0) * (sx1 - sx0),
            part.timing.wall_ms, channels,
        )  # fmt: skip
    window = (swin[0] * factor, swin[1] * factor, swin[2] * factor, swin[3] * factor)
    if factor == 1:
        window = viewport.window
    return LivePreview(
        spec, to_qimage(part.image, colour), window, factor, part.timing, part.strategy, image_key,
        request,
    )  # fmt: skip


def run_full(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    report: Report,
    image_key: Hashable | None = None,
    viewport: Viewport | None = None,
    cache: LiveCache | None = None,
    *,
    request: int = 0,
    curves: ChannelCurves | None = None,
    colour: DisplayColour | None = None,
) -> LiveResult:
    """The window's main result: the pixel pipeline (:func:`blurapp.pipeline.filter_pixels`),
    the same call ``blurapp apply`` makes, in tiles sized by the measured rates
    (:meth:`blurapp.live.plan.Rates.tile_side`); ``report`` receives :class:`LiveProgress` per
    tile, ``check`` is called between tiles and inside them (between bands)."""
    viewport = viewport or Viewport.whole(image.shape)
    found = cache.result_for(image_key, spec, image.dtype) if cache is not None else None
    if found is not None and found.display_factor == max(1, viewport.factor):
        return replace(found, request=request)  # the first picture was the full result
    side = RATES.tile_side(image.shape, spec)
    check()
    result = pipeline.filter_pixels(
        image,
        spec,
        input_key=image_key if side is None else None,
        max_tile_side=side,
        check=check,
        progress=lambda done, total: report(LiveProgress(spec, done, total)) if total > 1 else None,
        in_flight=1,  # a new setting's run must not queue behind a cancelled render's tiles
        curves=curves,
    )
    live = _live_result(image, spec, result, viewport, image_key, request, colour)
    if cache is not None:
        cache.store(live)
    return live


def _live_result(
    image: np.ndarray,
    spec: FilterSpec,
    result: pipeline.FilterResult,
    viewport: Viewport,
    image_key: Hashable | None,
    request: int,
    colour: DisplayColour | None = None,
) -> LiveResult:
    """A full result for the window, with its display copy (converted for the screen with
    ``colour``); the rates learn from its run."""
    h, w = image.shape[:2]
    factor = max(1, viewport.factor)
    first = result.timing.first_run  # the engine knows whether it compiled
    kernel = spec.effective_kernel
    channels = image.shape[2] if image.ndim == 3 else 1
    if live_plan.kind_of(result.strategy or spec.strategy) == "gpu":
        RATES.mark_warm(_warm_key(spec.strategy, kernel, spec, image.dtype))
    if not first and result.strategy:
        RATES.learn(result.strategy, kernel, h * w, result.timing.wall_ms, channels)
    display = downscale(result.image, factor) if factor >= 2 else result.image
    return LiveResult(
        spec,
        result.image,
        result.timing,
        result.strategy,
        result.reason,
        to_qimage(display, colour),
        factor,
        first,
        image_key,
        request,
    )


def run_live(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    report: Report,
    image_key: Hashable | None = None,
    viewport: Viewport | None = None,
    cache: LiveCache | None = None,
    *,
    curves: ChannelCurves | None = None,
) -> LiveResult:
    """:func:`first_picture` (reported, when the view does not show the whole image at full
    resolution), then :func:`run_full`, in one call: what the window does in two jobs (the
    first picture on its own lane, the full result on the GPU's), for scripts and tests.

    ``image_key`` names the image's pixels (the window's count of images shown): while it
    stays the same, the GPU keeps the image it already holds instead of receiving it again.
    """
    viewport = viewport or Viewport.whole(image.shape)
    if viewport.factor >= 2 or not viewport.covers(image.shape):
        report(first_picture(image, spec, check, image_key, viewport, cache, curves=curves))
    return run_full(image, spec, check, report, image_key, viewport, cache, curves=curves)


def display_of(result: LiveResult, factor: int, colour: DisplayColour | None = None) -> QImage:
    """The result's picture at 1 / ``factor`` (a worker's job when the zoom changes),
    converted for the screen with ``colour``."""
    return to_qimage(downscale(result.image, factor) if factor >= 2 else result.image, colour)


# ---------------------------------------------------------------------------------- compare


def _reference_floats(image: np.ndarray, spec: FilterSpec) -> pipeline.Prepared:
    """``image`` prepared as the pipeline prepares it (linear light, premultiplied alpha), in
    float64: what every strategy of a comparison receives."""
    return pipeline.prepare(image, spec.replace(strategy="cpu", tile=None))


def _shown(prepared: pipeline.Prepared, y: np.ndarray, source: np.ndarray | None = None) -> QImage:
    """Filtered floats back to the image's pixels by the pipeline's own last stage."""
    p = prepared
    # For a crop of the image, invisible pixels take their colour from the crop.
    src = p.source if source is None else source
    p = pipeline.Prepared(p.spec, src, p.x, p.storage, p.out_dtype, None, p.output, None, p.curves)
    filtered = pipeline.Filtered(p, y, False, Timing((), "wall", 0, 0.0), p.spec.strategy, "")
    return to_qimage(pipeline.finish(filtered))


def compare_window(shape: tuple[int, ...], visible: Window | None, side: int = COMPARE_SIDE):
    """The strategies comparison's region: the centre of ``visible`` (the whole image when
    ``None``), at most ``side`` pixels per side."""
    h, w = int(shape[0]), int(shape[1])
    y0, y1, x0, x1 = visible if visible is not None else (0, h, 0, w)
    rh, rw = min(side, y1 - y0), min(side, x1 - x0)
    cy, cx = y0 + (y1 - y0 - rh) // 2, x0 + (x1 - x0 - rw) // 2
    return cy, cy + rh, cx, cx + rw


@dataclass
class StrategyRun:
    """One pane of the strategies view: an image with its timing and error, or why not.

    ``timing`` is a warm run; ``first_timing``, when there is one, the first run of this
    strategy and kernel in the session, which includes compiling its GPU pipelines (on the
    first tile). ``reference`` marks the float64 reference the others are compared with.
    """

    strategy: str
    qimage: QImage | None = None
    timing: Timing | None = None
    max_error: float | None = None
    why_not: str | None = None
    tile: int | None = None
    first_timing: Timing | None = None
    reference: bool = False


@dataclass
class StrategiesResult:
    kernel: Kernel
    border: str
    runs: list[StrategyRun] = field(default_factory=list)
    window: Window | None = None  # the region compared (image pixels)
    whole: bool = True  # the region is the whole image
    done: float = 0.0  # strategies finished, fractions of the running one included
    total: int = len(COMPARED_STRATEGIES)


def _tiles(region: Window, side: int) -> list[Window]:
    y0, y1, x0, x1 = region
    return [
        (ty, min(ty + side, y1), tx, min(tx + side, x1))
        for ty in range(y0, y1, side)
        for tx in range(x0, x1, side)
    ]


def run_strategies(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    report: Report,
    image_key: Hashable | None = None,
    window: Window | None = None,
    *,
    curves: ChannelCurves | None = None,
) -> StrategiesResult:
    """Run every strategy on ``window`` of ``image`` (default: the whole image) with ``spec``'s
    other settings; compare each with the float64 reference on the same pixels.

    The window is filtered with its halo (the border applied only at true image edges), so its
    pixels are the whole image's there. Each strategy runs in tiles sized to take about
    :data:`TILE_BUDGET_MS` (``check`` between them); a strategy's first run in the session is
    made once more before timing, and reported apart (it includes compiling). ``image_key`` is
    accepted for the window's calls and unused (tiles are uploaded one by one).

    The maximum error is taken in normalised float units, before conversion to the file's type,
    so it shows the strategy's arithmetic and not the rounding to 8 bits.
    """
    del image_key
    h, w = image.shape[:2]
    region = window or (0, h, 0, w)
    ry0, ry1, rx0, rx1 = region
    kernel, border, tile = spec.effective_kernel, spec.border, spec.tile
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    halo = (ar, rows - 1 - ar, ac, cols - 1 - ac)
    cpu_spec = spec.replace(strategy="cpu", tile=None)
    out = StrategiesResult(kernel, border.name, window=region, whole=region == (0, h, 0, w))
    n = len(COMPARED_STRATEGIES)

    def run_one(name: str, fraction: Callable[[float], None]):
        """``name`` over the region in tiles: (floats, timing, first-run timing)."""
        side = RATES.tile_side_for((ry1 - ry0, rx1 - rx0), name, kernel)
        side = max(ry1 - ry0, rx1 - rx0) if side is None else max(1, side - max(rows, cols) + 1)
        grid = TileGrid(h, w, side, halo)
        tiles = _tiles(region, side)
        result: np.ndarray | None = None
        timings: list[Timing] = []
        first: Timing | None = None
        start = time.perf_counter()
        for i, t in enumerate(tiles):
            check()
            padded, (oy, ox) = gather(image, grid, t, border)
            x = pipeline.prepare(padded, cpu_spec, curves=curves).x
            args = (x, kernel, border, name, tile if name == "tiled" else None)
            y, timing, _ran, _why = engine.filter_float(*args)
            if timing.first_run and first is None:  # it compiled: time a warm run instead
                first = timing
                check()
                y, timing, _ran, _why = engine.filter_float(*args)
            ty0, ty1, tx0, tx1 = t
            part = np.asarray(y, np.float64)[oy : oy + ty1 - ty0, ox : ox + tx1 - tx0]
            if result is None:
                result = np.empty((ry1 - ry0, rx1 - rx0, part.shape[2]), np.float64)
            result[ty0 - ry0 : ty1 - ry0, tx0 - rx0 : tx1 - rx0] = part
            timings.append(timing)
            fraction((i + 1) / len(tiles))
        wall = (time.perf_counter() - start) * 1e3
        if first is not None:
            wall -= first.wall_ms
        return result, pipeline.sum_timings(timings, (ry1 - ry0) * (rx1 - rx0), wall), first

    last_report = [0.0]

    def progress(step: int) -> Callable[[float], None]:
        def fraction(f: float) -> None:
            out.done = step + f
            now = time.perf_counter()
            if f < 1 and now - last_report[0] > 0.2:
                last_report[0] = now
                report(out)

        return fraction

    reference, ref_timing, _ = run_one("cpu", lambda f: None)
    crop = image[ry0:ry1, rx0:rx1]
    prepared = pipeline.prepare(crop, cpu_spec, curves=curves)
    for step, name in enumerate(COMPARED_STRATEGIES):
        check()
        reason = engine.why_not(name, kernel)
        if reason:
            out.runs.append(StrategyRun(name, why_not=reason))
            out.done = step + 1
            report(out)
            continue
        if get_info(name).runs_on == "cpu":
            result, timing, first, is_ref = reference, ref_timing, None, True
        else:
            try:
                result, timing, first = run_one(name, progress(step))
            except BlurappError as err:
                out.runs.append(StrategyRun(name, why_not=str(err)))
                out.done = step + 1
                report(out)
                continue
            is_ref = False
        err = float(np.max(np.abs(result - reference))) if result.size else 0.0
        out.runs.append(
            StrategyRun(
                name,
                _shown(prepared, result),
                timing,
                err,
                tile=tile if name == "tiled" else None,
                first_timing=first,
                reference=is_ref,
            )
        )
        out.done = step + 1
        report(out)
    out.total = n
    return out


@dataclass
class BorderPane:
    mode: str
    qimage: QImage
    diff: QImage
    max_diff: float


@dataclass
class BordersResult:
    corner: str
    crop: tuple[int, int, int, int]  # x, y, width, height in the image
    reference_mode: str
    panes: list[BorderPane]
    strategy: str


@dataclass
class BordersProgress:
    done: int
    total: int


def corner_window(shape: tuple[int, ...], corner: str, size: int) -> tuple[int, int, int, int]:
    """``(y0, x0, h, w)`` of a ``size``-square crop at ``corner`` (smaller for tiny images)."""
    height, width = shape[:2]
    h, w = min(size, height), min(size, width)
    y0 = 0 if corner.startswith("top") else height - h
    x0 = 0 if corner.endswith("left") else width - w
    return y0, x0, h, w


def bordered_crop(
    x: np.ndarray, kernel: Kernel, border: Border, window: tuple[int, int, int, int]
) -> np.ndarray:
    """The crop ``window`` of ``x`` plus the halo the kernel reads, as ``border`` extends it.

    Filtering this array and keeping its interior gives exactly the full image's filtered crop,
    at the cost of the crop alone: wrap and reflect read the far side of the whole image, which
    cutting the crop out first would lose.
    """
    y0, x0, h, w = window
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    ridx, _ = halo_indices(y0, y0 + h, x.shape[0], ar, rows - 1 - ar, border, cut_constant=False)
    cidx, _ = halo_indices(x0, x0 + w, x.shape[1], ac, cols - 1 - ac, border, cut_constant=False)
    out = x[np.clip(ridx, 0, None)][:, np.clip(cidx, 0, None)]
    if border.mode is BorderMode.CONSTANT:
        outside = (ridx < 0)[:, None] | (cidx < 0)[None, :]
        out = out.copy()
        out[outside] = border.value
    return np.ascontiguousarray(out)


def run_borders(
    image: np.ndarray,
    spec: FilterSpec,
    corner: str,
    crop: int,
    reference_mode: str,
    check: Check,
    report: Report,
    *,
    curves: ChannelCurves | None = None,
) -> BordersResult:
    """Filter a corner crop with each of the five border modes and diff them against one,
    with ``spec``'s kernel, strategy and pixel settings (its own border is the one compared).
    ``report`` receives a :class:`BordersProgress` after each mode."""
    window = corner_window(image.shape, corner, crop)
    y0, x0, h, w = window
    kernel, strategy = spec.effective_kernel, spec.strategy
    rows, cols = kernel.shape
    # Only the crop and what its filter reads in any mode (the far side for wrap and reflect)
    # is prepared, not the whole image.
    cpu_spec = spec.replace(strategy="cpu", tile=None)
    ar, ac = kernel.anchor
    results: dict[str, np.ndarray] = {}
    ran = strategy
    prepared = None
    for i, mode in enumerate(BORDER_MODES):
        check()
        border = Border.parse(mode)
        stored = bordered_crop(image if image.ndim == 3 else image[:, :, None], kernel,
                               Border.parse("clamp") if border.mode is BorderMode.CONSTANT
                               else border, window)  # fmt: skip
        prepared_mode = pipeline.prepare(stored, cpu_spec, curves=curves)
        padded = prepared_mode.x
        if border.mode is BorderMode.CONSTANT:
            ridx, _ = halo_indices(y0, y0 + h, image.shape[0], ar, rows - 1 - ar, border,
                                   cut_constant=False)  # fmt: skip
            cidx, _ = halo_indices(x0, x0 + w, image.shape[1], ac, cols - 1 - ac, border,
                                   cut_constant=False)  # fmt: skip
            outside = (ridx < 0)[:, None] | (cidx < 0)[None, :]
            padded = padded.copy()
            padded[outside] = border.value
        if prepared is None:
            prepared = prepared_mode
        # Any border works here: the interior never reads outside the padded array.
        res, _timing, ran, _why = engine.filter_float(padded, kernel, "clamp", strategy)
        results[mode] = np.asarray(res, dtype=np.float64)[ar : ar + h, ac : ac + w]
        report(BordersProgress(i + 1, len(BORDER_MODES)))
    ref = results[reference_mode]
    diffs = {m: np.abs(r - ref).max(axis=2) for m, r in results.items()}
    vmax = max(float(d.max()) for d in diffs.values())
    source = image[y0 : y0 + h, x0 : x0 + w]
    assert prepared is not None
    panes = [
        BorderPane(
            mode,
            _shown(prepared, results[mode], source),
            to_qimage(heat_rgb(diffs[mode], vmax)),
            float(diffs[mode].max()),
        )
        for mode in BORDER_MODES
    ]
    return BordersResult(corner, (x0, y0, w, h), reference_mode, panes, ran)
