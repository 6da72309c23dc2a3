"""NaN and Inf in the reference: an output is NaN (or ±Inf) exactly where scipy.ndimage.correlate's
is, for every border mode, 2-D and separable paths alike (DESIGN.md "Numbers"); weights float32
cannot hold as normal numbers are zero taps; blurapp.core.nonfinite's overlay, counted here with
the reference, puts NaN and Inf where the reference does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import ndimage

from blurapp.core.borders import BORDER_MODES
from blurapp.core.kernel import Kernel
from blurapp.core.nonfinite import (
    FLOAT32_TINY,
    factors_keep_zeros,
    finite_max_abs,
    flush_tiny,
    is_finite_image,
    overlay,
)
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


# -- zero taps: weights float32 cannot hold as normal numbers ----------------------------------

TINY_KERNELS = ["matrix:3x1:1e-46,1,1e-46", "matrix:3x1:1e-40,1,-1e-40", "matrix:1x3:1e-39,2,0"]


def test_weights_below_float32s_normal_range_are_zero_taps() -> None:
    k = Kernel.parse("matrix:3x1:1e-46,1,1e-46")
    assert k.weights.tolist() == [[0.0, 1.0, 0.0]]
    assert Kernel.parse(k.spec).weights.tobytes() == k.weights.tobytes()
    w = Kernel.from_weights([[-1e-40, FLOAT32_TINY, -FLOAT32_TINY, -0.0, 5e-324, 1.0]]).weights[0]
    assert w[0] == 0.0 and w[4] == 0.0
    assert w[1] == FLOAT32_TINY and w[2] == -FLOAT32_TINY and np.signbit(w[3])
    # What is left is a normal float32 (never 0 or a subnormal a GPU may flush).
    left = np.abs(w[w != 0].astype(np.float32))
    assert (left >= FLOAT32_TINY).all()
    plain = np.array([1.0, -2.0, 0.0])
    assert flush_tiny(plain) is plain  # nothing to flush: no copy
    np.testing.assert_array_equal(flush_tiny(np.array([1e-39, -3e-39, 2.0])), [0.0, 0.0, 2.0])


@pytest.mark.parametrize("border", SCIPY_MODES)
@pytest.mark.parametrize("spec", TINY_KERNELS)
def test_nan_under_a_tiny_weight_does_not_spread(spec: str, border: str) -> None:
    kernel = Kernel.parse(spec)
    x = non_finite_image((8, 9, 2))
    x[2, 3, 0] = np.nan
    x[4, 1, 1] = -np.inf
    # scipy.ndimage.correlate skips |w| <= DBL_EPSILON: these raw weights are zero taps there.
    raw = np.array([float(v) for v in spec.split(":")[2].split(",")]).reshape(kernel.shape)
    want = scipy_correlate(x, raw, border)
    for separable in (None, False):
        assert_same_non_finite(correlate_float(x, kernel, border, separable=separable), want)


def test_a_rank_one_kernel_whose_tail_products_underflow_runs_as_one_2d_pass() -> None:
    # exp(-u²/2) stays a normal float32 out to |u| = 13, but products of two such factors
    # underflow outside a disc of radius ~13: two 1-D passes would reach the square's corners.
    k = Kernel.parse("gaussian:sigma=1,radius=20")
    sep = k.separability
    assert sep.rank == 1 and not factors_keep_zeros(k.weights, sep.column, sep.row)
    sobel = Kernel.parse("sobel:x")  # a zero column: exact zero factors, the same taps
    assert factors_keep_zeros(sobel.weights, sobel.separability.column, sobel.separability.row)
    x = np.random.default_rng(4).random((41, 41, 1))
    x[20, 20, 0] = np.nan
    two_d = correlate_float(x, k, "zero", separable=False)
    assert_same_non_finite(correlate_float(x, k, "zero"), two_d)
    forced = correlate_float(x, k, "zero", separable=True)
    assert np.isnan(forced).sum() > np.isnan(two_d).sum()
    # The NaN reaches exactly the taps whose weight is a normal float32 (flipped: correlation).
    np.testing.assert_array_equal(np.isnan(two_d[:, :, 0]), (k.weights != 0)[::-1, ::-1])


# -- the exact overlay, counted here with the reference ----------------------------------------

SIGNED_KERNELS = [
    "sobel:x",
    "laplacian",
    "matrix:3x2:1,0,-1,2,0,-2",
    "motion:length=5,angle=30",
    "box:4x2",
    "matrix:2x2:-1,-2,0,-3",
    "matrix:1x1:-2",
]


def mixed_image(shape: tuple[int, int, int] = (13, 11, 2)) -> np.ndarray:
    """non_finite_image plus infinities that meet: +inf beside -inf, +inf two apart."""
    x = non_finite_image(shape)
    h, w = shape[:2]
    x[min(8, h - 1), min(4, w - 1), 0] = np.inf
    x[min(8, h - 1), min(5, w - 1), 0] = -np.inf
    x[min(10, h - 1), min(3, w - 1), shape[2] - 1] = np.inf
    x[min(10, h - 1), min(5, w - 1), shape[2] - 1] = np.inf
    return x


def reference_counts(border: str):
    """overlay's count correlation done by the reference, through ``border`` (constant: 0)."""
    count_border = "zero" if border.startswith(("zero", "constant")) else border

    def correlate(indicators: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return correlate_float(indicators, Kernel.from_weights(mask), count_border)

    return correlate


@pytest.mark.parametrize("border", SCIPY_MODES)
@pytest.mark.parametrize("spec", SIGNED_KERNELS)
def test_overlay_puts_nan_and_inf_where_the_reference_does(spec: str, border: str) -> None:
    kernel = Kernel.parse(spec)
    for shape in ((13, 11, 2), (1, 1, 1), (2, 3, 3)):
        x = mixed_image(shape) if shape[0] > 2 else np.full(shape, np.nan)
        if shape == (2, 3, 3):
            x = np.array([np.inf, -np.inf, 0.5] * 6).reshape(shape)
        want = correlate_float(x, kernel, border)
        result = correlate_float(np.where(np.isfinite(x), x, 0.0), kernel, border)
        overlay(result, x, kernel.weights, reference_counts(border))
        assert_same_non_finite(result, want)
        assert_same_non_finite(want, scipy_correlate(x, kernel.weights, border))


def test_overlay_counts_only_what_occurs() -> None:
    calls: list[tuple[tuple[int, ...], tuple[float, ...]]] = []

    def counting(indicators: np.ndarray, mask: np.ndarray) -> np.ndarray:
        calls.append((indicators.shape, tuple(np.unique(mask))))
        return reference_counts("clamp")(indicators, mask)

    def run(x: np.ndarray, spec: str) -> int:
        calls.clear()
        result = np.zeros_like(x)
        return overlay(result, x, Kernel.parse(spec).weights, counting)

    x = np.zeros((5, 6, 3))
    assert run(x, "box:3") == 0  # finite: nothing to count
    x[1, 1, 0] = np.nan
    assert run(x, "matrix:3x3:0,0,0,0,0,0,0,0,0") == 0  # zero kernel: no tap reads anything
    assert run(x, "box:3") == 1 and calls[0][0] == (5, 6, 1)
    assert run(x, "sobel:x") == 1  # NaN goes through the whole support at once
    x[2, 2, 1] = np.inf
    x[3, 3, 2] = -np.inf
    x[4, 4, 2] = np.inf
    assert run(x, "box:3") == 1 and calls[0][0] == (5, 6, 4)  # four (channel, kind) pairs
    x[0, 0, 1] = np.nan
    assert run(x, "box:3") == 2  # five pairs: 4 + 1
    # Both signs: NaN through w != 0 (2 pairs), the 3 Inf pairs through w > 0 and w < 0.
    assert run(x, "sobel:x") == 3
    assert [c[0][2] for c in calls] == [2, 3, 3]


def test_finite_images_are_checked_in_blocks() -> None:
    assert is_finite_image(np.zeros((2, 2), np.uint8))
    assert is_finite_image(np.zeros((2, 2, 3), np.float32))
    x = np.zeros((3000, 500, 3), np.float32)  # 18 MB: several blocks
    assert is_finite_image(x)
    x[-1, -1, 2] = np.nan
    assert not is_finite_image(x)
    x[-1, -1, 2] = -np.inf
    assert not is_finite_image(x)
    assert not is_finite_image(np.array([np.inf]))
    # The same pass gives the largest finite magnitude (fft's overflow guard needs it).
    x[-1, -1, 2] = np.nan
    x[7, 3, 1] = -5.0
    assert finite_max_abs(x) == (False, 5.0)
    x[-1, -1, 2] = 2.0
    assert finite_max_abs(x) == (True, 5.0)
    assert finite_max_abs(np.array([np.nan])) == (False, 0.0)
