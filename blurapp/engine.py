"""Run a kernel over normalised floats: plan ``auto``, then the numpy reference (``cpu``) or a
GPU strategy, which is imported only when one is asked for.

Pixels (stored types, alpha, linear light, range, quantisation) are :mod:`blurapp.pipeline`'s
job; it, the strategies view and ``blurapp bench`` call :func:`filter_float`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable

import numpy as np

from blurapp.core import strategies
from blurapp.core.borders import Border
from blurapp.core.errors import GpuUnavailableError, StrategyError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.lowrank import low_rank
from blurapp.core.numbers import beyond_float32, from_float, to_float
from blurapp.core.planner import DeviceLimits, Plan, choose
from blurapp.core.reference import correlate_float
from blurapp.core.tiling import WHOLE_IMAGE_TEXELS, TileGrid, plan_grid
from blurapp.core.timing import PassTiming, Timing

OUTPUTS = ("rgba32f", "rgba8")  # filter_float's result formats (float32/64, or uint8)


def as_kernel(kernel: Kernel | str) -> Kernel:
    """A :class:`Kernel` from a kernel or a spec string."""
    return kernel if isinstance(kernel, Kernel) else Kernel.parse(kernel)


def why_not(strategy: str, kernel: Kernel) -> str | None:
    """Why ``strategy`` cannot run ``kernel``, or ``None`` when it can (the registry answers,
    so asking creates no device)."""
    return strategies.why_not(strategy, kernel)


def gpu_limits() -> DeviceLimits | None:
    """The GPU's limits, or ``None`` when there is no adapter (creates the device lazily, and
    installs the adapter's cost table: :func:`blurapp.gpu.calibration.ensure_table`)."""
    from blurapp.gpu.calibration import ensure_table
    from blurapp.gpu.device import get_device

    try:
        ctx = get_device()
    except GpuUnavailableError:
        _raise_if_adapter_named()
        return None
    ensure_table(ctx)  # the adapter's calibrated costs for the plan, once known
    return ctx.limits


def _raise_if_adapter_named() -> None:
    """Re-raise the error at hand when BLURAPP_ADAPTER names an adapter: ``auto`` falls back
    to the reference only when no adapter was asked for, never silently past a wrong name."""
    from blurapp.gpu.device import ADAPTER_ENV

    if os.environ.get(ADAPTER_ENV, "").strip():
        raise


def tile_grid(
    shape: tuple[int, ...],
    kernel: Kernel | str,
    strategy: str = "auto",
    *,
    max_tile_side: int | None = None,
) -> TileGrid:
    """The tiles an image of ``shape`` runs in with ``strategy`` on this machine.

    GPU strategies are bounded by the adapter's largest texture side and buffer (an RGBA float
    copy of a tile, rows aligned to 256 bytes, must fit) and by a memory budget; the reference
    by the memory budget alone. ``max_tile_side`` forces smaller tiles (``--max-tile-side``).
    """
    kernel = as_kernel(kernel)
    height, width = int(shape[0]), int(shape[1])
    max_side = max_texels = None
    if strategies.get_info(strategy).runs_on != "cpu":
        from blurapp.gpu.device import get_device

        try:
            ctx = get_device()
        except GpuUnavailableError:
            _raise_if_adapter_named()
            ctx = None  # auto runs the reference; an explicit GPU strategy fails on its own
        if ctx is not None:
            max_side = ctx.limits.max_texture_side
            max_buffer = int(ctx.device.limits["max-buffer-size"])
            row_align = 256 // 16  # texels per 256-byte row step
            max_texels = max_buffer // 16 - row_align * max_side
    budget = WHOLE_IMAGE_TEXELS if max_texels is None else min(max_texels, WHOLE_IMAGE_TEXELS)
    return plan_grid(
        height,
        width,
        kernel.shape,
        max_side=max_side,
        max_texels=budget,
        max_tile_side=max_tile_side,
    )


def release_gpu_memory() -> None:
    """Drop the GPU's per-image-size textures and buffers (compiled pipelines stay): for a run
    whose image size changes, so that only one size's resources are held at a time."""
    import sys

    if "blurapp.gpu.engine" in sys.modules:  # nothing to release when no GPU run happened
        from blurapp.gpu.engine import get_filter

        get_filter().clear()


def plan_for(
    kernel: Kernel | str,
    *,
    tolerance: float | None = None,
    size: tuple[int, int] | None = None,
) -> Plan:
    """What ``auto`` would run for ``kernel`` (lowrank within ``tolerance``) on this machine,
    on a (width, height) image of ``size`` (``None``: times per megapixel), and why."""
    return choose(as_kernel(kernel), gpu_limits(), size=size, tolerance=tolerance)


