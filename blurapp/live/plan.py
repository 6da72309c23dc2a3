"""How much work the live preview gives itself, from measured speed: the rate of each kind of
run (multiply-adds per second, learned from completed runs), the reduction of a change's first
picture so that it is computed within :data:`FIRST_BUDGET_MS`, and tile sides so that each
tile of the full-resolution result takes about :data:`TILE_BUDGET_MS`.

The rate lives in one place, :meth:`Rates.rate`: what this module learns from the window's
own runs (``Timing`` carries milliseconds and pixels), and the engine's measurement of its
adapter (:func:`engine_rate` is where that is read).
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass

from blurapp.core.kernel import Kernel
from blurapp.core.strategies import get_info

__all__ = [
    "FIRST_BUDGET_MS",
    "RATES",
    "TILE_BUDGET_MS",
    "WHOLE_BUDGET_MS",
    "FirstPicture",
    "Rates",
    "engine_rate",
]

#: Computing a change's first picture (the screen adds the picture's conversion and a paint).
FIRST_BUDGET_MS = 90.0
#: One tile of the full-resolution result: a newer request waits at most about this.
TILE_BUDGET_MS = 100.0
#: A run estimated below this goes whole (keeping the GPU's cached upload of the image).
WHOLE_BUDGET_MS = 150.0
#: The most a tile grid may compute beyond the image's own outputs (halos computed again):
#: past it, the image runs whole (its long passes still stop between bands).
MAX_TILE_WASTE = 4.0
#: A first picture is not reduced below this many pixels on its longer side.
MIN_PICTURE_SIDE = 48
#: Multiply-adds' worth of the fixed work per value of a run (conversions, copies).
FIXED_PER_VALUE = 16.0
#: Where the rates start (lavapipe on a 2-core CPU: 1.5 ns per GPU multiply-add on one RGBA
#: channel, the float64 reference 1 ns per multiply-add); they follow what is measured.
DEFAULT_RATES = {"gpu": 6.7e8, "cpu": 1.0e9}


def kind_of(strategy: str) -> str:
    """``"cpu"`` for the reference, ``"gpu"`` for the rest (``auto`` plans a GPU strategy
    where there is an adapter)."""
    return "cpu" if get_info(strategy).runs_on == "cpu" else "gpu"


def engine_rate(kind: str) -> float | None:
    """The engine's own measurement of its adapter (:func:`blurapp.gpu.engine.mac_rate`:
    multiply-adds a second of a direct pass, from its runs or the calibrated cost table), in
    this module's unit (one multiply-add per channel value: four per RGBA texel); ``None``
    for the reference, or before the device exists (asking would create it on the caller's
    thread: a first picture would wait seconds for it). The one place to switch over."""
    if kind != "gpu":
        return None
    device = sys.modules.get("blurapp.gpu.device")
    engine = sys.modules.get("blurapp.gpu.engine")
    if device is None or engine is None or getattr(device, "_context", None) is None:
        return None
    try:
        value = float(engine.mac_rate("direct"))
    except Exception:  # no measurement it can give: ours stands
        return None
    return 4.0 * value if math.isfinite(value) and value > 0 else None


def taps_per_value(strategy: str, kernel: Kernel, factor: int = 1) -> float:
    """Modelled multiply-adds per output value of ``strategy`` on ``kernel`` (resampled to
    1 / ``factor`` where ``factor`` > 1, without making it): the reference's and the 1-D
    passes' rows + columns for a separable kernel, else its non-zero taps (the reference skips
    zeros); GPU strategies by the planner's cost in direct taps."""
    rows, cols = kernel.shape
    if kind_of(strategy) == "cpu":
        if factor > 1:
            rows, cols = _reduced_shape(kernel, factor)
        if kernel.separability.rank == 1:  # resampling keeps a kernel separable
            return float(rows + cols)
        nonzero = int((kernel.weights != 0).sum()) / kernel.weights.size
        return float(max(1.0, nonzero * rows * cols))
    if factor > 1:
        from blurapp.live.scaling import reduced_kernel

        kernel = reduced_kernel(kernel, factor)
    from blurapp.core import planner

    try:
        from blurapp import engine

        found = planner.cost(strategy, kernel, engine.gpu_limits())
    except Exception:  # the planner cannot say (no adapter yet, a kernel it refuses)
        found = math.inf
    return found if math.isfinite(found) else float(rows * cols)


