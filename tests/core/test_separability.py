"""Separability: singular values, numerical rank, rank-1 factors and rank-k approximations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blurapp.core.errors import KernelSpecError
from blurapp.core.kernel import Kernel
from blurapp.core.nonfinite import flush_tiny
from blurapp.core.separability import EPS_F32, analyze


def rel(a: np.ndarray, b: np.ndarray) -> float:
    """Relative Frobenius distance, scaled first so tiny kernels do not underflow."""
    scale = np.abs(b).max()
    return float(np.linalg.norm((a - b) / scale) / np.linalg.norm(b / scale))


RANK_ONE_SPECS = [
    "box:5",
    "box:7x3",
    "box:4",
    "gaussian:sigma=2",
    "gaussian:sigma=2x1",
    "gaussian:sigma=0.8,radius=6x2",
    "sobel:x",
    "sobel:y",
    "sobel:x,size=5",
    "sobel:y,size=5",
    "sobel:x,size=7",
    "sobel:y,size=7",
    "scharr:x",
    "scharr:y",
    "prewitt:x",
    "prewitt:y",
    "identity",
    "motion:length=9,angle=0",
    "motion:length=9,angle=90",
    "matrix:3x3:1,2,1,2,4,2,1,2,1,normalize",
    "matrix:1x1:-2",
]


@pytest.mark.parametrize("spec", RANK_ONE_SPECS)
def test_separable_kernels_are_rank_one_and_factors_reproduce(spec: str) -> None:
    k = Kernel.parse(spec)
    s = k.separability
    assert s.rank == 1
    assert s.is_separable
    assert s.column is not None and s.row is not None
    assert s.column.shape == (k.height,)
    assert s.row.shape == (k.width,)
    assert rel(np.outer(s.column, s.row), k.weights) < 1e-12


def test_factor_signs_put_smoothing_positive() -> None:
    sx = Kernel.parse("sobel:x").separability
    # column ∝ [1, 2, 1] (positive), row ∝ [-1, 0, 1].
    assert np.all(sx.column > 0)
    assert sx.row[0] < 0 < sx.row[2]
    np.testing.assert_allclose(sx.column / sx.column[0], [1, 2, 1], rtol=1e-12)
    sy = Kernel.parse("sobel:y").separability
    assert np.all(sy.row > 0)
    assert sy.column[0] < 0 < sy.column[2]
    g = Kernel.parse("gaussian:sigma=1.5").separability
    assert np.all(g.column > 0) and np.all(g.row > 0)
    # Equal split: both factors carry sqrt(s0).
    assert np.linalg.norm(g.column) == pytest.approx(np.linalg.norm(g.row), rel=1e-12)


@pytest.mark.parametrize("spec", ["gaussian:sigma=2", "gaussian:sigma=3x1.2", "gaussian:sigma=64"])
def test_float32_rounded_gaussian_is_still_rank_one(spec: str) -> None:
    w32 = Kernel.parse(spec).weights.astype(np.float32)
    k = Kernel.from_weights(w32)
    s = k.separability
    assert s.rank == 1
    # No outer product reproduces f32-rounded 2-D weights exactly: the best one is within
    # the f32 rounding (<= eps/2 relative), well inside the rank tolerance.
    assert rel(np.outer(s.column, s.row), k.weights) < EPS_F32
    assert s.relative_error(1) < s.tolerance


def test_outer_product_of_float32_factors_reproduces_to_1e12() -> None:
    gx = Kernel.parse("gaussian:sigma=2x1").separability
    col = gx.column.astype(np.float32).astype(np.float64)
    row = gx.row.astype(np.float32).astype(np.float64)
    k = Kernel.from_weights(np.outer(col, row))
    s = k.separability
    assert s.rank == 1
    assert rel(np.outer(s.column, s.row), k.weights) < 1e-12


@pytest.mark.parametrize(
    ("spec", "rank"),
    [
        ("laplacian", 2),  # [0,1,0]-cross: two separable terms
        ("sharpen", 2),  # identity*5 minus the cross: still rank 2
        ("emboss", 3),  # det = -4
        ("disk:radius=4", 5),  # 9×9 disc, symmetric: 5 distinct row profiles
        ("motion:length=9,angle=30", 7),  # 9×7 slanted line: one independent row per row
        ("log:sigma=1.5", 3),  # radially symmetric, fast-decaying components
    ],
)
def test_non_separable_kernels_have_the_stated_rank(spec: str, rank: int) -> None:
    k = Kernel.parse(spec)
    s = k.separability
    assert s.rank == rank
    assert not s.is_separable
    assert s.column is None and s.row is None
    # The rank is not on a knife edge: the last kept value is well above the tolerance
    # (LoG's third component, 5e-5 relative, is the closest: 30x the tolerance).
    assert s.singular_values[rank - 1] > 10 * s.tolerance * s.singular_values[0]


def test_singular_values_descending_and_tolerance_documented_formula() -> None:
    k = Kernel.parse("motion:length=15,angle=20")
    s = k.separability
    assert np.all(np.diff(s.singular_values) <= 0)
    assert len(s.singular_values) == min(k.shape)
    assert s.tolerance == max(k.shape) * EPS_F32
    np.testing.assert_allclose(
        s.singular_values, np.linalg.svd(k.weights, compute_uv=False), rtol=1e-12
    )


def test_zero_kernel_has_rank_zero_and_no_factors() -> None:
    s = analyze(np.zeros((3, 5)))
    assert s.rank == 0
    assert not s.is_separable
    assert s.column is None and s.row is None
    assert np.all(s.singular_values == 0)
    assert s.relative_error(0) == 0.0
    np.testing.assert_array_equal(s.approximation(2), np.zeros((3, 5)))


def test_one_by_one_kernel() -> None:
    s = analyze(np.array([[-3.0]]))
    assert s.rank == 1
    assert s.column[0] * s.row[0] == pytest.approx(-3.0, rel=1e-15)
    assert s.relative_error(1) == 0.0


@pytest.mark.parametrize("spec", ["disk:radius=4", "emboss", "log:sigma=1.5", "laplacian"])
def test_approximation_error_decreases_and_vanishes_at_full_rank(spec: str) -> None:
    k = Kernel.parse(spec)
    s = k.separability
    full = min(k.shape)
    errors = [s.relative_error(i) for i in range(full + 1)]
    assert errors[0] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(errors))
    assert errors[full] == 0.0
    assert s.relative_error(full + 5) == 0.0
    for i in range(full + 1):
        approx = s.approximation(i)
        assert approx.shape == k.shape
        actual = np.linalg.norm(k.weights - approx) / np.linalg.norm(k.weights)
        assert actual == pytest.approx(errors[i], abs=1e-12)
    # Rank-r approximation is exact (to round-off) at the numerical rank.
    assert rel(s.approximation(s.rank), k.weights) < 1e-6
    # The separable terms sum to the approximation.
    terms = s.terms(2)
    np.testing.assert_allclose(
        sum(np.outer(c, r) for c, r in terms), s.approximation(2), atol=1e-15
    )


def test_bad_k_and_bad_weights() -> None:
    s = analyze(np.eye(3))
    with pytest.raises(ValueError, match="-1"):
        s.approximation(-1)
    with pytest.raises(ValueError, match=r"1\.5"):
        s.relative_error(1.5)  # type: ignore[arg-type]
    with pytest.raises(KernelSpecError, match="2-D"):
        analyze(np.ones(3))
    with pytest.raises(KernelSpecError, match="finite"):
        analyze(np.array([[1.0, np.nan]]))


def weights(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Floats in [lo, hi], zero or at least 1e-150 in magnitude: tinier weights multiply into
    subnormals, whose own precision (2e-11 relative at 2e-313), not the SVD's, would limit how
    exactly a factorisation can rebuild them."""
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False).filter(
        lambda v: v == 0.0 or abs(v) >= 1e-150
    )


