"""The ``lowrank`` strategy's choice of k separable pairs, and the output error it promises.

A kernel K with singular values s_0 >= s_1 >= ... is the sum of rank-1 pairs s_i u_i v_iᵀ; the
first k of them, K_k, are its best rank-k approximation. Correlating with K_k instead of K
changes each output by the correlation of the input with the residual R = K - K_k, so::

    max |output error| <= ||R||_1 * max |x|        (||R||_1 = sum of |residual weights|)

where max |x| runs over the image and, in constant border mode, the constant. That bound is
rigorous (a weighted sum of at most ||R||_1 units of |x|), cheap to compute, and what lowrank
promises: in the normalised units of blurapp's pixels (the data range is [0, 1], so
max |x| <= 1 unless the border constant or float input is larger), the error is at most
``error`` = ||K - K_k||_1, plus the float32 rounding every GPU strategy has.

k is the kernel's numerical rank when that is at most :data:`EXACT_RANK` (unsharp masks are
rank 2, LoG rank <= 3, a disk of radius 8 rank 7: exact to round-off), otherwise the smallest k
whose error is within the tolerance (``--tolerance E``; default :data:`DEFAULT_TOLERANCE`, half
an 8-bit step: an 8-bit output moves by less than half a step). More than :data:`MAX_TERMS`
pairs is refused: direct, tiled or fft are faster there.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from blurapp.core.errors import UsageError

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

__all__ = [
    "DEFAULT_TOLERANCE",
    "EXACT_RANK",
    "MAX_TERMS",
    "LowRank",
    "check_tolerance",
    "low_rank",
    "residual_l1",
    "why_not",
]

#: Half an 8-bit step of the [0, 1] data range: 8-bit outputs move by less than half a step.
DEFAULT_TOLERANCE = 0.5 / 255
#: Up to this numerical rank every pair is used (exact to round-off, whatever the tolerance).
EXACT_RANK = 8
#: The most separable pairs lowrank runs (2 passes each).
MAX_TERMS = 32


def check_tolerance(tolerance: float | None) -> float:
    """``tolerance`` as a float (``None``: the default), or UsageError naming the bad value."""
    if tolerance is None:
        return DEFAULT_TOLERANCE
    if isinstance(tolerance, bool):
        raise UsageError(f"tolerance must be a number > 0, got {tolerance!r}")
    try:
        value = float(tolerance)
    except (TypeError, ValueError):
        raise UsageError(f"tolerance must be a number > 0, got {tolerance!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise UsageError(f"tolerance must be a finite number > 0, got {tolerance!r}")
    return value


@functools.lru_cache(maxsize=32)
def residual_l1(kernel: Kernel) -> tuple[float, ...]:
    """``||K - K_k||_1`` (sum of the absolute residual weights) for k = 0 .. min(n, MAX_TERMS+1).

    Element k bounds the output error of the first k pairs per unit of max |x| (module
    docstring). The residual is updated one pair at a time: O(k · rows · cols).
    """
    sep = kernel.separability
    residual = np.array(kernel.weights, dtype=np.float64)
    errors = [float(np.abs(residual).sum())]
    for i in range(min(len(sep.singular_values), MAX_TERMS + 1)):
        residual -= sep.singular_values[i] * np.outer(sep.u[:, i], sep.vt[i])
        errors.append(float(np.abs(residual).sum()))
    return tuple(errors)


@dataclass(frozen=True, eq=False)
class LowRank:
    """The pairs lowrank runs for one kernel and tolerance (build it with :func:`low_rank`).

    Attributes:
        k: number of separable pairs (at least 1; a zero kernel gets one zero pair).
        error: ``||K - K_k||_1``: the promised bound on |output error| per unit of max |x|.
        tolerance: the tolerance asked for.
        exact: k is the kernel's whole numerical rank (error at round-off level).
        rank: the kernel's numerical rank.
        columns, rows: the k column (rows,) and row (cols,) factors, float64; their outer
            products sum to K_k.
    """

    k: int
    error: float
    tolerance: float
    exact: bool
    rank: int
    columns: tuple[np.ndarray, ...]
    rows: tuple[np.ndarray, ...]

    def describe(self) -> str:
        """One line: ``"lowrank k=4, error ≤ 3.1e-03"`` (and "exact rank" when it is)."""
        what = "the exact rank" if self.exact else f"tolerance {self.tolerance:.3g}"
        return f"lowrank k={self.k} ({what}), error ≤ {self.error:.2g}"


def _smallest_k(errors: tuple[float, ...], tolerance: float) -> int | None:
    for k in range(1, len(errors)):
        if k > MAX_TERMS:
            break
        if errors[k] <= tolerance:
            return k
    return None


def why_not(kernel: Kernel, tolerance: float | None = None) -> str | None:
    """Why lowrank cannot run ``kernel`` within ``tolerance`` (one line), or ``None``."""
    tol = check_tolerance(tolerance)
    rank = kernel.separability.rank
    if rank <= EXACT_RANK:
        return None
    if _smallest_k(residual_l1(kernel), tol) is None:
        return (
            f"lowrank would need more than {MAX_TERMS} separable pairs to keep "
            f"{kernel.name} (rank {rank}) within tolerance {tol:.3g}: use direct, tiled, "
            "cpu or a larger --tolerance"
        )
    return None


def low_rank(kernel: Kernel, tolerance: float | None = None) -> LowRank:
    """The pairs lowrank runs for ``kernel`` within ``tolerance`` and the error it promises.

    Arguments:
        kernel: the kernel (correlation weights).
        tolerance: the largest error allowed per unit of max |x| (``None``: the default).

    Raises:
        UsageError: a bad tolerance.
        StrategyError: more than MAX_TERMS pairs would be needed (:func:`why_not`'s line).
    """
    from blurapp.core.errors import StrategyError

    tol = check_tolerance(tolerance)
    problem = why_not(kernel, tol)
    if problem:
        raise StrategyError(problem)
    sep = kernel.separability
    errors = residual_l1(kernel)
    exact = sep.rank <= EXACT_RANK
    if exact:
        k = max(1, sep.rank)
    else:
        found = _smallest_k(errors, tol)
        assert found is not None  # why_not said so
        k = found
    pairs = sep.terms(k)
    return LowRank(
        k=k,
        error=errors[min(k, len(errors) - 1)],
        tolerance=tol,
        exact=exact,
        rank=sep.rank,
        columns=tuple(c for c, _ in pairs),
        rows=tuple(r for _, r in pairs),
    )
