"""Exact NaN and Inf on the GPU for strategies whose arithmetic would spread them.

``lowrank`` (a sum of SVD pairs), ``fft`` (transforms over whole blocks) and two 1-D passes
whose factors miss a zero tap spread a NaN or an Inf beyond the taps that read it. On an image
with such values, :func:`run_exact` runs the strategy on the image with them replaced by 0 and
writes the non-finite outputs over the float result, decided by counts
(:func:`blurapp.core.nonfinite.overlay`): the correlations of the indicator images (isnan,
isposinf, isneginf; up to four in one RGBA run) with the kernel's support masks (w > 0, w < 0),
on the GPU, through the image's border mode (a constant border reads 0 there: its value is
finite). Images without NaN or Inf pay one scan and nothing else.

**Why the counts are exact.** A count is an integer from 0 to the mask's taps, at most
513² = 263169 (MAX_KERNEL_SIDE); an output counts as reached when its count is above 0.5, so
any correlation whose error stays below 0.5 decides exactly. The counts run with what the
planner picks for the mask (a 0/1 kernel, on finite 0/1 images):

- ``direct``, ``tiled``, ``separable``, ``transpose``: every number is non-negative (the
  indicators, the mask, and its rank-1 factors, which are its 0/1 vectors scaled), so an output
  with nothing under the mask sums exact zeros and one with k ≥ 1 sums to k within f32's
  relative rounding (under 1e-4 for 513 + 513 terms): nowhere near 0.5 either way;
- ``lowrank``: within its tolerance per unit of max |x| = 1 (default 0.002) plus f32 rounding;
- ``fft``: within its stated bound 2⁻²⁴ · log2(NR·NC) · max|x| · ||k||₁ (docs/PERFORMANCE.md,
  measured at 0.15-0.4 of it), at most 2⁻²⁴ · 22 · 263169 = 0.345 for the largest kernel in
  the largest (2048²) block; :func:`fft_count_bound` checks it before fft is used, and a mask
  whose bound reached 0.5 would be counted with ``tiled`` or ``direct`` instead.

The result goes through ``output``'s quantisation (``rgba8``: clamp to [0, 1], round, NaN to 0,
as ``cpu`` quantises) and ``convert`` only after the overlay. The other strategies place NaN
themselves but an rgba8unorm store quantises it as the device likes (255 on lavapipe), so with
``output="rgba8"`` an image with NaN or Inf takes the float path here too, without the counts.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import numpy as np

from blurapp.core.borders import Border, BorderMode
from blurapp.core.kernel import Kernel
from blurapp.core.nonfinite import finite_max_abs, overlay
from blurapp.core.numbers import from_float
from blurapp.core.planner import FFT, plan
from blurapp.core.timing import PassTiming, Timing

__all__ = ["COUNT_PASS_PREFIX", "fft_count_bound", "fft_exponent", "run_exact"]

#: Prefix of the timing entries of the count passes.
COUNT_PASS_PREFIX = "non-finite "
# A count is decided by > 0.5: fft counts only where its stated bound stays below this.
_MAX_COUNT_ERROR = 0.5
# fft's transforms add up to NR·NC <= 2**22 terms of up to max|x|·max(||k||_1, 1) each: kept
# below 2**100 (float32 overflows at 2**128), they cannot overflow.
_FFT_SAFE_LOG2 = 100


def fft_exponent(top: float, kernel: Kernel) -> int:
    """The power of two fft's input is divided by so that no transform overflows float32: 0
    unless max|x| · max(||k||_1, 1) exceeds 2**100 (``top`` = max|x|, a constant border's value
    included). Scaling by a power of two is exact; small values it pushes below float32's
    normal range are lost, which is far below fft's stated error."""
    product = float(top) * max(1.0, float(np.abs(kernel.weights).sum()))
    if not product > 2.0**_FFT_SAFE_LOG2:
        return 0
    return math.ceil(math.log2(product)) - _FFT_SAFE_LOG2


def fft_count_bound(mask: np.ndarray, block: tuple[int, int]) -> float:
    """fft's stated error bound for a 0/1 ``mask`` on 0/1 images in ``block``-sized blocks:
    2⁻²⁴ · log2(NR·NC) · ||mask||₁ (max|x| = 1)."""
    nr, nc = block
    return 2.0**-24 * math.log2(max(2, nr * nc)) * float(np.abs(mask).sum())


@functools.lru_cache(maxsize=16)
def _mask_kernel(weights: bytes, shape: tuple[int, int]) -> Kernel:
    mask = np.frombuffer(weights, dtype=np.float64).reshape(shape)
    return Kernel.from_weights(mask, name="support")


def _count_strategy(mask_kernel: Kernel, limits, size: tuple[int, int], channels: int):
    """What counts with ``mask_kernel`` (the planner's choice), and the tile for ``tiled``."""
    chosen = plan(mask_kernel, limits)
    if chosen.strategy == FFT:
        from blurapp.gpu.fft import plan_blocks

        block = plan_blocks(mask_kernel.shape, size, channels, limits).block
        if fft_count_bound(mask_kernel.weights, block) >= _MAX_COUNT_ERROR:
            return ("tiled", None) if _tiles(mask_kernel, limits) else ("direct", None)
    return chosen.strategy, chosen.tile


