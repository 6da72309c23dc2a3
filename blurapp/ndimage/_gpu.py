"""Run blurapp.ndimage's correlations on the GPU: chains of 1-D passes along any axes of an n-D
array, and n-D correlations, on :mod:`blurapp.gpu.ndpass`'s storage-buffer passes (the
default), or with a named strategy through the 2-D engine (:func:`blurapp.engine.filter_float`)
with the array cut into H×W images.

Everything here works on real float arrays in the arithmetic's own type (float32 for ``f32``,
float64 for ``df64``) and returns that type; :mod:`blurapp.ndimage` does scipy's dtypes,
casting and argument checks around it. Borders arrive as scipy's modes. On the engine, a
``constant`` border whose value its float32 border cannot hold (NaN, ±inf, beyond float32) is
written into the array on the host, as many values as the kernel reaches.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from blurapp.core.borders import FLOAT32_MAX, Border, BorderMode
from blurapp.core.errors import UsageError

# scipy's modes for filters and the Border each one is (scipy's ndimage docs: for filters
# 'grid-mirror' is 'reflect', 'grid-constant' is 'constant' and 'grid-wrap' is 'wrap').
MODES: dict[str, BorderMode] = {
    "reflect": BorderMode.REFLECT,
    "grid-mirror": BorderMode.REFLECT,
    "mirror": BorderMode.MIRROR,
    "nearest": BorderMode.CLAMP,
    "wrap": BorderMode.WRAP,
    "grid-wrap": BorderMode.WRAP,
    "constant": BorderMode.CONSTANT,
    "grid-constant": BorderMode.CONSTANT,
}


@dataclass(frozen=True)
class Pass:
    """One 1-D correlation along ``axis``: scipy's ``correlate1d(weights, mode, cval, origin)``."""

    axis: int
    weights: np.ndarray  # float64, 1-D
    mode: str  # a key of MODES
    cval: float
    origin: int


def _gpu_border(mode: str, cval: float) -> Border | None:
    """The Border the GPU applies, or None when the value must be written on the host."""
    kind = MODES[mode]
    if kind is not BorderMode.CONSTANT:
        return Border(kind)
    if not math.isfinite(cval) or abs(cval) > FLOAT32_MAX:
        return None
    return Border(kind, cval)


def _reach(size: int, origin: int) -> tuple[int, int]:
    """How far a kernel of ``size`` taps with scipy's ``origin`` reads before and after."""
    before = size // 2 + origin
    return before, size - 1 - before


def _pad_constant(x: np.ndarray, axis: int, before: int, after: int, cval: float) -> np.ndarray:
    width = [(0, 0)] * x.ndim
    width[axis] = (max(before, 0), max(after, 0))
    return np.pad(x, width, mode="constant", constant_values=cval)


def _crop(x: np.ndarray, axis: int, before: int, n: int) -> np.ndarray:
    index = [slice(None)] * x.ndim
    index[axis] = slice(max(before, 0), max(before, 0) + n)
    return x[tuple(index)]


def _cval_dominates(x: np.ndarray, passes: Sequence[Pass]) -> bool:
    """Whether a finite constant border's value is larger than the data's values (then the
    double-float path, which scales by the largest value, would lose the data's digits)."""
    cvals = {p.cval for p in passes if MODES[p.mode] is BorderMode.CONSTANT and p.cval != 0.0}
    if len(cvals) != 1:
        return False
    (c,) = cvals
    if not math.isfinite(c) or x.size == 0:
        return False
    with np.errstate(invalid="ignore"):
        finite = np.abs(x[np.isfinite(x)])
    if finite.size != x.size:
        return False  # NaN or Inf in the data: they must meet the constant as they are
    return abs(c) > float(finite.max(initial=0.0))


