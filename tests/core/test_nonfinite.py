"""NaN and Inf in the reference: an output is NaN (or ±Inf) exactly where scipy.ndimage.correlate's
is, for every border mode, 2-D and separable paths alike (DESIGN.md "Numbers")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import ndimage

from blurapp.core.borders import BORDER_MODES
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.core.separability import analyze

# blurapp border -> (scipy mode, cval)
SCIPY_MODES = {
    "clamp": ("nearest", 0.0),
    "zero": ("constant", 0.0),
    "constant=0.25": ("constant", 0.25),
    "reflect": ("reflect", 0.0),
    "mirror": ("mirror", 0.0),
    "wrap": ("grid-wrap", 0.0),
}

# Zero taps in every shape: a zero column (sobel:x), a zero between taps, a lone centre, an
# even size, a slanted line (mostly zeros, not separable), a long separable one, and none.
KERNELS = [
    "sobel:x",
    "sobel:y,size=5",
    "laplacian",
    "matrix:3x1:1,0,1",
    "matrix:3x3:0,0,0,0,1,0,0,0,0",
    "matrix:3x2:1,0,-1,2,0,-2",
    "motion:length=5,angle=30",
    "box:4x2",
    "gaussian:sigma=1",
]


def non_finite_image(shape: tuple[int, int, int] = (13, 11, 2)) -> np.ndarray:
    x = np.random.default_rng(7).random(shape)
    x[5, 3, 0] = np.nan
    x[0, 0, 1] = np.inf
    x[shape[0] - 1, shape[1] - 1, 0] = -np.inf
    x[7, 8, 1] = np.nan
    x[2, shape[1] - 2, 0] = np.inf
    return x


def scipy_correlate(x: np.ndarray, weights: np.ndarray, border: str) -> np.ndarray:
    mode, cval = SCIPY_MODES[border]
    channels = [
        ndimage.correlate(x[..., c], weights, mode=mode, cval=cval) for c in range(x.shape[2])
    ]
    return np.stack(channels, axis=-1)


def assert_same_non_finite(got: np.ndarray, want: np.ndarray, atol: float = 1e-12) -> None:
    for name, test in (("NaN", np.isnan), ("+Inf", np.isposinf), ("-Inf", np.isneginf)):
        diff = np.argwhere(test(got) != test(want))
        assert diff.size == 0, f"{name} differs from scipy at {diff[:5].tolist()}"
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], atol=atol)


def test_the_borders_compared_are_all_of_them() -> None:
    assert {b.split("=")[0] for b in SCIPY_MODES} >= set(BORDER_MODES) - {"constant"}


@pytest.mark.parametrize("border", SCIPY_MODES)
@pytest.mark.parametrize("spec", KERNELS)
def test_reference_spreads_nan_and_inf_as_scipy(spec: str, border: str) -> None:
    kernel = Kernel.parse(spec)
    x = non_finite_image()
    want = scipy_correlate(x, kernel.weights, border)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN and Inf are data, not RuntimeWarnings
        for separable in (None, False):
            assert_same_non_finite(correlate_float(x, kernel, border, separable=separable), want)


@pytest.mark.parametrize("spec", ["sobel:x", "sobel:y,size=7", "matrix:3x1:1,0,1", "prewitt:y"])
def test_rank_one_factors_are_exactly_zero_where_the_weights_are(spec: str) -> None:
    kernel = Kernel.parse(spec)
    sep = analyze(kernel.weights)
    assert sep.rank == 1
    footprint = np.outer(sep.column != 0, sep.row != 0)
    np.testing.assert_array_equal(footprint, kernel.weights != 0)
