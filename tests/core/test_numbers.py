"""Tests for blurapp.core.numbers: image checks, normalisation and range modes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blurapp.core.errors import ImageError, UsageError
from blurapp.core.numbers import (
    RANGE_MODES,
    SUPPORTED_DTYPES,
    check_image,
    from_float,
    to_float,
)

INT_TYPES = [np.uint8, np.uint16]


# --- check_image -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (1, 1, 1), (2, 3, 2), (4, 1, 3), (1, 7, 4)])
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_check_image_accepts_supported_images(shape, dtype):
    check_image(np.zeros(shape, dtype))


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        (np.zeros((0, 5), np.uint8), "empty"),
        (np.zeros((5, 0), np.uint8), "empty"),
        (np.zeros((0, 0, 3), np.float32), "empty"),
        (np.zeros(5, np.uint8), "1 dimension"),
        (np.zeros((2, 2, 2, 2), np.uint8), "4 dimension"),
        (np.zeros((4, 4, 5), np.uint8), "5 channels"),
        (np.zeros((4, 4, 0), np.uint8), "0 channels"),
        (np.zeros((4, 4), object), "object"),
        (np.zeros((4, 4), np.int16), "int16"),
        (np.zeros((4, 4), bool), "bool"),
        (np.zeros((4, 4), np.complex64), "complex64"),
        (np.zeros((4, 4), np.float16), "float16"),
        ([[1, 2], [3, 4]], "numpy array"),
    ],
)
def test_check_image_rejects_bad_images_with_one_line(image, needle):
    with pytest.raises(ImageError) as info:
        check_image(image)
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


def test_unsupported_dtype_message_lists_supported_ones():
    with pytest.raises(ImageError, match=r"int32; supported: uint8, uint16, float32, float64"):
        check_image(np.zeros((2, 2), np.int32))


# --- to_float --------------------------------------------------------------------------------


def test_to_float_normalises_and_is_always_three_d():
    x = to_float(np.array([[0, 51, 255]], np.uint8))
    assert x.shape == (1, 3, 1)
    assert x.dtype == np.float64
    np.testing.assert_array_equal(x[0, :, 0], [0.0, 0.2, 1.0])

    x = to_float(np.array([[[0, 65535]]], np.uint16), np.float32)
    assert x.shape == (1, 1, 2)
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x[0, 0], [0.0, 1.0])

    floats = np.array([[-0.5, 2.0]], np.float32)
    x = to_float(floats)
    np.testing.assert_array_equal(x[:, :, 0], floats.astype(np.float64))
    assert x.flags.c_contiguous


def test_to_float_makes_non_contiguous_input_contiguous():
    image = np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2]
    x = to_float(image)
    assert x.flags.c_contiguous
    np.testing.assert_array_equal(x[:, :, 0], image)


def test_to_float_rejects_bad_input():
    with pytest.raises(ImageError, match="5 channels"):
        to_float(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(UsageError, match="float dtype"):
        to_float(np.zeros((2, 2), np.uint8), np.uint8)


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("work", [np.float32, np.float64])
def test_every_integer_value_round_trips_exactly(dtype, work):
    values = np.arange(np.iinfo(dtype).max + 1).astype(dtype)
    image = values.reshape(-1, 256)
    back = from_float(to_float(image, work), dtype, squeeze=True)
    assert back.dtype == dtype
    assert back.shape == image.shape
    np.testing.assert_array_equal(back, image)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 4), (3, 4, 1), (2, 5, 3), (1, 1, 4)])
def test_identity_round_trip_keeps_shape_and_dtype(dtype, shape):
    rng = np.random.default_rng(1)
    if dtype.kind == "u":
        image = rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)
    else:
        image = rng.normal(size=shape).astype(dtype)
    back = from_float(to_float(image), dtype, squeeze=image.ndim == 2)
    assert back.dtype == dtype
    assert back.shape == shape
    np.testing.assert_array_equal(back, image)


@settings(max_examples=50, deadline=None)
@given(
    image=hnp.arrays(
        st.sampled_from([np.dtype(np.uint8), np.dtype(np.uint16)]),
        hnp.array_shapes(min_dims=3, max_dims=3, max_side=6).filter(lambda s: s[2] <= 4),
    ),
    work=st.sampled_from([np.float32, np.float64]),
    mode=st.sampled_from(["clamp", "abs"]),
)
def test_integer_round_trip_is_exact_property(image, work, mode):
    # clamp and abs are identities on [0, 1], so both must give the image back bit for bit.
    back = from_float(to_float(image, work), image.dtype, range_mode=mode, squeeze=False)
    assert back.dtype == image.dtype
    np.testing.assert_array_equal(back, image)


def test_float32_survives_a_float64_trip_exactly():
    image = np.random.default_rng(2).normal(size=(5, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(from_float(to_float(image), np.float32, squeeze=False), image)


# --- range modes -----------------------------------------------------------------------------

SIGNED = np.array([-1.0, -0.5, 0.0, 0.25, 1.5, 0.5 / 255]).reshape(1, -1, 1)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # 0.25 * 255 = 63.75 -> 64; 0.5 * 255 = 127.5 -> 128 (np.rint: ties to even)
        ("clamp", [0, 0, 0, 64, 255, 0]),
        ("abs", [255, 128, 0, 64, 255, 0]),
        ("offset", [0, 0, 128, 191, 255, 128]),
        # (x + 1) / 2.5: 0, 0.2, 0.4, 0.5, 1, 0.4016 -> 0, 51, 102, 128, 255, 102
        ("normalize", [0, 51, 102, 128, 255, 102]),
    ],
)
def test_range_modes_uint8(mode, expected):
    out = from_float(SIGNED, np.uint8, range_mode=mode, squeeze=True)
    assert out.dtype == np.uint8
    assert out.shape == (1, 6)
    np.testing.assert_array_equal(out[0], expected)


@pytest.mark.parametrize("mode", RANGE_MODES)
def test_range_modes_uint16_match_formula(mode):
    x = np.linspace(-1.3, 1.7, 97).reshape(1, 97, 1)
    mapped = {
        "clamp": x,
        "abs": np.abs(x),
        "offset": x + 0.5,
        "normalize": (x - x.min()) / (x.max() - x.min()),
    }[mode]
    expected = np.clip(np.rint(np.clip(mapped, 0, 1) * 65535), 0, 65535).astype(np.uint16)
    np.testing.assert_array_equal(
        from_float(x, np.uint16, range_mode=mode, squeeze=False), expected
    )


def test_normalize_stretches_all_channels_together_and_constant_maps_to_zero():
    x = np.array([[[0.0, 0.5], [0.25, 1.0]]])
    out = from_float(x, np.uint8, range_mode="normalize", squeeze=False)
    np.testing.assert_array_equal(out, [[[0, 128], [64, 255]]])
    flat = np.full((2, 3, 1), 0.7)
    assert not from_float(flat, np.uint8, range_mode="normalize", squeeze=False).any()


def test_non_finite_values_in_integer_output():
    x = np.array([np.nan, np.inf, -np.inf, 0.5]).reshape(1, 4, 1)
    np.testing.assert_array_equal(from_float(x, np.uint8, squeeze=True)[0], [0, 255, 0, 128])
    # normalize takes the finite range only
    out = from_float(
        x * np.array([1, 1, 1, 2]).reshape(1, 4, 1), np.uint8, range_mode="normalize", squeeze=True
    )
    np.testing.assert_array_equal(out[0], [0, 255, 0, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_output_is_not_clamped_and_ignores_range_mode(dtype):
    for mode in RANGE_MODES:
        out = from_float(SIGNED, dtype, range_mode=mode, squeeze=False)
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, SIGNED.astype(dtype))
    out = from_float(SIGNED, dtype, squeeze=False)
    assert out is not SIGNED


def test_from_float_rejects_bad_arguments():
    with pytest.raises(UsageError, match=r"'wrapped'.*clamp, abs, offset, normalize"):
        from_float(SIGNED, np.uint8, range_mode="wrapped", squeeze=False)
    with pytest.raises(UsageError, match="int16"):
        from_float(SIGNED, np.int16, squeeze=False)
    with pytest.raises(UsageError, match="unsupported pixel type"):
        from_float(SIGNED, "not-a-type", squeeze=False)
    with pytest.raises(ValueError, match="squeeze"):
        from_float(np.zeros((2, 2, 3)), np.uint8, squeeze=True)
    with pytest.raises(UsageError, match="numeric"):
        from_float(np.zeros((2, 2, 1), object), np.uint8, squeeze=False)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_copy_and_put_pixels_move_the_same_values_as_numpy(dtype, channels) -> None:
    """copy_pixels and put_pixels (a pixel's channels moved as one item) give what numpy's
    element-wise copy and assignment give, on views of RGBA buffers as a readback has them."""
    from blurapp.core.numbers import copy_pixels, put_pixels

    rng = np.random.default_rng(channels)
    rgba = (rng.random((7, 13, 4)) * 200).astype(dtype)
    padded = np.zeros((7, 16, 4), dtype)
    padded[:, :13] = rgba
    for view in (rgba[:, :, :channels], padded[:, :13, :channels], rgba[:, 1:12, :channels]):
        got = copy_pixels(view)
        assert got.flags.c_contiguous and got.dtype == view.dtype
        np.testing.assert_array_equal(got, view)
        dst = np.full((*view.shape[:2], 4), 9, dtype)
        put_pixels(dst, view)
        want = np.full_like(dst, 9)
        want[:, :, :channels] = view
        np.testing.assert_array_equal(dst, want)
    # Not the same type, or a last axis that is not contiguous: numpy's own way.
    dst = np.zeros((7, 13, 4), np.float64)
    put_pixels(dst, rgba[:, :, :channels])
    np.testing.assert_array_equal(dst[:, :, :channels], rgba[:, :, :channels])
    np.testing.assert_array_equal(copy_pixels(rgba[:, :, ::-1]), rgba[:, :, ::-1])