def _reduced_shape(kernel: Kernel, factor: int) -> tuple[int, int]:
    """The shape :func:`blurapp.live.scaling.reduced_kernel` gives (at most)."""
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    hr = math.ceil(max(ar, rows - 1 - ar) / factor)
    hc = math.ceil(max(ac, cols - 1 - ac) / factor)
    return 2 * hr + 1, 2 * hc + 1


def work(strategy: str, kernel: Kernel, pixels: int, channels: int = 3, factor: int = 1) -> float:
    """Multiply-adds (modelled, fixed work included) of one run over ``pixels`` outputs
    (``kernel`` resampled to 1 / ``factor``); GPU strategies always work on four channels
    (RGBA textures)."""
    values = pixels * (4 if kind_of(strategy) == "gpu" else max(1, channels))
    return values * (taps_per_value(strategy, kernel, factor) + FIXED_PER_VALUE)


@dataclass(frozen=True)
class FirstPicture:
    """How a change's first picture is made: at ``factor`` image pixels per picture pixel
    (1: exact pixels), by ``strategy``, estimated to take ``estimate_ms``."""

    factor: int
    strategy: str
    estimate_ms: float


class Rates:
    """Multiply-adds per second of each kind of run (``"gpu"``, ``"cpu"``), learned from the
    window's completed runs, and what they decide: first pictures and tile sides."""

    def __init__(self, start: dict[str, float] | None = None) -> None:
        self._lock = threading.Lock()
        self._rate = dict(start or DEFAULT_RATES)
        self._runs = {kind: 0 for kind in self._rate}
        self._warm: set[tuple[object, ...]] = set()

    # ------------------------------------------------------------------------ the rate
    def rate(self, kind: str) -> float:
        """Multiply-adds per second of ``kind``: before any run of the window's own, the
        engine's measurement where it has one (else the start value); after, the slower of
        the engine's (GPU time of its passes) and what this object learned (wall-clock time,
        uploads and readbacks included: what a superseded request waits for)."""
        found = engine_rate(kind)
        with self._lock:
            learned, runs = self._rate[kind], self._runs[kind]
        if found is None:
            return learned
        return found if runs == 0 else min(found, learned)

    def runs(self, kind: str) -> int:
        with self._lock:
            return self._runs[kind]

    def learn(
        self, strategy: str, kernel: Kernel, pixels: int, ms: float, channels: int = 3
    ) -> None:
        """A completed run (not one that compiled): ``pixels`` outputs in ``ms``."""
        if pixels < 4096 or ms <= 1.0:
            return  # too small to say anything beyond the fixed costs
        kind = kind_of(strategy)
        measured = work(strategy, kernel, pixels, channels) / (ms / 1e3)
        measured = min(max(measured, 1e6), 1e14)
        with self._lock:
            self._rate[kind] = math.sqrt(self._rate[kind] * measured)  # geometric: fast to follow
            self._runs[kind] += 1

    def estimate_ms(
        self, strategy: str, kernel: Kernel, pixels: int, channels: int = 3, factor: int = 1
    ) -> float:
        """How long a run over ``pixels`` outputs takes at the measured rate (``kernel``
        resampled to 1 / ``factor``)."""
        found = work(strategy, kernel, pixels, channels, factor)
        return found / self.rate(kind_of(strategy)) * 1e3

    # ------------------------------------------------------------------------ warm pipelines
    def mark_warm(self, key: tuple[object, ...]) -> None:
        """A GPU run of this kind (strategy, kernel shape, border, pixel type) has compiled."""
        with self._lock:
            self._warm.add(key)

    def is_warm(self, key: tuple[object, ...]) -> bool:
        with self._lock:
            return key in self._warm

    # ------------------------------------------------------------------------ decisions
    def first_picture(
        self,
        region: tuple[int, int],
        channels: int,
        kernel: Kernel,
        strategy: str,
        view_factor: int,
        *,
        gpu_ready: bool = False,
        budget_ms: float = FIRST_BUDGET_MS,
    ) -> FirstPicture:
        """The first picture of a change to ``region`` (rows, columns of visible image
        pixels) seen at ``view_factor``: the smallest reduction at or above the view's whose
        estimate fits ``budget_ms``, on the reference (no compile, never waits for the GPU)
        or, where ``gpu_ready`` (its pipelines compiled, its lane idle), on the GPU if that
        is estimated faster. Never reduced below :data:`MIN_PICTURE_SIDE` pixels; the
        reductions tried are multiples of the view's."""
        h, w = max(1, region[0]), max(1, region[1])
        factor = max(1, int(view_factor))
        most = max(factor, max(h, w) // MIN_PICTURE_SIDE)
        gpu = None
        if gpu_ready and kind_of(strategy) == "gpu":
            gpu = strategy
        best = FirstPicture(factor, "cpu", math.inf)
        # Multiples of the view's reduction: the picture's copy of the image is then made from
        # the view's (cached) copy, not from the whole image again (a 12 MP downscale is
        # 0.1-0.3 s, the whole budget).
        multiples = iter((2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64))
        f = factor
        while True:
            pixels = (-(-h // f)) * (-(-w // f))
            cpu_ms = self.estimate_ms("cpu", kernel, pixels, channels, f)
            options = [FirstPicture(f, "cpu", cpu_ms)]
            if gpu is not None:
                name = gpu if f == 1 else "auto"
                gpu_ms = self.estimate_ms(name, kernel, pixels, channels, f)
                options.append(FirstPicture(f, name, gpu_ms))
            pick = min(options, key=lambda o: o.estimate_ms)
            if pick.estimate_ms < best.estimate_ms:
                best = pick
            if pick.estimate_ms <= budget_ms or f >= most:
                return pick if pick.estimate_ms <= budget_ms else best
            f = min(factor * next(multiples, most), most)

    def tile_side(self, shape: tuple[int, ...], spec) -> int | None:
        """``max_tile_side`` for :func:`blurapp.pipeline.filter_pixels` so that one tile takes
        about :data:`TILE_BUDGET_MS`; ``None`` when the image goes whole."""
        return self.tile_side_for(shape, spec.strategy, spec.effective_kernel)

    def tile_side_for(self, shape: tuple[int, ...], strategy: str, kernel: Kernel) -> int | None:
        """As :meth:`tile_side`. A tile computes its halo's outputs too (the filter runs on
        the padded tile): tiles are never narrower than the halo, and an image whose tiles
        would compute more than :data:`MAX_TILE_WASTE` times its own outputs runs whole (a
        kernel as large as the image: its run still stops between bands and blocks of taps)."""
        h, w = int(shape[0]), int(shape[1])
        channels = int(shape[2]) if len(shape) > 2 else 1
        if self.estimate_ms(strategy, kernel, h * w, channels) <= WHOLE_BUDGET_MS:
            return None
        rows, cols = kernel.shape
        pad = max(rows, cols) - 1
        per_pixel_ms = self.estimate_ms(strategy, kernel, 1, channels)
        padded = math.isqrt(max(1, int(TILE_BUDGET_MS / max(per_pixel_ms, 1e-12))))
        side = max(padded - pad, pad, 48)
        if side >= h and side >= w:
            return None
        tiles = math.ceil(h / side) * math.ceil(w / side)
        computed = tiles * (min(side, h) + pad) * (min(side, w) + pad)
        if computed > MAX_TILE_WASTE * h * w:
            return None
        return side + pad


#: The window's rates (one per process: they describe the machine).
RATES = Rates()
