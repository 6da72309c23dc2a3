"""The float64 numpy reference for n-D correlation along any axis: the oracle of the GPU's n-D
passes (blurapp.gpu.ndpass) and what their float64 path runs where double-float is unavailable.

Semantics are scipy.ndimage's: :func:`correlate1d` is ``scipy.ndimage.correlate1d`` (every tap
multiplied, zero weights included, so a NaN under a zero tap spreads as it does there), and
:func:`correlate_nd` is ``scipy.ndimage.correlate`` (taps whose weight is within DBL_EPSILON of
zero are skipped, as scipy's footprint does, so a NaN under them does not spread). The border of
each axis is a :class:`~blurapp.core.borders.Border`; the constant outside the array may be any
float64 (NaN and ±inf too) through ``cval``, which Border itself refuses (the CLI's rule).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from blurapp.core.borders import Border, BorderMode

__all__ = [
    "DBL_EPSILON",
    "Line",
    "correlate1d",
    "correlate1d_chain",
    "correlate_nd",
    "finite_max",
    "nd_centres",
    "normalise_axis",
]

#: scipy.ndimage.correlate skips taps with |w| <= DBL_EPSILON (its footprint), not only zeros.
DBL_EPSILON = float(np.finfo(np.float64).eps)


@dataclass(frozen=True, eq=False)
class Line:
    """One 1-D correlation pass along an axis, as ``scipy.ndimage.correlate1d`` runs it.

    Attributes:
        axis: the axis it runs along (negative counts from the end).
        weights: the 1-D float64 weights (copied, read-only); non-empty.
        border: the border of that axis.
        origin: shifts the kernel's centre: output ``i`` reads ``x[i + k - centre]`` with
            ``centre = len(weights) // 2 + origin``, which must lie in ``[0, len(weights))``.
        cval: the value outside the array for ``BorderMode.CONSTANT``, any float64 (NaN and
            ±inf included); ``None`` takes ``border.value``. Ignored by the other modes.
    """

    axis: int
    weights: np.ndarray
    border: Border
    origin: int = 0
    cval: float | None = None

    def __post_init__(self) -> None:
        if np.ndim(self.weights) != 1:
            raise ValueError(f"Line weights must be 1-D, got shape {np.shape(self.weights)}")
        w = np.array(self.weights, dtype=np.float64)
        if w.size == 0:
            raise ValueError("Line weights must not be empty")
        w.setflags(write=False)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "border", Border.parse(self.border))
        if isinstance(self.axis, bool) or not isinstance(self.axis, (int, np.integer)):
            raise TypeError(f"Line axis must be an integer, got {self.axis!r}")
        object.__setattr__(self, "axis", int(self.axis))
        if isinstance(self.origin, bool) or not isinstance(self.origin, (int, np.integer)):
            raise TypeError(f"Line origin must be an integer, got {self.origin!r}")
        origin = int(self.origin)
        object.__setattr__(self, "origin", origin)
        centre = w.size // 2 + origin
        if not 0 <= centre < w.size:
            raise ValueError(
                f"invalid origin {origin} for {w.size} weights: the centre "
                f"len(weights) // 2 + origin = {centre} must lie in [0, {w.size})"
            )
        if self.cval is not None:
            object.__setattr__(self, "cval", float(self.cval))

    @property
    def centre(self) -> int:
        """The tap that sits on the output element: ``len(weights) // 2 + origin``."""
        return self.weights.size // 2 + self.origin

    @property
    def constant(self) -> float:
        """The value read outside the array (meaningful for ``BorderMode.CONSTANT`` only)."""
        if self.border.mode is not BorderMode.CONSTANT:
            return 0.0
        return self.border.value if self.cval is None else self.cval


def _extended(
    x: np.ndarray, axis: int, before: int, after: int, border: Border, cval: float
) -> np.ndarray:
    """``x`` extended by ``before``/``after`` elements along ``axis`` under ``border``
    (reflections repeat, so extensions longer than the axis are right too)."""
    n = x.shape[axis]
    idx = border.map_indices(np.arange(-before, n + after), n)
    out = np.take(x, np.where(idx < 0, 0, idx), axis=axis)
    if border.mode is BorderMode.CONSTANT:
        shape = [1] * x.ndim
        shape[axis] = idx.size
        out = np.where((idx < 0).reshape(shape), cval, out)
    return out


def normalise_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end); numpy's AxisError otherwise."""
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def correlate1d(x: np.ndarray, line: Line) -> np.ndarray:
    """``scipy.ndimage.correlate1d`` in float64: every tap multiplied (zeros too).

    Arguments:
        x: any real array (ndim >= 1), computed in float64.
        line: the pass (axis, weights, border, origin, cval).

    Returns:
        The float64 result, of ``x``'s shape.
    """
    x = np.asarray(x, dtype=np.float64)
    axis = normalise_axis(line.axis, x.ndim)
    w = line.weights
    centre = line.centre
    before, after = centre, w.size - 1 - centre
    ext = _extended(x, axis, before, after, line.border, line.constant)
    n = x.shape[axis]
    out = np.zeros(x.shape, dtype=np.float64)
    index: list[slice] = [slice(None)] * x.ndim
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(w.size):
            index[axis] = slice(k, k + n)
            out += w[k] * ext[tuple(index)]
    return out


