"""The float64 conv reference against a naive loop and scipy.ndimage (it is the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from blurapp.conv.reference import conv2d_reference
from blurapp.core.errors import UsageError


def naive_conv(x, w, b, stride, dilation, padding, groups):
    """The textbook six nested loops, NCHW, float64."""
    n, _cin, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    mg = cout // groups
    y = np.zeros((n, cout, oh, ow))
    for b_ in range(n):
        for m in range(cout):
            g = m // mg
            for oy in range(oh):
                for ox in range(ow):
                    acc = 0.0 if b is None else float(b[m])
                    for c in range(cg):
                        for ky in range(kh):
                            for kx in range(kw):
                                iy = oy * stride + ky * dilation - padding
                                ix = ox * stride + kx * dilation - padding
                                if 0 <= iy < h and 0 <= ix < wd:
                                    acc += x[b_, g * cg + c, iy, ix] * w[m, c, ky, kx]
                    y[b_, m, oy, ox] = acc
    return y


@pytest.mark.parametrize(
    ("shape", "cout", "k", "stride", "dilation", "padding", "groups"),
    [
        ((2, 4, 7, 6), 6, 3, 1, 1, 1, 1),
        ((1, 4, 9, 8), 4, 3, 2, 2, 2, 4),
        ((1, 6, 8, 7), 4, 5, 1, 1, 2, 2),
        ((1, 3, 5, 5), 2, 1, 2, 1, 0, 1),
    ],
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_matches_naive_loops(shape, cout, k, stride, dilation, padding, groups, with_bias):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((cout, shape[1] // groups, k, k))
    b = rng.standard_normal(cout) if with_bias else None
    want = naive_conv(x, w, b, stride, dilation, padding, groups)
    got = conv2d_reference(
        x, w, b, stride=stride, dilation=dilation, padding=padding, groups=groups
    )
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    nhwc = conv2d_reference(
        x.transpose(0, 2, 3, 1), w, b, stride=stride, dilation=dilation, padding=padding,
        groups=groups, layout="nhwc",
    )  # fmt: skip
    np.testing.assert_allclose(nhwc, want.transpose(0, 2, 3, 1), rtol=1e-12, atol=1e-12)


def test_single_channel_is_scipy_correlate_with_zero_border():
    rng = np.random.default_rng(2)
    img = rng.standard_normal((11, 9))
    k = rng.standard_normal((5, 5))
    got = conv2d_reference(img[None, None], k[None, None], padding=2)[0, 0]
    np.testing.assert_allclose(got, ndimage.correlate(img, k, mode="constant"), atol=1e-12)


def test_kernel_larger_than_image_with_padding():
    y = conv2d_reference(np.ones((1, 1, 1, 1)), np.ones((1, 1, 3, 3)), padding=1)
    assert y.shape == (1, 1, 1, 1) and y[0, 0, 0, 0] == 1.0


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs", "message"),
    [
        ((1, 3, 5), (2, 3, 3, 3), {}, "4-D"),
        ((1, 3, 5, 5), (2, 2, 3, 3), {}, "input channels per group"),
        ((1, 4, 5, 5), (2, 2, 3, 3), {"groups": 3}, "groups=3"),
        ((1, 3, 2, 2), (2, 3, 3, 3), {}, "spans"),
        ((1, 3, 5, 5), (2, 3, 3, 3), {"layout": "chwn"}, "layout"),
        ((1, 3, 5, 5), (2, 3, 3, 3), {"stride": 0}, "stride"),
    ],
)
def test_bad_shapes_name_the_problem(x_shape, w_shape, kwargs, message):
    with pytest.raises(UsageError, match=message):
        conv2d_reference(np.zeros(x_shape), np.zeros(w_shape), **kwargs)


def test_wrong_layout_gets_a_hint():
    with pytest.raises(UsageError, match=r"is the input nhwc\? \(--layout\)"):
        conv2d_reference(np.zeros((1, 5, 5, 3)), np.zeros((2, 3, 3, 3)))