def centred(weights: np.ndarray, origin: int) -> np.ndarray:
    """``weights`` with scipy's ``origin`` as zeros around them, so that the anchor is the middle
    tap (blurapp's kernels are anchored at ``size // 2``; a zero tap reads nothing)."""
    before, after = _reach(weights.size, origin)
    half = max(before, after)
    out = np.zeros(2 * half + 1)
    out[half - before : half - before + weights.size] = weights
    return out


def f32_weights(weights: np.ndarray) -> np.ndarray:
    """``weights`` rounded to float32 so that their sum stays what it was (:func:`_f32_weights`),
    cached per weights (a 9×9 kernel's nudges cost ~0.4 ms of Python a call, a fifth of a small
    array's whole call)."""
    w = np.ascontiguousarray(weights, np.float64)
    if w.size > _F32_WEIGHTS_TAPS:  # a large kernel's own work dwarfs its nudges
        return _f32_weights(w)
    key = (w.shape, w.tobytes())
    with _F32_WEIGHTS_LOCK:
        hit = _F32_WEIGHTS.get(key)
    if hit is None:
        hit = _f32_weights(w)
        hit.setflags(write=False)
        with _F32_WEIGHTS_LOCK:
            if len(_F32_WEIGHTS) >= 64:
                _F32_WEIGHTS.pop(next(iter(_F32_WEIGHTS)))
            _F32_WEIGHTS[key] = hit
    return hit


#: f32_weights' answers for kernels of up to _F32_WEIGHTS_TAPS taps, by (shape, bytes); the
#: oldest dropped beyond 64.
_F32_WEIGHTS: dict[tuple[tuple[int, ...], bytes], np.ndarray] = {}
_F32_WEIGHTS_TAPS = 4096
_F32_WEIGHTS_LOCK = threading.Lock()


def _f32_weights(weights: np.ndarray) -> np.ndarray:
    """``weights`` rounded to float32 so that their sum stays what it was (to within the
    smallest weight's rounding step) rather than off by up to a few float32 steps.

    Rounding each weight to nearest biases a Gaussian's sum by ~1e-8, which a whole image's
    values times two passes turn into a visible offset (scipy's test_gauss03 sums a 100×100
    ramp to 5e7 ± 1.5). One-step nudges of the weights, largest first, bring the sum back.

    Symmetric weights (a Gaussian, a box) stay symmetric: mirrored weights are nudged together,
    so that blurapp.gpu.ndpass folds their pairs into one multiply each (its ``sym``; 1080p
    gaussian_filter sigma=1 11.5 -> 7.8 ms) — unless too few weights can bring the sum back in
    pairs (sigma < 0.7: 3 to 5 taps), where the one-at-a-time nudges are kept. Antisymmetric
    ones (a Sobel's derivative) stay so by rounding alone, their exact sum 0.
    """
    w = np.asarray(weights, np.float64)
    n = w.size
    if n > 2 and np.array_equal(w, -w[::-1]):
        return w.astype(np.float32).astype(np.float64)
    target = float(np.sum(w))
    folded = None
    if n > 1 and np.array_equal(w, w[::-1]):
        folded = w.astype(np.float32)
        left_folded = abs(_nudged(folded, target, mirrored=True))
        if left_folded <= 2.0**-32 * float(np.sum(np.abs(w))):
            return folded.astype(np.float64)  # close enough: no need of the other nudges
    plain = w.astype(np.float32)
    left = abs(_nudged(plain, target, mirrored=False))
    if folded is not None and left_folded <= left:
        return folded.astype(np.float64)
    return plain.astype(np.float64)


