"""The Python API refuses what it cannot do with a BlurappError that is a ValueError or a
TypeError (issue 26 item 6), as a user's script would meet it: arrays too large for memory
(checked before allocating), kernels as arrays or nested lists (taken as weights), dask arrays of
pixel types blurapp does not filter, and no numpy warning on the way."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.ndimage

import blurapp
import blurapp.dask
from blurapp import memory, pipeline
from blurapp.core.errors import (
    ArrayError,
    ArrayTypeError,
    BlurappError,
    ImageError,
    KernelSpecError,
    readable,
)

da = pytest.importorskip("dask.array")


def test_a_broadcast_view_too_large_for_memory_is_refused_before_allocating() -> None:
    huge = np.broadcast_to(np.zeros((1, 1), np.uint8), (10**6, 10**6))
    with pytest.raises(ArrayError) as caught:
        blurapp.filter_image(huge, "box:3", strategy="cpu")
    err = caught.value
    assert isinstance(err, ValueError) and isinstance(err, BlurappError)
    text = str(err)
    assert "1000000×1000000" in text and "GiB" in text and "\n" not in text
    assert "blurapp.dask.correlate" in text  # the way through


def test_the_memory_guard_counts_what_filter_pixels_allocates(monkeypatch) -> None:
    """An image that fits passes; the same one with less memory available is refused, and the
    bytes named are at least its output."""
    img = np.zeros((300, 400, 3), np.uint8)
    spec = blurapp.core.filterspec.FilterSpec.create("box:3", strategy="cpu")
    from blurapp.engine import tile_grid

    grid = tile_grid(img.shape, spec.kernel, "cpu")
    need = pipeline.filtering_bytes(img.shape, img.dtype, spec, np.dtype(np.uint8), grid)
    assert need >= img.nbytes  # the output at least; float64 copies besides on the cpu path
    assert need >= img.size * (1 + 8)
    monkeypatch.setattr(memory, "available_memory", lambda: int(need / memory.MEMORY_SHARE) + 1)
    out = blurapp.filter_image(img, "box:3", strategy="cpu").image
    assert out.shape == img.shape
    monkeypatch.setattr(memory, "available_memory", lambda: need // 2)
    with pytest.raises(ArrayError, match="300×400×3 image"):
        blurapp.filter_image(img, "box:3", strategy="cpu")


@pytest.mark.parametrize(
    "weights",
    [
        np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16,
        [[1 / 16, 2 / 16, 1 / 16], [2 / 16, 4 / 16, 2 / 16], [1 / 16, 2 / 16, 1 / 16]],
        ((0.0, 1.0), (0.5, 0.25), (0.0, -1.0)),  # even width, 3 tall: anchored at (1, 1)
        np.ones((1, 7), np.float32) / 7,
    ],
    ids=["ndarray", "nested-list", "tuples-2x3", "float32-1x7"],
)
@pytest.mark.parametrize("border", ["clamp", "zero", "reflect", "mirror", "wrap"])
def test_kernels_as_arrays_or_lists_are_weights(weights, border) -> None:
    rng = np.random.default_rng(3)
    img = rng.random((9, 13)).astype(np.float64)
    got = blurapp.filter_image(img, weights, border=border, strategy="cpu").image
    mode = {"clamp": "nearest", "zero": "constant", "wrap": "grid-wrap"}.get(border, border)
    expected = scipy.ndimage.correlate(img, np.asarray(weights, np.float64), mode=mode, cval=0.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    lazy = blurapp.dask.correlate(da.from_array(img, chunks=5), weights, border, "cpu")
    np.testing.assert_allclose(lazy.compute(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("weights", "words"),
    [
        ([[1, 2], [3]], "not a numeric array"),
        ([1, 2, 3], "must be 2-D"),
        (np.zeros((0, 3)), "empty"),
        ([[1j, 0]], "real numbers"),
        ([["a", "b"]], "not a numeric array"),
        ([[np.nan]], "not finite"),
        (np.broadcast_to(np.ones((1, 1)), (10**6, 10**6)), "above the limit of 513"),
        (5, "a 2-D array of weights"),
        (None, "a 2-D array of weights"),
    ],
)
def test_kernels_that_are_not_weights_are_one_line(weights, words) -> None:
    with pytest.raises(KernelSpecError) as caught:
        blurapp.filter_image(np.zeros((4, 4)), weights, strategy="cpu")
    assert isinstance(caught.value, ValueError)
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "array",
    [
        np.zeros((8, 8), object),
        np.zeros((8, 8), complex),
        np.array([["a", "b"]]),
        np.zeros((8, 8), np.int32),
        np.zeros((8, 8), np.float16),
    ],
    ids=["object", "complex", "str", "int32", "float16"],
)
def test_dask_arrays_of_unsupported_pixel_types_are_type_errors(array) -> None:
    for image in (array, da.from_array(array, chunks=4) if array.dtype != object else array):
        with pytest.raises(ArrayTypeError, match="unsupported pixel type") as caught:
            blurapp.dask.correlate(image, "box:3", strategy="cpu")
        assert isinstance(caught.value, TypeError) and isinstance(caught.value, ImageError)
    # dask itself cannot chunk an object array (NotImplementedError); made by hand it reaches
    # the same check.
    objects = da.from_array(np.zeros((8, 8), object), chunks=(4, 4))
    with pytest.raises(ArrayTypeError):
        blurapp.dask.correlate(objects, "box:3", strategy="cpu")


@pytest.mark.parametrize(
    ("image", "error", "words"),
    [
        ([[0, 1], [2, 3]], ArrayTypeError, "numpy array"),
        (np.zeros((4, 4), np.int64), ArrayTypeError, "unsupported pixel type int64"),
        (np.zeros((4, 4), object), ArrayTypeError, "unsupported pixel type object"),
        (np.zeros((4, 4, 5), np.uint8), ArrayError, "5 channels"),
        (np.zeros((0, 4), np.uint8), ArrayError, "empty"),
        (np.zeros((2, 2, 2, 2), np.uint8), ArrayError, "4 dimension"),
    ],
)
def test_filter_image_refuses_arrays_it_cannot_filter(image, error, words) -> None:
    with pytest.raises(error, match=words) as caught:
        blurapp.filter_image(image, "box:3", strategy="cpu")
    base = TypeError if error is ArrayTypeError else ValueError
    assert isinstance(caught.value, base) and isinstance(caught.value, BlurappError)
    with pytest.raises(error):
        blurapp.dask.correlate(image, "box:3", strategy="cpu")


def _hostile_images() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = []
    for dtype in (np.float32, np.float64):
        x = rng.random((12, 17, 3)).astype(dtype)
        x[2, 3] = np.inf
        x[5, 5, 1] = -np.inf
        x[7, 1, 2] = np.nan
        x[9, 9] = np.finfo(np.float32).max
        out.append(x)
    return out


@pytest.mark.parametrize("image", _hostile_images(), ids=["float32", "float64"])
@pytest.mark.parametrize("dtype", [None, "uint8", "uint16", "float32"])
@pytest.mark.parametrize("range_mode", ["clamp", "abs", "offset", "normalize"])
def test_no_numpy_warning_reaches_the_user(image, dtype, range_mode) -> None:
    """±inf, NaN and float32's largest value, into every output type and range mode: the
    result as the float64 reference says, and no RuntimeWarning printed on the way."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = blurapp.filter_image(
            image, "sobel:x", strategy="cpu", dtype=dtype, range_mode=range_mode
        ).image
    assert result.shape == image.shape
    if dtype is None and range_mode == "clamp":
        expected = np.stack(
            [scipy.ndimage.correlate(image[..., c].astype(np.float64),
                                     blurapp.core.kernel.Kernel.parse("sobel:x").weights,
                                     mode="nearest") for c in range(3)], axis=-1,
        )  # fmt: skip
        with np.errstate(over="ignore"):  # beyond float32: ±inf in a float32 result
            expected = expected.astype(image.dtype)
        np.testing.assert_array_equal(np.isnan(result), np.isnan(expected))
        np.testing.assert_array_equal(np.isinf(result), np.isinf(expected))
        finite = np.isfinite(expected)
        np.testing.assert_allclose(result[finite], expected[finite], rtol=1e-6)
        assert np.isinf(result).any() and np.isnan(result).any()


