"""Winograd F(2×2,3×3) and F(4×4,3×3) against the float64 reference, and what they refuse.

Stated error bounds (max |y − ref| / max |ref|, standard-normal data, float32 everywhere):
F(2×2,3×3) stays below 1e-5 (measured 1e-7 to 4e-7, as tight as implicit GEMM's 1e-6 on the
same layers); F(4×4,3×3) below 1e-4 (measured 1e-6 to 6e-6: 5 to 20× F(2×2)'s, from its
coefficients up to 8 and 1/24).
"""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.conv.data import random_layer, relative_error, to_layout
from blurapp.conv.engine import CONV_STRATEGIES, conv2d, why_not
from blurapp.conv.reference import conv2d_reference
from blurapp.conv.spec import ConvSpec
from blurapp.conv.winograd import transform_code, winograd_matrices
from blurapp.core.errors import StrategyError, UsageError

BOUND = {2: 1e-5, 4: 1e-4}


@pytest.mark.parametrize("m", [2, 4])
def test_matrices_compute_a_2d_correlation(m):
    bt, g, at = winograd_matrices(m)
    rng = np.random.default_rng(m)
    d, k = rng.standard_normal((m + 2, m + 2)), rng.standard_normal((3, 3))
    y = at @ ((g @ k @ g.T) * (bt @ d @ bt.T)) @ at.T
    want = [[np.sum(d[i : i + 3, j : j + 3] * k) for j in range(m)] for i in range(m)]
    np.testing.assert_allclose(y, want, atol=1e-12)


def test_transform_code_skips_zero_coefficients():
    bt, _, _ = winograd_matrices(2)
    lines = transform_code(bt, "d", "v", "e")
    assert lines[0] == "let e_0_0 = d_0_0 - d_2_0;"  # Bᵀ row 0 is (1, 0, −1, 0)
    assert len(lines) == 32 and all(line.startswith("let ") for line in lines)


# (n, cin, h, w, cout, padding, groups): odd sizes leave partial tiles on both edges
CASES = [
    pytest.param((2, 3, 13, 11, 5, 1, 1), id="batch2-p1"),
    pytest.param((1, 5, 9, 10, 7, 0, 1), id="p0"),
    pytest.param((1, 4, 7, 8, 6, 2, 2), id="groups2-p2"),
    pytest.param((1, 6, 11, 9, 6, 1, 6), id="depthwise"),
    pytest.param((1, 2, 1, 1, 3, 1, 1), id="1x1-image"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", CASES)
def test_winograd_matches_reference(conv_runner, case, layout, m):
    n, cin, h, w, cout, p, g = case
    x, wt, b = random_layer(n, cin, h, w, cout, 3, g, seed=7)
    xs = to_layout(x, layout)
    layer = {"padding": p, "groups": g, "layout": layout}
    ref = conv2d_reference(xs, wt, b, **layer)
    r = conv2d(xs, wt, b, strategy="winograd", winograd_tile=m, runner=conv_runner, **layer)
    assert r.y.shape == ref.shape and r.strategy == "winograd"
    assert relative_error(r.y, ref) < BOUND[m]
    # all three transforms run on the GPU, around the batched GEMMs
    names = [pass_.name for pass_ in r.timing.passes]
    assert names == ["filter-transform", "input-transform", "gemm", "output-transform"]
    alpha, _, _, tiles = CONV_STRATEGIES["winograd"].geometry(r.spec, m)
    assert r.memory.workspace_bytes == alpha**2 * 4 * (cout * cin // g + (cin + cout) * tiles)


@pytest.mark.gpu
def test_f4_loses_more_precision_than_f2_on_a_deep_layer(conv_runner):
    x, wt, b = random_layer(1, 32, 12, 12, 8, 3, seed=3)
    ref = conv2d_reference(x, wt, b, padding=1)
    err = {}
    for m in (2, 4):
        r = conv2d(x, wt, b, padding=1, strategy="winograd", winograd_tile=m, runner=conv_runner)
        err[m] = relative_error(r.y, ref)
    assert err[2] < BOUND[2] and err[4] < BOUND[4]
    assert err[4] > 2 * err[2]


@pytest.mark.parametrize(
    ("shape", "kwargs", "names"),
    [
        ((1, 4, 9, 9, 4, 5, 5), {}, "implicit-gemm, im2col or direct"),
        ((1, 4, 9, 9, 4, 3, 3), {"stride": 2}, "stride 2"),
        ((1, 4, 9, 9, 4, 3, 3), {"dilation": 2}, "dilation 2"),
        ((1, 4, 9, 9, 4, 5, 5), {"groups": 4}, "use --strategy direct"),
    ],
)
def test_refuses_what_it_cannot_run_in_one_line(shape, kwargs, names):
    from blurapp.core.planner import DeviceLimits

    spec = ConvSpec(*shape, **kwargs)
    reason = why_not("winograd", spec, DeviceLimits(workgroup_storage=32768))
    assert reason is not None and "\n" not in reason
    assert reason.startswith("winograd runs 3×3 kernels with stride 1 and dilation 1")
    assert names in reason


@pytest.mark.gpu
def test_conv2d_raises_the_refusal(conv_runner):
    x, wt, _ = random_layer(1, 3, 8, 8, 4, 5)
    with pytest.raises(StrategyError, match=r"5×5 stride 1 dilation 1: use --strategy"):
        conv2d(x, wt, strategy="winograd", runner=conv_runner)
    with pytest.raises(UsageError, match="winograd tile"):
        conv2d(x, wt, strategy="winograd", winograd_tile=3, runner=conv_runner)
