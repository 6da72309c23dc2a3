"""NaN, Inf and zero taps: DESIGN.md's NaN rule ("Numbers") for every strategy.

The rule, as ``scipy.ndimage.correlate`` applies it: an output is NaN where a tap with a
non-zero weight reads a NaN, or where a +inf and a -inf contribution meet there; it is +inf
(-inf) where every non-finite contribution is +inf (-inf). A contribution's sign is the sign of
the infinite input times the sign of its weight. Taps of zero weight are skipped, never
multiplied, so nothing under them reaches the output.

**Zero taps.** A weight is a zero tap when float32 cannot hold it as a normal number,
``|w| < FLOAT32_TINY`` = 2⁻¹²⁶ ≈ 1.18e-38: it rounds to zero or to a subnormal, and GPUs and
their compilers may flush subnormals (on lavapipe a subnormal weight counted in ``direct``'s
multiply but not in a baked 1-D pass, and the SVD of a kernel lost one). :func:`flush_tiny`
sets such weights to exactly 0 when a :class:`~blurapp.core.kernel.Kernel` is made, and the
separable factors likewise (:mod:`blurapp.core.separability`), so the float64 reference, every
GPU strategy and the masks below agree on which taps are zero. (``scipy.ndimage.correlate``
itself skips ``|w| <= 2.2e-16``, DBL_EPSILON, while ``correlate1d`` skips nothing; blurapp's
line is float32's, as its weights are float32 on the GPU.)

**Two 1-D passes** (``separable``, ``transpose``, the reference's two-pass route) reach the taps
``outer(column != 0, row != 0)``; that is the kernel's own set of non-zero taps for every exact
outer product, but not always when a rank-1 kernel is one only to float32 precision (a wide
Gaussian whose tail products underflow): :func:`factors_keep_zeros` tells.

**Exact non-finite outputs for the others.** A strategy whose arithmetic spreads a NaN or an Inf
beyond the taps that read it (``lowrank``'s sum of SVD pairs, ``fft``'s transforms, two 1-D
passes whose factors miss a zero) is run on the image with its non-finite values replaced by 0,
and :func:`overlay` writes the non-finite outputs over that result. Which value an output gets
depends only on the non-finite inputs under its non-zero taps, never on the finite ones, so it
is decided by three counts per output: the correlations of the indicator images ``isnan``,
``isposinf``, ``isneginf`` with the support masks ``w > 0`` and ``w < 0``, through the same
border mapping as the image. A constant border's value is finite (:class:`Border` refuses
others), so the indicators' border reads 0. The counts are integers; a count above 0.5 is a
non-finite contribution, so a correlation with an error below 0.5 decides exactly (see
:mod:`blurapp.gpu.nonfinite` for the GPU's).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np

__all__ = [
    "FLOAT32_TINY",
    "CountCorrelate",
    "factors_keep_zeros",
    "finite_max_abs",
    "flush_tiny",
    "is_finite_image",
    "overlay",
    "support_masks",
]

#: The smallest normal float32, 2**-126: weights below it in magnitude are zero taps.
FLOAT32_TINY = float(np.finfo(np.float32).tiny)

#: Correlate an H×W×k float32 stack of 0/1 indicator images with a (rows, cols) 0/1 mask, in
#: the image's border mode (a constant border reading 0), returning the H×W×k counts.
CountCorrelate = Callable[[np.ndarray, np.ndarray], np.ndarray]

Kind = Literal["nan", "+inf", "-inf"]
_KINDS: tuple[tuple[Kind, Callable[[np.ndarray], np.ndarray]], ...] = (
    ("nan", np.isnan),
    ("+inf", np.isposinf),
    ("-inf", np.isneginf),
)
# Rows checked at a time by is_finite_image: bounds its boolean temporary.
_CHECK_BYTES = 1 << 22


def flush_tiny(values: np.ndarray) -> np.ndarray:
    """``values`` (float64) with every non-zero magnitude below :data:`FLOAT32_TINY` set to 0.

    Returns ``values`` itself (as float64) when nothing is that small, else a new array.
    """
    a = np.asarray(values, dtype=np.float64)
    tiny = (np.abs(a) < FLOAT32_TINY) & (a != 0)
    if not tiny.any():
        return a
    return np.where(tiny, 0.0, a)


def factors_keep_zeros(weights: np.ndarray, column: np.ndarray, row: np.ndarray) -> bool:
    """Whether two 1-D passes with these factors, skipping zero taps, reach exactly the
    non-zero taps of ``weights``: ``outer(column != 0, row != 0) == (weights != 0)``.

    When they do, NaN and Inf spread through the two passes exactly as through one 2-D pass
    (and as DESIGN.md says); when not, some tap of zero weight is a product of two non-zero
    factors and lets a NaN through.
    """
    w = np.asarray(weights)
    c = np.asarray(column).reshape(-1)
    r = np.asarray(row).reshape(-1)
    if (c.size, r.size) != w.shape:
        return False
    return bool(np.array_equal(np.outer(c != 0, r != 0), w != 0))


def is_finite_image(x: np.ndarray) -> bool:
    """Whether every value of ``x`` is finite (integer pixels always are).

    Checks a few MiB of rows at a time, so a large image needs no image-sized temporary.
    """
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return True
    if x.ndim < 2 or x.size == 0:
        return bool(np.isfinite(x).all())
    row_bytes = max(1, x[0].nbytes)
    step = max(1, _CHECK_BYTES // row_bytes)
    return all(bool(np.isfinite(x[i : i + step]).all()) for i in range(0, x.shape[0], step))


def finite_max_abs(x: np.ndarray) -> tuple[bool, float]:
    """``(every value finite, the largest finite |value|)`` of a float array (0.0 when none),
    a few MiB of rows at a time: one pass for a finite image."""
    x = np.asarray(x)
    if x.size == 0:
        return True, 0.0
    blocks = [x] if x.ndim < 2 else None
    if blocks is None:
        step = max(1, _CHECK_BYTES // max(1, x[0].nbytes))
        blocks = [x[i : i + step] for i in range(0, x.shape[0], step)]
    finite, top = True, 0.0
    for block in blocks:
        m = float(np.abs(block).max())
        if not math.isfinite(m):
            finite = False
            kept = block[np.isfinite(block)]
            m = float(np.abs(kept).max()) if kept.size else 0.0
        top = max(top, m)
    return finite, top


def support_masks(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(w > 0, w < 0)`` as float64 0/1 masks of the kernel's shape (zero taps flushed)."""
    w = flush_tiny(weights)
    return (w > 0).astype(np.float64), (w < 0).astype(np.float64)