def _tiles(kernel: Kernel, limits) -> bool:
    from blurapp.core.errors import StrategyError
    from blurapp.core.planner import choose_tile

    try:
        choose_tile(kernel.shape, limits)
    except StrategyError:
        return False
    return True


def run_exact(
    x: np.ndarray,
    kernel: Kernel,
    border: Border,
    strategy: str,
    tile: int | None,
    *,
    storage: str,
    convert: Callable[[np.ndarray], np.ndarray] | None,
    output: str,
    tolerance: float | None,
    place: bool = True,
) -> tuple[np.ndarray, Timing] | None:
    """Run GPU ``strategy`` with DESIGN.md's NaN rule held exactly, or ``None`` when ``x`` (as
    the input texture would hold it) has no NaN or Inf and the plain run is exact already.

    Arguments are :meth:`blurapp.gpu.engine.GpuFilter.run`'s (``x`` a float32 H×W or H×W×C
    image; ``storage="rgba8"`` holds no NaN or Inf, so it always gives ``None``), and
    ``place``: run on the finite values and place the non-finite outputs (``False`` for a
    strategy that places them itself, run here only so that ``output="rgba8"`` quantises its
    NaN as the reference does: an rgba8unorm store's NaN is the device's, 255 on lavapipe).

    ``fft`` on an image of huge finite values (max|x| · ||k||₁ beyond 2**100, e.g. one pixel of
    3e38) runs here too, scaled down by :func:`fft_exponent`'s power of two and the result
    scaled back: its transforms would overflow and spread inf and NaN over the block.

    Returns:
        The result as :meth:`GpuFilter.run` returns it (float32, uint8 for ``output="rgba8"``,
        or what ``convert`` made of it) and a :class:`Timing` whose passes are the strategy's
        followed by the count runs' (named ``"non-finite …"``); ``None`` for a finite image.
    """
    from blurapp.gpu.engine import get_filter, to_storage

    if storage == "rgba8" or x.dtype.kind != "f":
        return None
    # The texture's values decide: half floats overflow to inf beyond 65504.
    with np.errstate(over="ignore"):
        stored = to_storage(x, storage) if storage == "rgba16f" else x
    finite, top = finite_max_abs(stored)
    exponent = 0
    if strategy == FFT and storage == "rgba32f":
        exponent = fft_exponent(max(top, abs(border.value)), kernel)
    if finite and not exponent:
        return None
    place = place and not finite
    start = time.perf_counter()
    squeeze = stored.ndim == 2
    image = stored[:, :, np.newaxis] if squeeze else stored
    source = np.where(np.isfinite(image), image, image.dtype.type(0)) if place else image
    run_border = border
    if exponent:
        source = source * np.float32(2.0**-exponent)
        if border.mode is BorderMode.CONSTANT:
            run_border = Border(BorderMode.CONSTANT, border.value * 2.0**-exponent)
    filt = get_filter()
    result, timing = filt.run(
        source, kernel, run_border, strategy,
        tile=tile, storage=storage, output="rgba32f", tolerance=tolerance,
    )  # fmt: skip
    del source
    result = np.asarray(result, dtype=np.float32).reshape(image.shape)
    if not result.flags.writeable:
        result = result.copy()
    if exponent:
        with np.errstate(over="ignore"):  # beyond float32 is inf, as in every strategy
            result *= np.float32(2.0**exponent)

    count_border = Border(BorderMode.CONSTANT) if border.mode is BorderMode.CONSTANT else border
    limits = filt.context.limits
    height, width = image.shape[:2]
    counts_timing: list[Timing] = []

    def correlate(indicators: np.ndarray, mask: np.ndarray) -> np.ndarray:
        mask_kernel = _mask_kernel(np.ascontiguousarray(mask).tobytes(), mask.shape)
        name, count_tile = _count_strategy(
            mask_kernel, limits, (height, width), indicators.shape[2]
        )
        counts, t = filt.run(
            indicators, mask_kernel, count_border, name, tile=count_tile, storage=storage
        )
        counts_timing.append(t)
        return counts

    if place:
        overlay(result, image, kernel.weights, correlate)
    if output == "rgba8":  # as the rgba8unorm store: clamp, round to nearest, NaN to 0
        out: np.ndarray = from_float(result, np.uint8, range_mode="clamp", squeeze=False)
    else:
        out = result
    if convert is not None:
        out = convert(out)
    elif squeeze:
        out = out[:, :, 0]
    count_passes = tuple(
        PassTiming(COUNT_PASS_PREFIX + p.name, p.ms, p.bytes_modelled)
        for t in counts_timing
        for p in t.passes
    )
    timing = Timing(
        passes=timing.passes + count_passes,
        timer=timing.timer,
        pixels=timing.pixels,
        wall_ms=(time.perf_counter() - start) * 1e3,
        compile_ms=timing.compile_ms + sum(t.compile_ms for t in counts_timing),
        first_run=timing.first_run or any(t.first_run for t in counts_timing),
    )
    return out, timing
