"""Tests for blurapp.core.reference: the float64 oracle, cross-checked against scipy.ndimage."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blurapp.core.borders import Border, BorderMode
from blurapp.core.errors import BorderError, ImageError, KernelSpecError, StrategyError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import RANGE_MODES, SUPPORTED_DTYPES, to_float
from blurapp.core.reference import correlate, correlate_float

BORDERS = ["clamp", "zero", "constant=0.7", "reflect", "mirror", "wrap"]

KERNEL_SHAPES = [(1, 1), (3, 3), (2, 2), (4, 4), (3, 5), (2, 5), (4, 1), (1, 6), (6, 9), (15, 15)]
IMAGE_SHAPES = [(1, 1), (4, 3), (1, 7), (7, 1), (2, 2), (9, 11)]


def scipy_mode(border: str) -> tuple[str, float]:
    """The scipy.ndimage mode and cval that DESIGN.md's table gives for a border name."""
    b = Border.parse(border)
    return {
        BorderMode.CLAMP: ("nearest", 0.0),
        BorderMode.CONSTANT: ("constant", b.value),
        BorderMode.REFLECT: ("reflect", 0.0),
        BorderMode.MIRROR: ("mirror", 0.0),
        BorderMode.WRAP: ("grid-wrap", 0.0),
    }[b.mode]


def scipy_correlate(x: np.ndarray, w: np.ndarray, border: str, *, convolve=False) -> np.ndarray:
    """scipy.ndimage over each channel of an H×W×C float image, anchored like blurapp.

    scipy's origin 0 already puts the centre of an even axis at size // 2 for correlate (see
    test_scipy_origin_conventions), so correlation needs no origin. --convolve is
    scipy.ndimage.convolve itself, even sizes included (Kernel.for_convolution).
    """
    mode, cval = scipy_mode(border)
    out = np.empty(x.shape)
    for c in range(x.shape[2]):
        if convolve:
            out[..., c] = ndi.convolve(x[..., c], w, mode=mode, cval=cval)
        else:
            out[..., c] = ndi.correlate(x[..., c], w, mode=mode, cval=cval, origin=0)
    return out


