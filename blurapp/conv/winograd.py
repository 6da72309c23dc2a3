"""Winograd's minimal filtering F(m×m, 3×3): its transform matrices and their unrolled WGSL.

A 3×3 correlation over an (m+2)×(m+2) input tile d gives the m×m outputs
``Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A``: α² = (m+2)² multiplies per tile and channel instead of
9·m² (F(2×2,3×3): 16 against 36, 2.25× fewer; F(4×4,3×3): 36 against 144, 4× fewer). Summed
over the input channels the ⊙ becomes α² independent GEMMs, one per transformed position.
The matrices are Lavin & Gray's (arXiv:1509.09308), interpolation points 0, ±1 (F(2,3)) and
0, ±1, ±2 (F(4,3)); the larger points of F(4,3) amplify rounding (its coefficients reach 8 and
1/24), which the tests measure. The shaders get the transforms as straight-line code with the
zero coefficients left out (:func:`transform_code`), so no loop indexes a private array: on
lavapipe a dynamically indexed private array is a spill to memory.
"""

from __future__ import annotations

import numpy as np

__all__ = ["WINOGRAD_TILES", "transform_code", "winograd_matrices"]

WINOGRAD_TILES: tuple[int, ...] = (2, 4)

_MATRICES: dict[int, tuple[list[list[float]], list[list[float]], list[list[float]]]] = {
    2: (
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]],
    ),
    4: (
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        [
            [1 / 4, 0, 0],
            [-1 / 6, -1 / 6, -1 / 6],
            [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6],
            [1 / 24, -1 / 12, 1 / 6],
            [0, 0, 1],
        ],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    ),
}


def winograd_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Bᵀ, G, Aᵀ)`` of F(m×m, 3×3) as float64 arrays (α×α, α×3, m×α; α = m + 2)."""
    if m not in _MATRICES:
        raise ValueError(f"F({m}×{m},3×3) is not one of {WINOGRAD_TILES}")
    bt, g, at = _MATRICES[m]
    return np.array(bt, float), np.array(g, float), np.array(at, float)


def _linear(terms: list[tuple[float, str]]) -> str:
    """``Σ c·name`` as WGSL, ±1 without a multiply; ``0.0`` when every coefficient is zero."""
    out = ""
    for c, name in terms:
        if c == 0:
            continue
        if abs(c) == 1:
            piece = name
        else:
            piece = f"{abs(float(np.float32(c)))!r} * {name}"
        if not out:
            out = piece if c > 0 else f"-{piece}"
        else:
            out += f" + {piece}" if c > 0 else f" - {piece}"
    return out or "0.0"


def transform_code(left: np.ndarray, x: str, out: str, tmp: str) -> list[str]:
    """WGSL lines computing ``out = L · X · Lᵀ`` from scalars named ``{x}_{i}_{j}``.

    Arguments:
        left: L, a×r.
        x: prefix of the r×r inputs (``x_0_0`` …), already declared.
        out: prefix of the a×a results, declared here with ``let``.
        tmp: prefix of the a×r intermediate ``L · X``.

    Returns:
        One ``let`` statement per line.
    """
    a, r = left.shape
    lines = [
        f"let {tmp}_{i}_{j} = {_linear([(left[i, k], f'{x}_{k}_{j}') for k in range(r)])};"
        for i in range(a)
        for j in range(r)
    ]
    lines += [
        f"let {out}_{i}_{j} = {_linear([(left[j, k], f'{tmp}_{i}_{k}') for k in range(r)])};"
        for i in range(a)
        for j in range(a)
    ]
    return lines
