"""The one filtering API that the command line, batch mode, the GUI and the benchmarks share.

It resolves specs, plans ``auto``, converts numbers (DESIGN.md "Numbers") and dispatches to the
numpy reference (``cpu``) or to the GPU strategies, which are imported only when one is asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from blurapp.core.borders import Border
from blurapp.core.errors import GpuUnavailableError, StrategyError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import check_image, from_float, to_float
from blurapp.core.planner import DeviceLimits, Plan, plan
from blurapp.core.reference import correlate_float
from blurapp.core.timing import PassTiming, Timing

STRATEGIES = ("auto", "direct", "tiled", "separable", "transpose", "cpu")
GPU_STRATEGIES = ("direct", "tiled", "separable", "transpose")
OUTPUTS = ("rgba32f", "rgba8")  # filter_float's result formats (float32/64, or uint8)


@dataclass(frozen=True)
class FilterResult:
    """A filtered image, how long it took, which strategy ran and (for ``auto``) why."""

    image: np.ndarray
    timing: Timing
    strategy: str
    reason: str


def as_kernel(kernel: Kernel | str) -> Kernel:
    """A :class:`Kernel` from a kernel or a spec string."""
    return kernel if isinstance(kernel, Kernel) else Kernel.parse(kernel)


def why_not(strategy: str, kernel: Kernel) -> str | None:
    """Why ``strategy`` cannot run ``kernel``, or ``None`` when it can.

    GPU strategies answer for themselves (:mod:`blurapp.gpu.strategies` imports no wgpu, so
    asking creates no device); ``auto`` and ``cpu`` run every kernel.
    """
    if strategy not in STRATEGIES:
        return f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}"
    if strategy in GPU_STRATEGIES:
        from blurapp.gpu.strategies import get_strategy

        return get_strategy(strategy).why_not(kernel)
    return None


def gpu_limits() -> DeviceLimits | None:
    """The GPU's limits, or ``None`` when there is no adapter (creates the device lazily)."""
    from blurapp.gpu.device import get_device

    try:
        return get_device().limits
    except GpuUnavailableError:
        return None


def plan_for(kernel: Kernel | str) -> Plan:
    """What ``auto`` would run for ``kernel`` on this machine, and why."""
    return plan(as_kernel(kernel), gpu_limits())


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
) -> tuple[np.ndarray, Timing, str, str]:
    """Filter a normalised float H×W×C image.

    Arguments:
        x: float32 or float64 image, H×W×C with 1 to 4 channels, in normalised units; or,
            with ``storage="rgba8"`` and a GPU strategy, uint8 pixels (meaning v / 255), uploaded
            as they are.
        kernel: a :class:`Kernel` or a spec string.
        border: a :class:`Border` or a border name (``"mirror"``, ``"constant=0.5"``, ...).
        strategy: one of :data:`STRATEGIES`.
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

    Returns:
        ``(result, timing, strategy_that_ran, reason)``; the result is float64 for ``cpu`` and
        float32 for the GPU strategies (uint8 for ``output="rgba8"``), or what ``convert``
        made of it.
    """
    if output not in OUTPUTS:
        raise UsageError(f"unknown output format {output!r}; choose one of {', '.join(OUTPUTS)}")
    kernel = as_kernel(kernel)
    border = Border.parse(border)
    problem = why_not(strategy, kernel)
    if problem:
        raise StrategyError(problem)
    reason = ""
    if strategy == "auto":
        chosen = plan(kernel, gpu_limits())
        strategy, reason = chosen.strategy, chosen.reason
        tile = tile if tile is not None else chosen.tile
    if strategy == "cpu":
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
        return result, Timing((PassTiming("reference", ms, 0),), "wall", pixels, ms), "cpu", reason

    from blurapp.gpu.engine import get_filter

    if storage == "rgba8" and x.dtype == np.uint8:
        xs = x  # already what an rgba8unorm texture holds (v / 255): no float copy
    else:
        xs = np.ascontiguousarray(x, dtype=np.float32)
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
    )
    return result, timing, strategy, reason


def filter_image(
    image: np.ndarray,
    kernel: Kernel | str,
    *,
    border: Border | str = "clamp",
    strategy: str = "auto",
    tile: int | None = None,
    convolve: bool = False,
    range_mode: str = "clamp",
    input_key: Hashable | None = None,
) -> FilterResult:
    """Filter an image with a kernel and return it in the input's dtype and shape.

    Arguments:
        image: H×W or H×W×C (C ≤ 4) array of uint8, uint16, float32 or float64.
        kernel: a :class:`Kernel` or a spec string such as ``"gaussian:sigma=2"``.
        border: border mode (DESIGN.md table), e.g. ``"mirror"`` or ``"constant=0.5"``.
        strategy: ``auto``, ``direct``, ``tiled``, ``separable``, ``transpose`` or ``cpu``.
        tile: tile side for ``tiled``.
        convolve: flip the kernel (convolution instead of correlation).
        range_mode: how signed results map into integer outputs: ``clamp``, ``abs``,
            ``offset`` or ``normalize``.
        input_key: a hashable that names ``image``'s pixels, for callers that filter the same
            image again and again (a live preview): when the GPU's input texture already holds
            the pixels of an equal key, they are not uploaded again. Equal keys must mean equal
            pixels; ``None`` (the default) uploads every time.

    8-bit images go to the GPU as they are (an rgba8unorm texture holds exactly v / 255) and,
    in ``clamp`` range mode, come back from an rgba8unorm texture that clamps and rounds to
    nearest: a quarter of the bytes each way and no float copies. The values are the float
    path's except where a result lies within float32 rounding of a .5 tie.

    Returns:
        A :class:`FilterResult`.

    Example:
        >>> import numpy as np, blurapp
        >>> img = np.zeros((5, 5), np.uint8); img[2, 2] = 255
        >>> blurapp.filter_image(img, "box:3", strategy="cpu").image[1:4, 1:4].tolist()
        [[28, 28, 28], [28, 28, 28], [28, 28, 28]]
    """
    if not isinstance(image, np.ndarray):
        raise UsageError(f"image must be a numpy array, not {type(image).__name__}")
    check_image(image)
    kernel = as_kernel(kernel)
    if convolve:
        kernel = kernel.flipped()
    start = time.perf_counter()
    squeeze = image.ndim == 2
    key = None if input_key is None else (input_key, image.dtype.str, image.shape)
    if image.dtype == np.uint8 and strategy != "cpu":
        pixels = image[:, :, np.newaxis] if squeeze else image
        output = "rgba8" if range_mode == "clamp" else "rgba32f"
        result, timing, ran, reason = filter_float(
            pixels, kernel, border, strategy, tile, storage="rgba8", output=output, input_key=key
        )
        if result.dtype == np.uint8:
            out = result[:, :, 0] if squeeze else result
        else:
            out = from_float(result, image.dtype, range_mode=range_mode, squeeze=squeeze)
    else:
        result, timing, ran, reason = filter_float(
            to_float(image), kernel, border, strategy, tile, input_key=key
        )
        out = from_float(result, image.dtype, range_mode=range_mode, squeeze=squeeze)
    wall_ms = (time.perf_counter() - start) * 1e3
    timing = Timing(timing.passes, timing.timer, timing.pixels, wall_ms)
    return FilterResult(out, timing, ran, reason)