def correlate1d_chain(x: np.ndarray, lines: Sequence[Line]) -> np.ndarray:
    """The passes of ``lines`` one after another (float64 throughout), as
    :func:`correlate1d` each."""
    out = np.asarray(x, dtype=np.float64)
    for line in lines:
        out = correlate1d(out, line)
    return out if lines else out.copy()


def nd_centres(shape: Sequence[int], origins: Sequence[int]) -> tuple[int, ...]:
    """Each axis's centre tap, ``shape[a] // 2 + origins[a]``; ValueError when one falls outside
    the weights (scipy's origin range)."""
    centres = []
    for a, (size, origin) in enumerate(zip(shape, origins, strict=True)):
        c = int(size) // 2 + int(origin)
        if not 0 <= c < size:
            raise ValueError(
                f"invalid origin {origin} on axis {a} for {size} weights: the centre "
                f"{size} // 2 + origin = {c} must lie in [0, {size})"
            )
        centres.append(c)
    return tuple(centres)


def correlate_nd(
    x: np.ndarray,
    weights: np.ndarray,
    borders: Sequence[Border] | Border,
    origins: Sequence[int] | int = 0,
    *,
    cval: float | None = None,
) -> np.ndarray:
    """``scipy.ndimage.correlate`` in float64, with a border per axis.

    Taps with ``|w| <= DBL_EPSILON`` are skipped (scipy's footprint): a NaN or Inf under them
    does not spread. The corners of mixed borders are the per-axis extensions composed, axis 0
    first.

    Arguments:
        x: any real array (ndim >= 1).
        weights: ``x.ndim``-D weights, any sizes (odd or even, larger than ``x``).
        borders: one Border for every axis, or one per axis.
        origins: per axis (or one for all): the centre is ``weights.shape[a] // 2 + origin``.
        cval: the constant of CONSTANT axes (any float64, NaN and ±inf too); ``None`` takes
            each border's own value.

    Returns:
        The float64 result, of ``x``'s shape.
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != x.ndim:
        raise ValueError(f"weights have {w.ndim} dimensions, the array {x.ndim}")
    if w.size == 0:
        raise ValueError("weights must not be empty")
    ndim = x.ndim
    borders = _per_axis_borders(borders, ndim)
    origins = _per_axis(origins, ndim, "origins")
    centres = nd_centres(w.shape, origins)
    ext = x
    for a in range(ndim):
        b = borders[a]
        value = b.value if cval is None or b.mode is not BorderMode.CONSTANT else cval
        ext = _extended(ext, a, centres[a], w.shape[a] - 1 - centres[a], b, value)
    out = np.zeros(x.shape, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        for tap in zip(*np.nonzero(np.abs(w) > DBL_EPSILON), strict=True):
            index = tuple(slice(k, k + n) for k, n in zip(tap, x.shape, strict=True))
            out += w[tap] * ext[index]
    return out


def _per_axis(values: Sequence[int] | int, ndim: int, what: str) -> tuple[int, ...]:
    if isinstance(values, (int, np.integer)):
        return (int(values),) * ndim
    values = tuple(int(v) for v in values)
    if len(values) != ndim:
        raise ValueError(f"{what} must have one value per axis ({ndim}), got {len(values)}")
    return values


def _per_axis_borders(borders: Sequence[Border] | Border, ndim: int) -> tuple[Border, ...]:
    if isinstance(borders, (Border, BorderMode, str)):
        return (Border.parse(borders),) * ndim
    out = tuple(Border.parse(b) for b in borders)
    if len(out) != ndim:
        raise ValueError(f"borders must have one per axis ({ndim}), got {len(out)}")
    return out


def finite_max(a: np.ndarray) -> float:
    """max |a| over its finite values (0.0 when there are none); an integer array's from its
    extremes (no float copy, and no abs overflow at int8's -128), a bool array's 0 or 1."""
    a = np.asarray(a)
    if a.size and a.dtype.kind in "biu":
        return float(max(abs(int(a.min())), abs(int(a.max()))))
    if a.size and a.dtype.kind == "f":
        # From the extremes where both are finite (no |a| copy: 1 M float64 0.3 against 1.0 ms).
        hi, lo = float(a.max()), float(a.min())
        if math.isfinite(hi) and math.isfinite(lo):
            return max(0.0, hi, -lo)  # 0.0 first: -0.0 comes out as 0.0
    a = np.abs(a)
    finite = a[np.isfinite(a)] if not np.all(np.isfinite(a)) else a
    return float(finite.max()) if finite.size else 0.0