def _signals(x: np.ndarray) -> list[tuple[int, Kind]]:
    """The (channel, kind) pairs that occur in ``x``, in channel order."""
    out = []
    for c in range(x.shape[2]):
        plane = x[:, :, c]
        if bool(np.isfinite(plane).all()):
            continue
        out.extend((c, kind) for kind, test in _KINDS if bool(test(plane).any()))
    return out


def overlay(
    result: np.ndarray,
    x: np.ndarray,
    weights: np.ndarray,
    correlate: CountCorrelate,
    *,
    max_channels: int = 4,
) -> int:
    """Write NaN, +inf and -inf into ``result`` exactly where DESIGN.md's rule puts them.

    Arguments:
        result: H×W×C float array, modified in place: the filter's output computed from ``x``
            with its non-finite values replaced by 0 (so it is finite where the rule says so).
        x: H×W×C float image as the filter holds it, non-finite values included.
        weights: the kernel's (rows, cols) weights; their signs and zeros are what count.
        correlate: counts the indicators through the filter's border mapping
            (:data:`CountCorrelate`); its error must stay below 0.5 per count.
        max_channels: the most indicator images ``correlate`` takes at once (4: an RGBA image).

    Returns:
        How many times ``correlate`` was called: 0 for a finite image or a zero kernel; for a
        kernel of one sign, one per ``max_channels`` (channel, kind) pairs that occur in ``x``;
        for a kernel of both signs, the NaN pairs through ``w != 0`` and the Inf pairs through
        ``w > 0`` and ``w < 0`` each.
    """
    if result.shape != x.shape or x.ndim != 3:
        raise ValueError(f"result {result.shape} and image {x.shape} must be the same H×W×C")
    positive, negative = support_masks(weights)
    has_pos, has_neg = bool(positive.any()), bool(negative.any())
    signals = _signals(x)
    if not signals or not (has_pos or has_neg):
        return 0
    # (mask, its sign: +1, -1, or 0 for the whole support, which only NaN goes through)
    jobs: list[tuple[np.ndarray, int, list[tuple[int, Kind]]]] = []
    if has_pos and has_neg:
        nans = [s for s in signals if s[1] == "nan"]
        infs = [s for s in signals if s[1] != "nan"]
        if nans:
            jobs.append((positive + negative, 0, nans))
        if infs:
            jobs.append((positive, 1, infs))
            jobs.append((negative, -1, infs))
    else:
        jobs.append((positive, 1, signals) if has_pos else (negative, -1, signals))

    height, width = x.shape[:2]
    # Per channel: where a NaN, a +inf and a -inf contribution reach an output.
    reached: dict[tuple[int, str], np.ndarray] = {}
    calls = 0
    for mask, sign, chunk_signals in jobs:
        for start in range(0, len(chunk_signals), max_channels):
            chunk = chunk_signals[start : start + max_channels]
            stack = np.empty((height, width, len(chunk)), dtype=np.float32)
            tests = dict(_KINDS)
            for i, (c, kind) in enumerate(chunk):
                stack[:, :, i] = tests[kind](x[:, :, c])
            counts = np.asarray(correlate(stack, mask))
            calls += 1
            if counts.shape[:2] != (height, width) or counts.size != stack.size:
                raise ValueError(
                    f"count correlation gave shape {counts.shape} for indicators {stack.shape}"
                )
            counts = counts.reshape(stack.shape)
            for i, (c, kind) in enumerate(chunk):
                hit = counts[:, :, i] > 0.5
                if kind == "nan":
                    out = "nan"
                else:  # the contribution's sign: the input's times the weight's
                    out = "+inf" if (kind == "+inf") == (sign > 0) else "-inf"
                key = (c, out)
                reached[key] = hit if key not in reached else reached[key] | hit
    for c in sorted({c for c, _ in reached}):
        nan = reached.get((c, "nan"))
        pos = reached.get((c, "+inf"))
        neg = reached.get((c, "-inf"))
        plane = result[:, :, c]
        if pos is not None and neg is not None:
            meet = pos & neg  # +inf + -inf
            nan = meet if nan is None else nan | meet
        if pos is not None:
            plane[pos] = np.inf
        if neg is not None:
            plane[neg] = -np.inf
        if nan is not None:
            plane[nan] = np.nan
    return calls