def filter_float(
    x: np.ndarray,
    kernel: Kernel | str,
    border: Border | str = "clamp",
    strategy: str = "auto",
    tile: int | None = None,
    *,
    storage: str = "rgba32f",
    convert: Callable[[np.ndarray], np.ndarray] | None = None,
    output: str = "rgba32f",
    input_key: Hashable | None = None,
    tolerance: float | None = None,
) -> tuple[np.ndarray, Timing, str, str]:
    """Filter a normalised float H×W×C image.

    Arguments:
        x: float32 or float64 image, H×W×C with 1 to 4 channels, in normalised units; or,
            with ``storage="rgba8"`` and a GPU strategy, uint8 pixels (meaning v / 255), uploaded
            as they are.
        kernel: a :class:`Kernel` or a spec string.
        border: a :class:`Border` or a border name (``"mirror"``, ``"constant=0.5"``, ...).
        strategy: a name of :data:`blurapp.core.strategies.STRATEGIES`.
        tile: the tile side for ``tiled`` (8, 16 or 32); ``None`` lets the planner choose.
        storage: the GPU input texture's format, ``"rgba32f"``, ``"rgba16f"`` or ``"rgba8"``
            (x rounded to it on upload; accumulation stays f32). ``cpu`` ignores it.
        convert: applied to the H×W×C float result before it is returned (for the GPU
            strategies straight on the readback buffer, saving a float copy); see
            :meth:`blurapp.gpu.engine.GpuFilter.run`.
        output: ``"rgba32f"`` (float results, the default) or ``"rgba8"``: uint8 results,
            clamped to [0, 1] and rounded to nearest (on the GPU by its rgba8unorm output
            texture, a quarter of the memory; ``cpu`` quantises its float64 result the same
            way). ``convert`` then receives the uint8 pixels.
        input_key: identifies ``x``'s pixels (equal keys, equal pixels): a GPU run whose input
            texture already holds ``x`` skips the upload (see
            :meth:`blurapp.gpu.engine.GpuFilter.run`). ``None`` uploads every time.
        tolerance: the error ``lowrank`` may make per unit of max |x| (``None``: half an 8-bit
            step; :mod:`blurapp.core.lowrank`).

    NaN and Inf in ``x`` give NaN and Inf exactly where the float64 reference has them, whatever
    the strategy (DESIGN.md "Numbers"): one whose arithmetic would spread them (``lowrank``,
    ``fft``: :meth:`~blurapp.core.strategies.StrategyInfo.needs_nan_overlay`) runs on the finite
    values and gets its non-finite outputs written over the float result before ``output``'s
    quantisation and ``convert`` (:mod:`blurapp.gpu.nonfinite`); ``output="rgba8"`` on such an
    image quantises the float result as ``cpu`` does (NaN to 0) instead of in the GPU's store.
    Finite images pay nothing but a scan, for such strategies and for ``output="rgba8"``;
    ``fft`` on huge finite values (max|x| · ||k||₁ beyond 2**100) runs scaled by a power of two,
    so that its transforms do not overflow.

    Returns:
        ``(result, timing, strategy_that_ran, reason)``; the result is float64 for ``cpu`` and
        float32 for the GPU strategies (uint8 for ``output="rgba8"``), or what ``convert``
        made of it.
    """
    if output not in OUTPUTS:
        raise UsageError(f"unknown output format {output!r}; choose one of {', '.join(OUTPUTS)}")
    kernel = as_kernel(kernel)
    border = Border.parse(border)
    problem = strategies.why_not(strategy, kernel, tolerance)
    if problem:
        raise StrategyError(problem)
    reason = ""
    info = strategies.STRATEGIES[strategy]
    if info.runs_on == "planner" and beyond_float32(x):
        # The GPU computes in float32, where these pixels would be infinities.
        strategy = strategies.CPU
        reason = "pixel values beyond float32 (±3.4e38): the float64 reference"
    elif info.runs_on == "planner":
        size = (int(x.shape[1]), int(x.shape[0]))
        chosen = choose(kernel, gpu_limits(), size=size, tolerance=tolerance)
        strategy, reason = chosen.strategy, chosen.explained
        tile = tile if tile is not None else chosen.tile
    if strategy == strategies.LOWRANK and not reason:
        reason = low_rank(kernel, tolerance).describe()  # the k and the error it promises
    if strategies.STRATEGIES[strategy].runs_on == "cpu":
        if storage == "rgba8" and x.dtype == np.uint8:
            x = to_float(x)  # the same v / 255 the rgba8unorm texture would hold
        start = time.perf_counter()
        result = correlate_float(x, kernel, border)
        ms = (time.perf_counter() - start) * 1e3
        if output == "rgba8":
            result = from_float(result, np.uint8, range_mode="clamp", squeeze=False)
        if convert is not None:
            result = convert(result)
        pixels = int(x.shape[0] * x.shape[1])
        timing = Timing((PassTiming("reference", ms, 0),), "wall", pixels, ms)
        return result, timing, strategy, reason

    from blurapp.gpu.engine import get_filter

    if storage == "rgba8" and x.dtype == np.uint8:
        xs = x  # already what an rgba8unorm texture holds (v / 255): no float copy
    else:
        xs = np.ascontiguousarray(x, dtype=np.float32)
    place = strategies.STRATEGIES[strategy].needs_nan_overlay(kernel)
    if place or output == "rgba8":
        from blurapp.gpu.nonfinite import run_exact

        exact = run_exact(
            xs, kernel, border, strategy, tile, storage=storage, convert=convert,
            output=output, tolerance=tolerance, place=place,
        )  # fmt: skip
        if exact is not None:  # the image had NaN or Inf
            return (*exact, strategy, reason)
    result, timing = get_filter().run(
        xs,
        kernel,
        border,
        strategy,
        tile=tile,
        storage=storage,
        convert=convert,
        output=output,
        input_key=input_key,
        tolerance=tolerance,
    )
    return result, timing, strategy, reason