def test_readable_numbers_in_messages() -> None:
    assert readable(513) == "513"
    assert readable(10**14) == "100000000000000"
    assert readable(10**20) == "1e+20"
    assert readable(1e300) == "1e+300"
    assert readable(-(10**400)) == "about -1e+400"
    with pytest.raises(KernelSpecError) as caught:
        blurapp.core.kernel.Kernel.parse("im:Disk:1e300")
    assert "1e+300" in str(caught.value) and len(str(caught.value)) < 120
    with pytest.raises(KernelSpecError) as caught:
        blurapp.core.kernel.Kernel.parse("box:99999999999999999999999999999999999999x3")
    assert str(caught.value).startswith("box:1e+38x3 needs a 1e+38x3 kernel")
    from blurapp.core.errors import readable_text

    # only whole numbers of more than 15 digits; decimals and exponents as they are
    assert readable_text("w 0.12345678901234567890 x 1234567890123456 n 1.5e+300") == (
        "w 0.12345678901234567890 x 1.23457e+15 n 1.5e+300"
    )


@pytest.mark.gpu
@pytest.mark.parametrize(
    "strategy", ["direct", "tiled", "separable", "transpose", "lowrank", "fft"]
)
@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
def test_no_numpy_warning_from_the_gpu_path_either(gpu, strategy, dtype) -> None:
    """The GPU's float32 result quantised to 16 bits: float32's largest value times 65535
    overflowed (RuntimeWarning) before the clamp; now clamped first, the same pixels as the
    reference's (±1 where the float32 arithmetic rounds a tie the other way)."""
    image = _hostile_images()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = blurapp.filter_image(image, "gaussian:sigma=1", strategy=strategy, dtype=dtype)
    want = blurapp.filter_image(image, "gaussian:sigma=1", strategy="cpu", dtype=dtype).image
    if strategy == "fft":
        # A transform's error is relative to the block's largest value (3.4e38 here): the
        # small outputs of its block are not the reference's (a known limit of fft, not a
        # warning); the pixels the huge value reaches are the top in both.
        assert (got.image[8:11, 8:11] == want[8:11, 8:11]).all()
        return
    diff = np.abs(got.image.astype(np.int64) - want.astype(np.int64))
    # lowrank runs on the finite values and overlays the non-finite outputs exactly
    assert diff.max() <= 1