def random_image(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.random(shape)


def generic_weights(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random signed weights: rank min(shape), so the 2-D path runs for anything above 1×N."""
    return rng.normal(size=shape)


def separable_weights(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    column = rng.random(shape[0]) + 0.1
    row = rng.normal(size=shape[1])
    return np.outer(column, row)


# --- cross-check against scipy ---------------------------------------------------------------


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("kshape", KERNEL_SHAPES, ids=lambda s: f"k{s[0]}x{s[1]}")
def test_matches_scipy_for_every_mode_size_and_shape(border, kshape):
    rng = np.random.default_rng(hash((border, kshape)) % 2**32)
    for i, ishape in enumerate(IMAGE_SHAPES):
        x = random_image(rng, (*ishape, 1 + i % 4))
        for weights in (generic_weights(rng, kshape), separable_weights(rng, kshape)):
            kernel = Kernel.from_weights(weights)
            expected = scipy_correlate(x, weights, border)
            for separable in (None, False):
                out = correlate_float(x, kernel, border, separable=separable)
                assert out.dtype == np.float64
                assert out.shape == x.shape
                np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_scipy_origin_conventions():
    # An impulse shows where each library puts the anchor; blurapp's is (rows // 2, cols // 2).
    x = np.zeros((9, 10))
    x[4, 5] = 1.0
    for shape in [(2, 2), (4, 3), (3, 4), (4, 6), (5, 5)]:
        w = np.arange(1.0, shape[0] * shape[1] + 1).reshape(shape)
        ar, ac = shape[0] // 2, shape[1] // 2
        expected = np.zeros_like(x)
        for u in range(shape[0]):
            for v in range(shape[1]):
                expected[4 - u + ar, 5 - v + ac] = w[u, v]
        ours = correlate_float(x[..., None], Kernel.from_weights(w), "zero")[..., 0]
        np.testing.assert_array_equal(ours, expected)
        np.testing.assert_array_equal(ndi.correlate(x, w, mode="constant", origin=0), expected)
        flipped_anchor = correlate_float(x[..., None], Kernel.from_weights(w[::-1, ::-1]), "zero")
        origin = [-1 if s % 2 == 0 else 0 for s in shape]
        np.testing.assert_array_equal(
            ndi.convolve(x, w, mode="constant", origin=origin), flipped_anchor[..., 0]
        )


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("kshape", [(3, 3), (2, 2), (4, 3), (2, 5), (15, 15), (1, 4)])
def test_convolve_flips_and_matches_scipy_convolve(border, kshape):
    rng = np.random.default_rng(7)
    for ishape in [(1, 1), (4, 3), (8, 9, 3)]:
        image = rng.random(ishape)
        weights = generic_weights(rng, kshape)
        kernel = Kernel.from_weights(weights)
        x = image if image.ndim == 3 else image[..., None]
        expected = scipy_correlate(x, weights, border, convolve=True)
        out = correlate(image, kernel, border, convolve=True)
        assert out.shape == image.shape
        np.testing.assert_allclose(out.reshape(x.shape), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(out, correlate(image, kernel.for_convolution(), border))


def _assert_integer_result(out: np.ndarray, expected_float: np.ndarray, dtype) -> None:
    """out == rint(clip(expected) * max), allowing either neighbour at exact .5 ties."""
    top = np.iinfo(dtype).max
    scaled = np.clip(expected_float, 0.0, 1.0) * top
    rounded = np.rint(scaled)
    tie = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    ok = (out == rounded) | (tie & ((out == np.floor(scaled)) | (out == np.ceil(scaled))))
    assert ok.all(), f"{(~ok).sum()} pixels differ from the reference"


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("border", BORDERS)
def test_every_dtype_and_channel_count(dtype, border):
    rng = np.random.default_rng(3)
    kernel = Kernel.parse("gaussian:sigma=1.2")
    for shape in [(6, 5), (6, 5, 1), (5, 7, 2), (3, 4, 3), (7, 6, 4), (1, 1), (2, 1, 4)]:
        if dtype.kind == "u":
            image = rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)
        else:
            image = rng.random(shape).astype(dtype)
        out = correlate(image, kernel, border)
        assert out.dtype == dtype
        assert out.shape == image.shape
        x = to_float(image)
        expected = scipy_correlate(x, kernel.weights, border).reshape(image.shape)
        if dtype.kind == "u":
            _assert_integer_result(out, expected, dtype)
        else:
            np.testing.assert_allclose(out, expected.astype(dtype), rtol=2e-7, atol=1e-7)


# --- separable path --------------------------------------------------------------------------

SEPARABLE_SPECS = [
    "gaussian:sigma=1.5",
    "gaussian:sigma=2x0.6",
    "box:4x2",
    "box:7",
    "sobel:x",
    "sobel:y,size=5",
    "identity",
    "matrix:1x4:1,2,3,4",
]


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("spec", SEPARABLE_SPECS)
def test_separable_path_equals_two_d_path(border, spec):
    kernel = Kernel.parse(spec)
    assert kernel.separability.rank == 1
    rng = np.random.default_rng(11)
    for shape in [(1, 1, 1), (4, 3, 2), (1, 9, 1), (10, 1, 3), (17, 13, 4)]:
        x = rng.random(shape)
        two_d = correlate_float(x, kernel, border, separable=False)
        two_pass = correlate_float(x, kernel, border, separable=True)
        np.testing.assert_allclose(two_pass, two_d, rtol=0, atol=1e-12)
        # The default takes the two-pass route for exact rank-1 kernels.
        np.testing.assert_array_equal(correlate_float(x, kernel, border), two_pass)


@pytest.mark.parametrize("border", BORDERS)
def test_separable_constant_border_with_large_kernel_on_tiny_image(border):
    # Most taps read the border here: the intermediate's padding must be V * sum(row).
    rng = np.random.default_rng(5)
    weights = separable_weights(rng, (15, 15))
    kernel = Kernel.from_weights(weights)
    x = rng.random((4, 3, 2))
    two_pass = correlate_float(x, kernel, border, separable=True)
    np.testing.assert_allclose(two_pass, scipy_correlate(x, weights, border), atol=1e-12)


def test_nearly_separable_kernel_keeps_the_exact_two_d_sum():
    rng = np.random.default_rng(9)
    weights = np.outer(rng.random(5), rng.random(5)) + 1e-10 * rng.normal(size=(5, 5))
    kernel = Kernel.from_weights(weights)
    assert kernel.separability.rank == 1  # within the f32-sized rank tolerance...
    x = rng.random((8, 8, 1))
    # ...but the oracle does not trade float64 exactness for speed.
    np.testing.assert_array_equal(
        correlate_float(x, kernel, "reflect"),
        correlate_float(x, kernel, "reflect", separable=False),
    )


def test_forcing_separable_on_a_rank_two_kernel_is_a_strategy_error():
    with pytest.raises(StrategyError, match="rank 2"):
        correlate_float(np.zeros((3, 3, 1)), Kernel.parse("laplacian"), "clamp", separable=True)


def test_zero_kernel_gives_zeros():
    kernel = Kernel.from_weights(np.zeros((3, 2)))
    out = correlate_float(np.ones((4, 4, 2)), kernel, "constant=0.5")
    np.testing.assert_array_equal(out, np.zeros((4, 4, 2)))


# --- kernels larger than the image -----------------------------------------------------------


@pytest.mark.parametrize("kshape", [(1, 1), (3, 3), (4, 6), (15, 15)])
def test_one_pixel_image(kshape):
    rng = np.random.default_rng(2)
    weights = generic_weights(rng, kshape)
    centre = weights[kshape[0] // 2, kshape[1] // 2]
    kernel = Kernel.from_weights(weights)
    x = np.array([[[0.3, 0.8]]])
    for border in ["clamp", "reflect", "mirror", "wrap"]:
        np.testing.assert_allclose(
            correlate_float(x, kernel, border), x * weights.sum(), atol=1e-12
        )
    np.testing.assert_allclose(correlate_float(x, kernel, "zero"), x * centre, atol=1e-12)
    np.testing.assert_allclose(
        correlate_float(x, kernel, "constant=0.25"),
        x * centre + 0.25 * (weights.sum() - centre),
        atol=1e-12,
    )


# --- properties ------------------------------------------------------------------------------

kernel_weights = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 7), st.integers(1, 7)),
    elements=st.floats(0.01, 1.0),
)
image_shapes = st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4))


@settings(max_examples=60, deadline=None)
@given(
    weights=kernel_weights,
    shape=image_shapes,
    value=st.floats(0.0, 1.0),
    border=st.sampled_from(["clamp", "reflect", "mirror", "wrap", "constant"]),
)
def test_normalised_kernel_keeps_a_constant_image_constant(weights, shape, value, border):
    if border == "constant":
        border = f"constant={value!r}"  # the only constant border that keeps it flat
    kernel = Kernel.from_weights(weights / weights.sum())
    out = correlate_float(np.full(shape, value), kernel, border)
    np.testing.assert_allclose(out, value, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    weights=kernel_weights,
    image=hnp.arrays(np.float64, image_shapes, elements=st.floats(-1.0, 1.0)),
    shift=st.tuples(st.integers(-10, 10), st.integers(-10, 10)),
)
def test_wrap_is_periodic(weights, image, shift):
    kernel = Kernel.from_weights(weights)
    rolled = correlate_float(np.roll(image, shift, axis=(0, 1)), kernel, "wrap")
    expected = np.roll(correlate_float(image, kernel, "wrap"), shift, axis=(0, 1))
    np.testing.assert_allclose(rolled, expected, rtol=0, atol=1e-12)


# --- correlate(): dtypes, ranges, specs, bad input -------------------------------------------


def test_sobel_range_modes_on_uint8():
    # A step up then a smaller step down: positive and negative x-derivatives.
    image = np.zeros((5, 8), np.uint8)
    image[:, 3:5] = 51
    image[:, 5:] = 38
    kernel = Kernel.parse("sobel:x")
    signed = correlate_float(to_float(image), kernel, "clamp")[..., 0]
    down = -4 * 13 / 255
    np.testing.assert_allclose(signed[2], [0, 0, 0.8, 0.8, down, down, 0, 0], atol=1e-12)
    expected = {
        "clamp": [0, 0, 204, 204, 0, 0, 0, 0],
        "abs": [0, 0, 204, 204, 52, 52, 0, 0],
        # -52/255 .. 204/255 -> 0..1: zero lands on 52/256 * 255 = 51.8 -> 52
        "normalize": [52, 52, 255, 255, 0, 0, 52, 52],
        # mid grey is 127.5: zero -> 128 (ties to even); -52/255 -> 75.5, a tie, checked below
        "offset": [128, 128, 255, 255, -1, -1, 128, 128],
    }
    for mode in RANGE_MODES:
        out = correlate(image, kernel, "clamp", range_mode=mode)
        assert out.dtype == np.uint8
        assert out.shape == image.shape
        want = np.array(expected[mode])
        known = want >= 0
        np.testing.assert_array_equal(out[2][known], want[known], err_msg=mode)
        # An integer kernel on an integer image puts every offset result on a .5 tie; float
        # round-off picks the side, so either neighbour is right.
        assert set(out[2][~known].tolist()) <= {75, 76}
        np.testing.assert_array_equal(out, np.broadcast_to(out[2], out.shape))
    # A float image keeps the signed values: no clamping, range_mode ignored.
    floats = correlate(image.astype(np.float32) / 255, kernel, "clamp", range_mode="abs")
    np.testing.assert_allclose(floats, signed.astype(np.float32), atol=1e-6)


def test_spec_strings_and_border_objects_are_accepted():
    image = np.random.default_rng(4).integers(0, 65536, (6, 7, 3)).astype(np.uint16)
    by_spec = correlate(image, "gaussian:sigma=1", "Symmetric")
    by_object = correlate(image, Kernel.parse("gaussian:sigma=1"), Border(BorderMode.REFLECT))
    np.testing.assert_array_equal(by_spec, by_object)
    assert correlate(image, "identity").tolist() == image.tolist()  # default border: clamp


@pytest.mark.parametrize(
    ("image", "error", "needle"),
    [
        (np.zeros((0, 4), np.uint8), ImageError, "empty"),
        (np.zeros((4, 4, 5), np.uint8), ImageError, "5 channels"),
        (np.zeros((4, 4), object), ImageError, "object"),
        (np.zeros((2, 2, 2, 2), np.float32), ImageError, "dimension"),
    ],
)
def test_bad_images_raise_one_line_errors(image, error, needle):
    with pytest.raises(error, match=needle) as info:
        correlate(image, "box:3")
    assert "\n" not in str(info.value)


def test_bad_arguments_raise_usage_errors():
    image = np.zeros((4, 4), np.uint8)
    with pytest.raises(BorderError, match="'fold'"):
        correlate(image, "box:3", "fold")
    with pytest.raises(UsageError, match="'wrap'"):
        correlate(image, "box:3", range_mode="wrap")
    with pytest.raises(KernelSpecError):
        correlate(image, "no-such-kernel")


def test_correlate_float_rejects_non_float_or_wrong_rank():
    kernel = Kernel.parse("box:3")
    with pytest.raises(ValueError, match="H×W×C float"):
        correlate_float(np.zeros((4, 4)), kernel, "clamp")
    with pytest.raises(ValueError, match="H×W×C float"):
        correlate_float(np.zeros((4, 4, 1), np.uint8), kernel, "clamp")
    with pytest.raises(ValueError, match="non-empty"):
        correlate_float(np.zeros((0, 4, 1)), kernel, "clamp")


def test_float32_input_is_accumulated_in_float64():
    x = np.random.default_rng(6).random((9, 9, 1)).astype(np.float32)
    kernel = Kernel.parse("gaussian:sigma=2")
    out = correlate_float(x, kernel, "mirror")
    assert out.dtype == np.float64
    expected = scipy_correlate(x.astype(np.float64), kernel.weights, "mirror")
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-13)
