"""The float64 n-D reference (blurapp.core.ndreference) against scipy.ndimage: every mode,
origins, awkward shapes, kernels longer than the axis, ndim 1-4, NaN/Inf and any cval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.ndimage as ndi

from blurapp.core.borders import Border, BorderMode
from blurapp.core.ndreference import DBL_EPSILON, Line, correlate1d, correlate1d_chain, correlate_nd

MODES = [
    (Border(BorderMode.CLAMP), "nearest"),
    (Border(BorderMode.CONSTANT), "constant"),
    (Border(BorderMode.REFLECT), "reflect"),
    (Border(BorderMode.MIRROR), "mirror"),
    (Border(BorderMode.WRAP), "grid-wrap"),
]
SHAPES = [(1,), (6,), (1, 4), (5, 3), (2, 1, 3), (3, 4, 2), (2, 1, 3, 2)]


@pytest.mark.parametrize(("border", "mode"), MODES)
def test_correlate1d_equals_scipy(border: Border, mode: str) -> None:
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        x = rng.normal(size=shape)
        for axis, size in itertools.product(range(len(shape)), (1, 2, 5, 9)):
            w = rng.normal(size=size)
            for origin in range(-(size // 2), (size - 1) // 2 + 1):
                got = correlate1d(x, Line(axis, w, border, origin, cval=-2.5))
                want = ndi.correlate1d(x, w, axis, mode=mode, cval=-2.5, origin=origin)
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("border", "mode"), MODES)
def test_correlate_nd_equals_scipy(border: Border, mode: str) -> None:
    rng = np.random.default_rng(2)
    for shape in SHAPES:
        w = rng.normal(size=tuple(int(s) for s in rng.integers(1, 7, len(shape))))
        origins = [int(rng.integers(-(s // 2), (s - 1) // 2 + 1)) for s in w.shape]
        x = rng.normal(size=shape)
        got = correlate_nd(x, w, border, origins, cval=0.5)
        want = ndi.correlate(x, w, mode=mode, cval=0.5, origin=origins)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_nan_semantics_match_scipy() -> None:
    x = np.zeros(7)
    x[3] = np.nan
    # correlate1d multiplies every tap: a NaN under a zero weight spreads...
    line = Line(0, np.array([1.0, 0.0, 0.0]), Border(BorderMode.CONSTANT))
    np.testing.assert_array_equal(
        np.isnan(correlate1d(x, line)), np.isnan(ndi.correlate1d(x, line.weights, mode="constant"))
    )
    # ... correlate skips |w| <= DBL_EPSILON (scipy's footprint).
    for tiny in (DBL_EPSILON, 2 * DBL_EPSILON):
        w = np.array([tiny, 1.0, 0.0])
        np.testing.assert_array_equal(
            np.isnan(correlate_nd(x, w, Border(BorderMode.CONSTANT))),
            np.isnan(ndi.correlate(x, w, mode="constant")),
        )
    for cval in (np.nan, np.inf, -np.inf, 1e300):
        y = np.arange(5.0)
        got = correlate1d(y, Line(0, np.array([1.0, 1.0, 1.0]), Border(BorderMode.CONSTANT),
                                  cval=cval))  # fmt: skip
        want = ndi.correlate1d(y, np.ones(3), mode="constant", cval=cval)
        np.testing.assert_array_equal(got, want)


def test_chain_and_bad_lines() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5, 6))
    lines = [Line(a, rng.normal(size=3), Border(BorderMode.MIRROR)) for a in (2, 0, 1)]
    want = x
    for ln in lines:
        want = ndi.correlate1d(want, ln.weights, ln.axis, mode="mirror")
    np.testing.assert_allclose(correlate1d_chain(x, lines), want, rtol=0, atol=1e-12)
    assert Line(0, [1.0, 2.0], Border(BorderMode.CLAMP), origin=-1).centre == 0
    with pytest.raises(ValueError, match="invalid origin -2"):
        Line(0, np.ones(3), Border(BorderMode.CLAMP), origin=-2)
    with pytest.raises(ValueError, match="must not be empty"):
        Line(0, np.ones(0), Border(BorderMode.CLAMP))
    with pytest.raises(TypeError, match="axis must be an integer"):
        Line(0.5, np.ones(3), Border(BorderMode.CLAMP))
    with pytest.raises(np.exceptions.AxisError):
        correlate1d(x, Line(3, np.ones(3), Border(BorderMode.CLAMP)))


def test_finite_max_over_floats_integers_and_bools() -> None:
    """max |a| over the finite values; integers from their extremes (int8's -128 is 128, not
    abs()'s overflowed -128), bools 0 or 1, empty arrays 0."""
    from blurapp.core.ndreference import finite_max

    assert finite_max(np.array([1.5, -np.inf, np.nan, -3.0])) == 3.0
    assert finite_max(np.array([np.nan])) == 0.0
    assert finite_max(np.array([5, -128, 7], np.int8)) == 128.0
    assert finite_max(np.array([65535, 3], np.uint16)) == 65535.0
    assert finite_max(np.array([False, True])) == 1.0
    assert finite_max(np.zeros(0, np.int16)) == 0.0
    # All finite: from the extremes (either side, float16 to float64), -0.0 as 0.0.
    assert finite_max(np.array([-7.5, 2.0, 1e-300])) == 7.5
    assert finite_max(np.array([[0.5, 3.25], [-1.0, 2.0]]).T) == 3.25
    assert finite_max(np.float16([3, -65504])) == 65504.0
    assert finite_max(np.float32([-1e-45, 0.0])) == np.float32(1e-45)
    assert math.copysign(1.0, finite_max(np.array([-0.0, -0.0]))) == 1.0
    assert finite_max(np.array([-1e308, 1.7976931348623157e308])) == 1.7976931348623157e308
