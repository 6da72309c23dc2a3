"""The float64 reference filter: the oracle that every GPU strategy and border mode must match."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from blurapp.core.borders import Border, BorderMode
from blurapp.core.checks import check_now
from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.nonfinite import factors_keep_zeros, flush_tiny
from blurapp.core.numbers import RANGE_MODES, RangeMode, check_image, from_float, to_float

__all__ = ["correlate", "correlate_float"]

# Rows of output accumulated at a time: keeps the accumulator and the tap product in cache
# instead of streaming the whole image through memory once per tap (about 3x faster here).
_BLOCK_BYTES = 1 << 19

# Taps between two calls of the thread's installed check (core/checks): a block of taps is a
# few milliseconds, so a large kernel's run stops soon after a cancel.
_TAPS_PER_CHECK = 64

# Largest |outer(column, row) - weights| / max|weights| for which the two 1-D passes stand in
# for the 2-D sum in the oracle.
_EXACT_RTOL = 1e-13


class _Separability(Protocol):
    rank: int
    column: np.ndarray | None
    row: np.ndarray | None


class _KernelLike(Protocol):
    """What the reference needs from a kernel (blurapp.core.kernel.Kernel provides it)."""

    @property
    def weights(self) -> np.ndarray: ...

    @property
    def separability(self) -> _Separability: ...


def _pad(
    x: np.ndarray, axis: int, before: int, after: int, border: Border, fill: float
) -> np.ndarray:
    """Extend ``x`` along ``axis`` by ``before``/``after`` samples as ``border`` says.

    ``fill`` is what a constant border reads (the border value, or for an intermediate image
    of a separable pass, the value a pass makes out of it).
    """
    n = x.shape[axis]
    if border.mode is BorderMode.CONSTANT:
        shape = list(x.shape)
        shape[axis] = n + before + after
        out = np.full(shape, fill, dtype=np.float64)
        inner = [slice(None)] * x.ndim
        inner[axis] = slice(before, before + n)
        out[tuple(inner)] = x
        return out
    idx = border.map_indices(np.arange(-before, n + after), n)
    return np.take(x, idx, axis=axis)


def _accumulate(
    padded: np.ndarray, taps: list[tuple[int, int, float]], out: np.ndarray
) -> np.ndarray:
    """``out[i, j] = sum(w * padded[i + u, j + v])`` over ``taps`` of ``(u, v, w)``.

    Loops over row blocks, then taps: every numpy call works on a cache-sized slab.
    """
    rows, cols, channels = out.shape
    if not taps:
        out.fill(0.0)
        return out
    block = max(1, _BLOCK_BYTES // max(1, cols * channels * 8))
    tmp = np.empty((min(block, rows), cols, channels))
    # NaN and Inf in the image are data (they propagate as in scipy), not warnings to print.
    with np.errstate(invalid="ignore", over="ignore"):
        _accumulate_blocks(padded, taps, out, tmp, block)
    return out


def _accumulate_blocks(
    padded: np.ndarray,
    taps: list[tuple[int, int, float]],
    out: np.ndarray,
    tmp: np.ndarray,
    block: int,
) -> None:
    rows, cols = out.shape[:2]
    for r0 in range(0, rows, block):
        r1 = min(rows, r0 + block)
        acc = out[r0:r1]
        t = tmp[: r1 - r0]
        u, v, w = taps[0]
        np.multiply(padded[r0 + u : r1 + u, v : v + cols], w, out=acc)
        for i, (u, v, w) in enumerate(taps[1:], 1):
            if i % _TAPS_PER_CHECK == 0:
                check_now()  # a caller's cancel (the window's next setting) within a few ms
            np.multiply(padded[r0 + u : r1 + u, v : v + cols], w, out=t)
            acc += t


def _correlate_2d(x: np.ndarray, weights: np.ndarray, border: Border) -> np.ndarray:
    kr, kc = weights.shape
    ar, ac = kr // 2, kc // 2
    padded = _pad(x, 0, ar, kr - 1 - ar, border, border.value)
    padded = _pad(padded, 1, ac, kc - 1 - ac, border, border.value)
    # Zero taps are skipped (Sobel, Laplacian, motion blur are mostly zeros).
    taps = [
        (u, v, float(weights[u, v])) for u in range(kr) for v in range(kc) if weights[u, v] != 0
    ]
    return _accumulate(padded, taps, np.empty(x.shape))


def _correlate_separable(
    x: np.ndarray, column: np.ndarray, row: np.ndarray, border: Border
) -> np.ndarray:
    """Row factor over columns, then column factor over rows.

    Index-mapping borders pad each axis independently, so padding per pass equals padding the
    2-D input. For a constant border the 2-D filter reads V in whole padded rows; the row pass
    turns such a row into V * sum(row), so that is what the intermediate is padded with.
    """
    kc, kr = row.size, column.size
    ac, ar = kc // 2, kr // 2

    padded = _pad(x, 1, ac, kc - 1 - ac, border, border.value)
    row_taps = [(0, v, float(row[v])) for v in range(kc) if row[v] != 0]
    mid = _accumulate(padded, row_taps, np.empty(x.shape))
    del padded

    fill = border.value * float(np.sum(row))
    padded = _pad(mid, 0, ar, kr - 1 - ar, border, fill)
    del mid
    col_taps = [(u, 0, float(column[u])) for u in range(kr) if column[u] != 0]
    return _accumulate(padded, col_taps, np.empty(x.shape))


def _factors_exact(weights: np.ndarray, column: np.ndarray, row: np.ndarray) -> bool:
    scale = float(np.max(np.abs(weights)))
    error = float(np.max(np.abs(np.outer(column, row) - weights)))
    return error <= _EXACT_RTOL * scale


def correlate_float(
    x: np.ndarray,
    kernel: Kernel | _KernelLike,
    border: Border | str,
    *,
    separable: bool | None = None,
) -> np.ndarray:
    """Correlate normalised float pixels with a kernel, accumulating in float64.

    ``out[i, j] = sum_{u,v} w[u, v] * x[map(i + u - ar), map(j + v - ac)]`` with the anchor
    ``(ar, ac) = (rows // 2, cols // 2)`` and ``map`` the border's index mapping. Zero weights
    are skipped, so a NaN or inf pixel under a zero tap does not spread (DESIGN.md "Numbers");
    a weight float32 cannot hold as a normal number (|w| < 1.18e-38) is a zero tap, as on the
    GPU (:mod:`blurapp.core.nonfinite`).

    Arguments:
        x: H×W×C float array in normalised units.
        kernel: a ``Kernel`` (anything with ``.weights`` and ``.separability``).
        border: a ``Border`` or a border name.
        separable: ``None`` runs a kernel as two 1-D passes when its rank-1 factors give back
            the weights to 1e-13 relative and reach exactly its non-zero taps
            (:func:`~blurapp.core.nonfinite.factors_keep_zeros`: NaN then spreads as in one 2-D
            pass), else as one 2-D pass; ``False`` forces the 2-D pass; ``True`` forces the two
            passes with the rank-1 factors, even approximate ones (``StrategyError`` when the
            rank is not 1).

    Returns:
        A new C-contiguous float64 H×W×C array.

    Example:
        >>> import numpy as np
        >>> from blurapp.core.kernel import Kernel
        >>> x = np.arange(3.0).reshape(1, 3, 1)
        >>> correlate_float(x, Kernel.from_weights([[1.0, 0.0, 0.0]]), "wrap")[0, :, 0]
        array([2., 0., 1.])
    """
    border = Border.parse(border)
    x = np.asarray(x)
    if x.ndim != 3 or x.dtype.kind != "f":
        raise ValueError(f"correlate_float needs an H×W×C float array, got {x.dtype} {x.shape}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"correlate_float needs a non-empty image, got shape {x.shape}")
    x = np.ascontiguousarray(x, dtype=np.float64)
    weights = flush_tiny(kernel.weights)
    if weights.ndim != 2 or 0 in weights.shape:
        raise ValueError(f"kernel weights must be a non-empty 2-D array, got {weights.shape}")

    if separable is not False:
        sep = kernel.separability
        is_rank1 = sep.rank == 1 and sep.column is not None and sep.row is not None
        if separable and not is_rank1:
            raise StrategyError(f"kernel of rank {sep.rank} is not separable; use a 2-D strategy")
        if is_rank1:
            column = flush_tiny(sep.column).reshape(-1)
            row = flush_tiny(sep.row).reshape(-1)
            if (column.size, row.size) != weights.shape:
                raise ValueError(
                    f"separable factors {column.size}×{row.size} do not match weights "
                    f"{weights.shape[0]}×{weights.shape[1]}"
                )
            # Rank 1 is judged with an f32-sized tolerance; the oracle only takes the two-pass
            # route when the factors give back the weights to float64 precision and skip the
            # same taps as the weights.
            if separable or (
                _factors_exact(weights, column, row) and factors_keep_zeros(weights, column, row)
            ):
                return _correlate_separable(x, column, row, border)
    return _correlate_2d(x, weights, border)


def correlate(
    image: np.ndarray,
    kernel: Kernel | str,
    border: Border | str = "clamp",
    *,
    convolve: bool = False,
    range_mode: RangeMode | str = "clamp",
) -> np.ndarray:
    """Filter an image with the float64 reference; the ``cpu`` strategy.

    Arguments:
        image: H×W or H×W×C (C 1..4) uint8, uint16, float32 or float64.
        kernel: a ``Kernel`` or a kernel spec string.
        border: a ``Border`` or a border name (``constant=V`` is in normalised units).
        convolve: flip the kernel (true convolution) instead of correlating.
        range_mode: how integer outputs map signed/out-of-range results, see
            :func:`blurapp.core.numbers.from_float`; ignored for float images.

    Returns:
        The filtered image, same dtype and shape as ``image``.
    """
    check_image(image)
    border = Border.parse(border)
    if range_mode not in RANGE_MODES:  # fail before the work, not after it
        raise UsageError(f"unknown range mode {range_mode!r}; valid: {', '.join(RANGE_MODES)}")
    if isinstance(kernel, str):
        kernel = Kernel.parse(kernel)
    if convolve:
        kernel = kernel.for_convolution()
    result = correlate_float(to_float(image), kernel, border)
    return from_float(result, image.dtype, range_mode=range_mode, squeeze=image.ndim == 2)