vectors = st.integers(1, 12).flatmap(
    lambda n: hnp.arrays(np.float64, n, elements=weights(-1e3, 1e3))
)


@settings(max_examples=150, deadline=None)
@given(col=vectors, row=vectors)
def test_random_outer_products_are_rank_one(col: np.ndarray, row: np.ndarray) -> None:
    # Entries too small to matter next to the largest would be lost to round-off anyway.
    col = np.where(np.abs(col) < 1e-3 * max(np.abs(col).max(), 1e-300), 0.0, col)
    row = np.where(np.abs(row) < 1e-3 * max(np.abs(row).max(), 1e-300), 0.0, row)
    # Products below float32's normal range are zero taps (blurapp.core.nonfinite).
    w = flush_tiny(np.outer(col, row))
    s = analyze(w)
    if not np.any(w):
        assert s.rank == 0
        return
    assert s.rank == 1
    assert rel(np.outer(s.column, s.row), w) < 1e-12
    assert s.relative_error(1) < 1e-12
    assert rel(s.approximation(1), w) < 1e-12


@settings(max_examples=60, deadline=None)
@given(
    w=st.tuples(st.integers(1, 9), st.integers(1, 9)).flatmap(
        lambda shape: hnp.arrays(np.float64, shape, elements=weights(-10, 10))
    )
)
def test_random_kernels_errors_monotone_and_full_rank_exact(w: np.ndarray) -> None:
    s = analyze(w)
    full = min(w.shape)
    errors = [s.relative_error(i) for i in range(full + 1)]
    assert all(a >= b for a, b in itertools.pairwise(errors))
    assert errors[full] == 0.0
    kept = flush_tiny(w)  # weights below float32's normals are zero taps (core.nonfinite)
    if np.any(kept):
        assert rel(s.approximation(full), kept) < 1e-12
    else:
        assert not np.any(s.approximation(full))
