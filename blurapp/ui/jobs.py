"""The work the window hands to its worker thread: the live filter, the strategies comparison and
the border-modes comparison. Plain functions of numpy data; the only Qt they touch is QImage,
which may be built off the GUI thread.

The live filter works viewport first (docs/PERFORMANCE.md, "Start-up and the live preview"):

1. when the view shows the image reduced (one screen pixel for ``f`` × ``f`` image pixels,
   ``f`` ≥ 2), a *preview* of what is visible: the visible region of an area-downscaled copy,
   filtered with the kernel resampled to that scale (:func:`reduced_kernel`). It is an
   approximation, and the window says so ("preview at 25 %…");
2. at 100 % zoom and above, the visible region at full resolution: exact pixels;
3. the whole image at full resolution, in tiles sized to take about :data:`TILE_BUDGET_MS`
   each, so that a superseded job stops between two tiles; this is what Save writes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from PySide6.QtGui import QImage

from blurapp import engine, pipeline
from blurapp.core.borders import BORDER_MODES, Border, BorderMode
from blurapp.core.errors import BlurappError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.strategies import compared_names, get_info
from blurapp.core.tiling import TileGrid, gather
from blurapp.core.timing import Timing
from blurapp.ui.convert import heat_rgb, to_qimage

Check = Callable[[], None]
Report = Callable[[object], None]
Window = tuple[int, int, int, int]  # y0, y1, x0, x1 in image pixels
COMPARED_STRATEGIES = compared_names()
CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")

#: What one tile of the live filter should take: a superseded job stops within about this.
TILE_BUDGET_MS = 80.0
#: A run estimated below this goes whole (keeping the GPU's cached upload of the image).
WHOLE_BUDGET_MS = 150.0
#: The default region of the strategies comparison: the visible region, at most this many
#: pixels per side around its centre (the whole image on request).
COMPARE_SIDE = 1024


# ---------------------------------------------------------------------------------- costs


def cost_units(strategy: str, kernel: Kernel) -> float:
    """The planner's time per output pixel of ``strategy`` for ``kernel``, in direct taps
    (:func:`blurapp.core.planner.cost`); ``auto`` is what the planner would run."""
    from blurapp.core import planner

    try:
        found = planner.cost(strategy, kernel, engine.gpu_limits())
    except BlurappError:
        found = math.inf
    rows, cols = kernel.shape
    return found if math.isfinite(found) else planner.DIRECT_FIXED + rows * cols


class Rates:
    """Nanoseconds per output pixel and cost unit, learned from warm runs (per strategy kind).

    It starts from lavapipe on a 2-core CPU (about 6 ns per direct tap and pixel; the float64
    reference about 3 ns) and follows what this machine measures, so a real GPU soon gets
    whole-image runs and lavapipe small tiles.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ns = {"gpu": 6.0, "cpu": 3.0}

    @staticmethod
    def kind(strategy: str) -> str:
        return "cpu" if get_info(strategy).runs_on == "cpu" else "gpu"

    def ns(self, strategy: str) -> float:
        with self._lock:
            return self._ns[self.kind(strategy)]

    def learn(self, strategy: str, kernel: Kernel, pixels: int, ms: float) -> None:
        if pixels < 4096 or ms <= 0:
            return  # too small to say anything beyond the fixed costs
        measured = ms * 1e6 / (pixels * cost_units(strategy, kernel))
        with self._lock:
            kind = self.kind(strategy)
            self._ns[kind] = 0.5 * self._ns[kind] + 0.5 * min(max(measured, 0.01), 1000.0)

    def estimate_ms(self, strategy: str, kernel: Kernel, pixels: int) -> float:
        return pixels * cost_units(strategy, kernel) * self.ns(strategy) / 1e6

    def tile_side(self, shape: tuple[int, ...], spec: FilterSpec) -> int | None:
        """``max_tile_side`` for :func:`blurapp.pipeline.filter_pixels` so that one tile takes
        about :data:`TILE_BUDGET_MS`; ``None`` when the whole image is that quick anyway."""
        return self.tile_side_for(shape, spec.strategy, spec.effective_kernel)

    def tile_side_for(self, shape: tuple[int, ...], strategy: str, kernel: Kernel) -> int | None:
        pixels = int(shape[0]) * int(shape[1])
        if self.estimate_ms(strategy, kernel, pixels) <= WHOLE_BUDGET_MS:
            return None
        per_pixel_ms = self.estimate_ms(strategy, kernel, 1)
        outputs = max(48, math.isqrt(int(TILE_BUDGET_MS / max(per_pixel_ms, 1e-12))))
        rows, cols = kernel.shape
        return outputs + max(rows, cols) - 1