def _nudged(out: np.ndarray, target: float, *, mirrored: bool) -> float:
    """Nudge float32 ``out`` in place toward the sum ``target``, largest weights first: one
    step each, or with ``mirrored`` (symmetric ``out``) up to 4 steps each pair of mirrored
    weights (and the centre) together. Returns the residual, target - sum(out)."""
    n = out.size
    residual = target - float(np.sum(out, dtype=np.float64))
    half = out[: (n + 1) // 2] if mirrored else out
    # The largest weights first; a few hundred of them bring the sum within float32's reach
    # (a 513×513 kernel need not loop over all its taps in Python).
    for i in np.argsort(-np.abs(half), kind="stable")[:256]:
        j = n - 1 - i if mirrored else i
        for _ in range(4 if mirrored else 1):
            if residual == 0.0 or out[i] == 0 or not np.isfinite(out[i]):
                break
            nudged = np.nextafter(out[i], np.float32(np.inf if residual > 0 else -np.inf))
            step = (float(nudged) - float(out[i])) * (1 if i == j else 2)
            if not abs(residual - step) < abs(residual):
                break
            out[i] = out[j] = nudged
            residual -= step
    return residual


# --------------------------------------------------------------------------- 1-D passes


def run_passes(
    x: np.ndarray,
    passes: Sequence[Pass],
    *,
    strategy: str | None,
    split: bool = True,
    out: np.ndarray | None = None,
    lend: bool = False,
) -> np.ndarray:
    """Run ``passes`` one after another on ``x`` (float32 or float64, any shape): each reads
    the previous one's result. Returns a new array of ``x``'s dtype and shape, or ``out`` (a
    C-contiguous array of that dtype and shape, ``x`` itself too) where the GPU passes read
    their result back straight into it; a caller stores the result when it is not ``out``.

    ``strategy=None`` runs them on :mod:`blurapp.gpu.ndpass`, chained without reading back
    between them, in f32 for float32 and double-float for float64; a strategy name runs each
    pass through the 2-D engine with that strategy (f32). ``lend``: a float32 result may be
    the GPU buffer's own memory on a software adapter (ndpass.LEND_RESULTS), returned instead
    of ``out``.
    """
    # Integers (int8 to uint16 ones come as they are: ndpass._SMALL_INTS) in double-float.
    precision = "df64" if x.dtype == np.float64 or x.dtype.kind in "iu" else "f32"
    if precision == "f32" or strategy is not None:
        passes = [replace(p, weights=f32_weights(p.weights)) for p in passes]
    if split and strategy is None and precision == "df64" and _cval_dominates(x, passes):
        # chain(x; c) = chain(x; 0) + c * chain(0; 1): every pass is linear in the array and
        # its constant together. Run apart, neither half's values are swamped by the other's
        # scale (double-float scales the data by the largest of them, cval included).
        c = next(p.cval for p in passes if MODES[p.mode] is BorderMode.CONSTANT)
        zero = [replace(p, cval=0.0) for p in passes]
        one = [replace(p, cval=1.0) for p in passes]
        inside = run_passes(x, zero, strategy=None, split=False)
        outside = run_passes(np.zeros_like(x), one, strategy=None, split=False)
        return inside + c * outside
    if strategy is None:
        from blurapp.gpu import ndpass

        lines = [
            ndpass.Line(p.axis, p.weights, Border(MODES[p.mode]), p.origin, cval=p.cval)
            for p in passes
        ]
        return ndpass.correlate1d_chain(
            np.ascontiguousarray(x), lines, precision=precision, out=out, lend=lend
        )
    if _one_pass_per_axis_2d(x, passes):
        # A 2-D image with one pass along each axis and one border: the outer product is one
        # rank-1 kernel, which the engine's strategy runs as it runs any (separable: its row
        # and column passes on the GPU).
        p0, p1 = sorted(passes, key=lambda p: p.axis % 2)
        kernel = np.outer(centred(p0.weights, p0.origin), centred(p1.weights, p1.origin))
        return _run_engine_nd(x, kernel, _engine_border(p0), (0, 0), strategy=strategy)
    for p in passes:
        x = _run_engine_pass(x, p, strategy=strategy)
    return x


def _engine_border(p: Pass) -> Border | None:
    return _gpu_border(p.mode, p.cval)


def _one_pass_per_axis_2d(x: np.ndarray, passes: Sequence[Pass]) -> bool:
    if x.ndim != 2 or len(passes) != 2:
        return False
    a, b = passes
    if {a.axis % 2, b.axis % 2} != {0, 1} or _engine_border(a) != _engine_border(b):
        return False
    # NaN under a zero tap spreads in scipy's 1-D passes; the 2-D engine skips zero taps.
    return _engine_border(a) is not None and bool(np.isfinite(x).all())


@lru_cache(maxsize=1)
def _max_side() -> int:
    from blurapp.gpu.device import get_device

    return int(get_device().limits.max_texture_side)


def _run_engine_pass(x: np.ndarray, p: Pass, *, strategy: str) -> np.ndarray:
    """One 1-D pass on the 2-D engine: the array's lines along ``p.axis`` become the rows of
    H×W images (H lines of W = the axis' length), cut to the adapter's texture side."""
    from blurapp.core.kernel import Kernel
    from blurapp.engine import filter_float

    dtype = x.dtype
    n = x.shape[p.axis]
    border = _gpu_border(p.mode, p.cval)
    before = 0
    if border is None:
        before, after = _reach(p.weights.size, p.origin)
        x = _pad_constant(x, p.axis, before, after, p.cval)
        border = Border(BorderMode.CLAMP)
    moved = np.moveaxis(x, p.axis, -1)
    shape = moved.shape
    lines = np.ascontiguousarray(moved, dtype=np.float32).reshape(-1, shape[-1])
    side = _max_side()
    if lines.shape[1] > side:
        raise UsageError(
            f"an axis of {lines.shape[1]} values is longer than this adapter's lines "
            f"({side}) without blurapp.gpu.ndpass"
        )
    kernel = Kernel.from_weights(centred(p.weights, p.origin)[np.newaxis, :], "ndimage")
    out = np.empty(lines.shape, np.float32)
    for start in range(0, lines.shape[0], side):
        block = lines[start : start + side]
        result, *_ = filter_float(block[:, :, np.newaxis], kernel, border, strategy)
        out[start : start + side] = result.reshape(block.shape)
    y = np.moveaxis(out.reshape(shape), -1, p.axis)
    if before or y.shape[p.axis] != n:
        y = _crop(y, p.axis, before, n)
    return np.ascontiguousarray(y, dtype=dtype)


# --------------------------------------------------------------------------- n-D correlation


def run_nd(
    x: np.ndarray,
    weights: np.ndarray,
    mode: str,
    cval: float,
    origins: Sequence[int],
    *,
    strategy: str | None,
    split: bool = True,
    lend: bool = False,
) -> np.ndarray:
    """scipy's ``correlate(x, weights, mode, cval, origins)`` (weights with x.ndim axes; taps
    within DBL_EPSILON of zero read nothing, so NaN under them does not spread) on ``x``
    (float32 or float64). Returns a new array of ``x``'s dtype.

    ``strategy=None`` runs on :mod:`blurapp.gpu.ndpass` (f32, or double-float for float64);
    a strategy name runs the 2-D engine with it (weights spanning at most two axes, f32).
    ``lend``: a float32 result may be the GPU buffer's own memory (as :func:`run_passes`).
    """
    precision = "df64" if x.dtype == np.float64 else "f32"
    if precision == "f32" or strategy is not None:
        weights = f32_weights(weights.reshape(-1)).reshape(weights.shape)
    if (
        split
        and strategy is None
        and precision == "df64"
        and _cval_dominates(x, [Pass(0, weights.reshape(-1), mode, cval, 0)])
    ):
        # As in run_passes: the correlation is linear in the array and its constant together.
        inside = run_nd(x, weights, mode, 0.0, origins, strategy=None, split=False)
        outside = run_nd(np.zeros_like(x), weights, mode, 1.0, origins, strategy=None, split=False)
        return inside + cval * outside
    if strategy is None:
        from blurapp.gpu import ndpass

        return ndpass.correlate_nd(
            np.ascontiguousarray(x), weights, Border(MODES[mode]), list(origins),
            precision=precision, cval=cval, lend=lend,
        )  # fmt: skip
    border = _gpu_border(mode, cval)
    befores: list[int] = []
    shape = x.shape
    if border is None:
        # Write the constant into the array as far as the kernel reaches on every axis.
        width = []
        for size, origin in zip(weights.shape, origins, strict=True):
            before, after = _reach(size, origin)
            width.append((max(before, 0), max(after, 0)))
            befores.append(max(before, 0))
        x = np.pad(x, width, mode="constant", constant_values=cval)
        border = Border(BorderMode.CLAMP)
    y = _run_engine_nd(x, weights, border, origins, strategy=strategy)
    if befores:
        y = y[tuple(slice(b, b + n) for b, n in zip(befores, shape, strict=True))]
    return np.ascontiguousarray(y, dtype=x.dtype)


def _run_engine_nd(
    x: np.ndarray, weights: np.ndarray, border: Border, origins: Sequence[int], *, strategy: str
) -> np.ndarray:
    """An n-D correlation on the 2-D engine: weights that span at most two axes, the other axes
    a stack of planes (four to an image, as its channels)."""
    from blurapp.core.kernel import Kernel
    from blurapp.engine import filter_float

    dtype = x.dtype
    spans = [ax for ax, size in enumerate(weights.shape) if size > 1]
    if len(spans) > 2:
        raise UsageError(
            f"weights spanning {len(spans)} axes need blurapp.gpu.ndpass, which is not installed"
        )
    free = [ax for ax in range(x.ndim - 1, -1, -1) if ax not in spans]
    while len(spans) < 2 and free:  # a 1-D or single-tap kernel: add free axes from the last
        spans.append(free.pop(0))
    if x.ndim == 1:
        k = centred(weights.reshape(-1), int(origins[0]))
        kernel = Kernel.from_weights(k[np.newaxis, :], "ndimage")
        result, *_ = filter_float(
            np.ascontiguousarray(x, np.float32)[np.newaxis, :, np.newaxis], kernel, border,
            strategy,
        )  # fmt: skip
        return np.asarray(result, dtype=dtype).reshape(x.shape)
    a, b = sorted(spans)
    w2 = weights.reshape([weights.shape[a], weights.shape[b]])
    rows = centred_rows(w2, int(origins[a]), int(origins[b]))
    kernel = Kernel.from_weights(rows, "ndimage")
    moved = np.moveaxis(x, (a, b), (-2, -1))
    shape = moved.shape
    planes = np.ascontiguousarray(moved, dtype=np.float32).reshape(-1, shape[-2], shape[-1])
    side = _max_side()
    if shape[-2] > side or shape[-1] > side:
        raise UsageError(
            f"planes of {shape[-1]}x{shape[-2]} are beyond this adapter's {side} without "
            "blurapp.gpu.ndpass"
        )
    out = np.empty(planes.shape, np.float32)
    for start in range(0, planes.shape[0], 4):
        group = planes[start : start + 4]
        image = np.ascontiguousarray(np.moveaxis(group, 0, -1))
        result, *_ = filter_float(image, kernel, border, strategy)
        out[start : start + 4] = np.moveaxis(np.asarray(result).reshape(image.shape), -1, 0)
    y = np.moveaxis(out.reshape(shape), (-2, -1), (a, b))
    return np.ascontiguousarray(y, dtype=dtype)


def centred_rows(w2: np.ndarray, origin_rows: int, origin_cols: int) -> np.ndarray:
    """A 2-D kernel with scipy's origins as zero rows and columns around it (see centred)."""
    rb, ra = _reach(w2.shape[0], origin_rows)
    cb, ca = _reach(w2.shape[1], origin_cols)
    hr, hc = max(rb, ra), max(cb, ca)
    out = np.zeros((2 * hr + 1, 2 * hc + 1))
    out[hr - rb : hr - rb + w2.shape[0], hc - cb : hc - cb + w2.shape[1]] = w2
    return out
