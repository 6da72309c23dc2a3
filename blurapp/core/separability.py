"""Separability of a kernel: its SVD, numerical rank, rank-1 factors and best rank-k approximations.

A kernel W (rows × cols) with singular values s[0] >= s[1] >= ... is treated as rank r when
exactly r singular values exceed ``tolerance * s[0]``, where the *relative* tolerance is::

    tolerance = max(rows, cols) * eps_float32        (eps_float32 = 2**-23 ≈ 1.19e-7)

Why this value: the GPU accumulates in f32, so a kernel whose weights were rounded to float32
(a Gaussian stored as f32, say) must still count as separable. Rounding every weight to f32
perturbs W by a matrix E with ||E||_2 <= ||E||_F <= eps_f32/2 * ||W||_F, and the SVD of an
n×n matrix carries about n·eps of round-off; scaling by the side keeps both below the threshold
while real second components (Laplacian, disc, a slanted motion line: 1e-2 or more) stay far
above it. An all-zero kernel has rank 0 and no factors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from blurapp.core.errors import KernelSpecError
from blurapp.core.nonfinite import flush_tiny

#: float32 machine epsilon; the unit of the rank tolerance (see the module docstring).
EPS_F32 = float(np.finfo(np.float32).eps)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Separability:
    """The SVD of a kernel and what follows from it (build it with :func:`analyze`).

    ``column``/``row`` are set only for rank 1: ``np.outer(column, row)`` is the best rank-1
    approximation of the weights, equal to them to ~1e-15 relative when they are an exact
    outer product, and to ``relative_error(1)`` (below ``tolerance``) otherwise. The singular
    value is split as sqrt(s0) into both factors; the sign is chosen so that the factor with
    the larger |sum| has a positive sum (smoothing factors positive, e.g. Sobel y gives the
    column [-1, 0, 1]·c and the row [1, 2, 1]·c), or, when both sums vanish, so that the
    largest-magnitude entry of the column is positive.
    """

    singular_values: np.ndarray  # descending, length min(rows, cols)
    rank: int  # numerical rank under `tolerance`
    tolerance: float  # relative to s[0]
    column: np.ndarray | None  # rank 1 only: (rows,)
    row: np.ndarray | None  # rank 1 only: (cols,)
    # Left/right singular vectors and the tail energies sum(s[k:]**2), kept for approximations.
    u: np.ndarray = field(repr=False)
    vt: np.ndarray = field(repr=False)
    _tail: np.ndarray = field(repr=False)

    @property
    def is_separable(self) -> bool:
        """True when the kernel is (numerically) one outer product: rank 1."""
        return self.rank == 1

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols) of the analysed weights."""
        return (self.u.shape[0], self.vt.shape[1])

    def _check_k(self, k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
            raise ValueError(f"rank k must be a non-negative integer, got {k!r}")
        return min(int(k), len(self.singular_values))

    def terms(self, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The first k separable pairs (column, row), each scaled by sqrt of its singular value.

        Arguments:
            k: number of pairs (clipped to min(rows, cols)).
        Returns:
            A list whose outer products sum to ``approximation(k)``.
        """
        k = self._check_k(k)
        out = []
        for i in range(k):
            r = np.sqrt(self.singular_values[i])
            out.append((self.u[:, i] * r, self.vt[i] * r))
        return out

    def approximation(self, k: int) -> np.ndarray:
        """Best rank-k approximation of the weights (Eckart–Young), float64 (rows, cols).

        Arguments:
            k: the rank; 0 gives zeros, k >= min(rows, cols) gives the weights back (to round-off).
        """
        k = self._check_k(k)
        return (self.u[:, :k] * self.singular_values[:k]) @ self.vt[:k]

    def relative_error(self, k: int) -> float:
        """``||W - W_k||_F / ||W||_F`` from the singular values; 0 at full rank and for W = 0.

        Non-increasing in k by construction (sums of non-negative tails).
        """
        k = self._check_k(k)
        total = self._tail[0]
        if total == 0.0:
            return 0.0
        return float(np.sqrt(self._tail[k] / total))


def _orient(col: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fix the joint sign of a rank-1 pair (see :class:`Separability`)."""
    sc, sr = float(col.sum()), float(row.sum())
    norm = float(np.linalg.norm(col))  # == ||row|| == sqrt(s0)
    # A sum below round-off level counts as zero: a derivative factor has no usable sign.
    eps = 1e-9 * norm * np.sqrt(max(col.size, row.size))
    if max(abs(sc), abs(sr)) > eps:
        sign = sc if abs(sc) >= abs(sr) else sr
    else:
        sign = col[int(np.argmax(np.abs(col)))]
    if sign < 0:
        col, row = -col, -row
    # Adding +0.0 turns -0.0 into 0.0, so printed factors show no "-0".
    return col + 0.0, row + 0.0


def analyze(weights: np.ndarray) -> Separability:
    """SVD analysis of a 2-D kernel.

    Arguments:
        weights: finite real 2-D array (rows, cols), any size from 1×1; magnitudes below
            float32's normal range (1.18e-38) count as 0, and so do such factor entries.
    Returns:
        A :class:`Separability` with singular values, numerical rank, tolerance and, for rank 1,
        the column and row factors.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.size == 0:
        raise KernelSpecError(f"kernel weights must be a non-empty 2-D array, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise KernelSpecError("kernel weights must be finite (found NaN or inf)")
    # Weights below float32's normal range are zero taps (blurapp.core.nonfinite), as a Kernel's
    # already are.
    w = flush_tiny(w)
    rows, cols = w.shape
    tolerance = max(rows, cols) * EPS_F32
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    # Energies from the smallest singular value upwards: each step adds a non-negative term,
    # so tail[k] can never grow with k, whatever the rounding.
    tail = np.zeros(len(s) + 1)
    for i in range(len(s) - 1, -1, -1):
        tail[i] = tail[i + 1] + s[i] * s[i]
    if s[0] == 0.0:
        rank = 0
    else:
        rank = int(np.count_nonzero(s > tolerance * s[0]))
    column = row = None
    if rank == 1:
        r = np.sqrt(s[0])
        column, row = _orient(u[:, 0] * r, vt[0] * r)
        # A row or column of zero weights gets an exact zero factor, not round-off: two passes
        # that skip zero taps then reach exactly the 2-D kernel's non-zero taps, so NaN and Inf
        # spread as in one 2-D pass (DESIGN.md "Numbers").
        column = np.where(np.any(w != 0, axis=1), column, 0.0)
        row = np.where(np.any(w != 0, axis=0), row, 0.0)
        # A factor float32 cannot hold as a normal number is a zero tap, as such a weight is
        # (blurapp.core.nonfinite): the f32 passes and the float64 reference skip the same taps.
        column, row = _readonly(flush_tiny(column)), _readonly(flush_tiny(row))
    return Separability(
        singular_values=_readonly(s),
        rank=rank,
        tolerance=tolerance,
        column=column,
        row=row,
        u=_readonly(u),
        vt=_readonly(vt),
        _tail=_readonly(tail),
    )