RATES = Rates()


# ---------------------------------------------------------------------------------- scaling


def downscale(pixels: np.ndarray, factor: int) -> np.ndarray:
    """The mean of each ``factor`` × ``factor`` block (partial blocks at the right and bottom
    edges average what they hold), in ``pixels``' dtype (integers rounded)."""
    if factor <= 1:
        return pixels
    h, w = pixels.shape[:2]
    hh, ww = -(-h // factor), -(-w // factor)
    pad = ((0, hh * factor - h), (0, ww * factor - w)) + ((0, 0),) * (pixels.ndim - 2)
    x = np.pad(pixels, pad, mode="edge") if any(p[1] for p in pad) else pixels
    blocks = x.reshape(hh, factor, ww, factor, *pixels.shape[2:])
    if pixels.dtype.kind in "ui":
        total = blocks.sum(axis=(1, 3), dtype=np.uint64 if pixels.itemsize > 2 else np.uint32)
        n = factor * factor
        return ((total + n // 2) // n).astype(pixels.dtype)
    return blocks.mean(axis=(1, 3), dtype=np.float64).astype(pixels.dtype)


def _tent_matrix(length: int, anchor: int, factor: int, half: int) -> np.ndarray:
    """(2·half + 1) × length: tap ``i`` (offset i − anchor) spread between the two reduced
    offsets around (i − anchor) / factor, linearly."""
    m = np.zeros((2 * half + 1, length))
    for i in range(length):
        p = (i - anchor) / factor
        lo = math.floor(p)
        frac = p - lo
        m[lo + half, i] += 1.0 - frac
        if frac > 0:
            m[lo + 1 + half, i] += frac
    return m


def reduced_kernel(kernel: Kernel, factor: int) -> Kernel:
    """``kernel`` resampled to an image ``factor`` times smaller: each weight split linearly
    between the reduced offsets around its own offset / ``factor`` (the sum is kept, the anchor
    stays in the middle). Filtering the area-downscaled image with it approximates the
    downscaled result: a Gaussian of sigma s becomes about s / factor, a box of 21 about 5, and
    a derivative a derivative of a quarter of the strength at a quarter of the scale, which is
    what averaging the full-resolution result would show."""
    if factor <= 1:
        return kernel
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    hr = math.ceil(max(ar, rows - 1 - ar) / factor)
    hc = math.ceil(max(ac, cols - 1 - ac) / factor)
    weights = (
        _tent_matrix(rows, ar, factor, hr) @ kernel.weights @ _tent_matrix(cols, ac, factor, hc).T
    )
    # Rings of zeros that the split left on both sides cost taps and change nothing.
    while weights.shape[0] > 1 and not weights[0].any() and not weights[-1].any():
        weights = weights[1:-1]
    while weights.shape[1] > 1 and not weights[:, 0].any() and not weights[:, -1].any():
        weights = weights[:, 1:-1]
    return Kernel.from_weights(weights, name=f"{kernel.name} at 1/{factor}")


def _crop_filter(
    pixels: np.ndarray,
    spec: FilterSpec,
    window: Window,
    check: Check,
    *,
    max_tile_side: int | None = None,
) -> pipeline.FilterResult:
    """``window`` of ``pixels`` filtered as the whole image would be there: the window plus
    its halo (the border applied only at true image edges), filtered, interior kept."""
    y0, y1, x0, x1 = window
    h, w = pixels.shape[:2]
    kernel = spec.effective_kernel
    if (y0, y1, x0, x1) == (0, h, 0, w):
        return pipeline.filter_pixels(
            pixels, spec, max_tile_side=max_tile_side, check=check, in_flight=1
        )
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    grid = TileGrid(h, w, max(y1 - y0, x1 - x0), (ar, rows - 1 - ar, ac, cols - 1 - ac))
    padded, (oy, ox) = gather(pixels, grid, window, spec.border)
    check()
    result = pipeline.filter_pixels(
        padded, spec, max_tile_side=max_tile_side, check=check, in_flight=1
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
        self._small: dict[tuple[Hashable, int], np.ndarray] = {}
        self._result: LiveResult | None = None

    def small(self, image: np.ndarray, key: Hashable, factor: int) -> np.ndarray:
        with self._lock:
            found = self._small.get((key, factor))
        if found is None:
            found = downscale(image, factor)
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


def preview_spec(spec: FilterSpec, factor: int) -> FilterSpec:
    """The spec of a reduced preview: the resampled kernel, on the planner's strategy (the
    preview is approximate anyway; ``cpu`` stays ``cpu``)."""
    strategy = "cpu" if get_info(spec.strategy).runs_on == "cpu" else "auto"
    kernel = reduced_kernel(spec.effective_kernel, factor)
    return spec.replace(kernel=kernel, convolve=False, strategy=strategy, tile=None)


def run_live(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    report: Report,
    image_key: Hashable | None = None,
    viewport: Viewport | None = None,
    cache: LiveCache | None = None,
) -> LiveResult:
    """The window's main result: the pixel pipeline (:func:`blurapp.pipeline.filter_pixels`),
    the same call ``blurapp apply`` makes, viewport first (see the module's docstring).

    ``report`` receives a :class:`LivePreview` for what is visible (reduced when the view is),
    then :class:`LiveProgress` per full-resolution tile. ``check`` is called between stages and
    tiles. ``image_key`` names the image's pixels (the window's count of images shown): while it
    stays the same, the GPU keeps the image it already holds instead of receiving it again.
    """
    viewport = viewport or Viewport.whole(image.shape)
    h, w = image.shape[:2]
    factor = max(1, viewport.factor)
    if factor >= 2:
        small = cache.small(image, image_key, factor) if cache else downscale(image, factor)
        y0, y1, x0, x1 = viewport.window
        sh, sw = small.shape[:2]
        swin = (y0 // factor, min(sh, -(-y1 // factor)), x0 // factor, min(sw, -(-x1 // factor)))
        pspec = preview_spec(spec, factor)
        check()
        # Not stopped once started (about 0.1 s): superseded, it is still shown while the user
        # drags a slider, the newest first (the window decides); the full run stops at once.
        part = _crop_filter(small, pspec, swin, lambda: None)
        report(
            LivePreview(
                spec,
                to_qimage(part.image),
                (swin[0] * factor, swin[1] * factor, swin[2] * factor, swin[3] * factor),
                factor,
                part.timing,
                part.strategy,
                image_key,
            )
        )
    elif not viewport.covers(image.shape):
        side = RATES.tile_side(image.shape, spec)
        check()
        part = _crop_filter(image, spec, viewport.window, check, max_tile_side=side)
        check()
        report(
            LivePreview(spec, to_qimage(part.image), viewport.window, 1, part.timing, "", image_key)
        )
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
    )
    first = result.timing.first_run  # the engine knows whether it compiled
    if not first:
        RATES.learn(result.strategy, spec.effective_kernel, h * w, result.timing.wall_ms)
    display = downscale(result.image, factor) if factor >= 2 else result.image
    live = LiveResult(
        spec,
        result.image,
        result.timing,
        result.strategy,
        result.reason,
        to_qimage(display),
        factor,
        first,
        image_key,
    )
    if cache is not None:
        cache.store(live)
    return live


def display_of(result: LiveResult, factor: int) -> QImage:
    """The result's picture at 1 / ``factor`` (a worker's job when the zoom changes)."""
    return to_qimage(downscale(result.image, factor) if factor >= 2 else result.image)


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
    p = pipeline.Prepared(p.spec, src, p.x, p.storage, p.out_dtype, None, p.output, None)
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
            x = pipeline.prepare(padded, cpu_spec).x
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
    prepared = pipeline.prepare(crop, cpu_spec)
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
    ridx = border.map_indices(np.arange(y0 - ar, y0 + h + rows - 1 - ar), x.shape[0])
    cidx = border.map_indices(np.arange(x0 - ac, x0 + w + cols - 1 - ac), x.shape[1])
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
        prepared_mode = pipeline.prepare(stored, cpu_spec)
        padded = prepared_mode.x
        if border.mode is BorderMode.CONSTANT:
            ridx = border.map_indices(np.arange(y0 - ar, y0 + h + rows - 1 - ar), image.shape[0])
            cidx = border.map_indices(np.arange(x0 - ac, x0 + w + cols - 1 - ac), image.shape[1])
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
