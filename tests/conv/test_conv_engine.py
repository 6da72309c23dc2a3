"""GPU Conv2D strategies against the float64 reference: shapes, strides, dilation, padding, groups.

Every case runs each strategy in both layouts on sizes that are not multiples of any tile
(output channels, pixels and input channels all leave a masked edge tile). Each distinct case
compiles its own implicit-GEMM pipeline on lavapipe, so the list is kept short but covers
strides 1 and 2, dilation 1 and 2, padding 0..2 and kernels 1, 3 and 5.
"""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.conv.data import random_layer, relative_error, to_layout
from blurapp.conv.engine import (
    CONV_STRATEGIES,
    choose_strategy,
    conv2d,
    why_not,
)
from blurapp.conv.reference import conv2d_reference
from blurapp.conv.spec import ConvSpec
from blurapp.conv.tile_budget import plan_tile
from blurapp.core.errors import StrategyError, UsageError

pytestmark = pytest.mark.gpu

TOL = 1e-4

# (n, cin, h, w, cout, k, stride, dilation, padding)
DENSE = [
    pytest.param((2, 3, 13, 11, 5, 3, 1, 1, 1), id="k3-s1-d1-p1-batch2"),
    pytest.param((1, 5, 17, 10, 9, 3, 2, 1, 0), id="k3-s2-p0"),
    pytest.param((1, 4, 15, 19, 6, 3, 1, 2, 2), id="k3-d2-p2"),
    pytest.param((1, 6, 12, 9, 7, 5, 1, 1, 2), id="k5-p2"),
    pytest.param((1, 3, 16, 14, 33, 5, 2, 2, 1), id="k5-s2-d2-p1-cout33"),
    pytest.param((2, 7, 9, 9, 4, 1, 1, 1, 0), id="k1-pointwise"),
    pytest.param((1, 17, 6, 7, 5, 1, 2, 1, 1), id="k1-s2-p1-cin17"),
    pytest.param((1, 2, 1, 1, 3, 3, 1, 1, 1), id="1x1-image-k3"),
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", DENSE)
def test_dense_strategies_match_reference(conv_runner, case, layout):
    n, cin, h, w, cout, k, s, d, p = case
    x, wt, b = random_layer(n, cin, h, w, cout, k)
    xs = to_layout(x, layout)
    layer = {"stride": s, "dilation": d, "padding": p, "layout": layout}
    ref = conv2d_reference(xs, wt, b, **layer)
    for strategy in ("direct", "im2col", "implicit-gemm"):
        r = conv2d(xs, wt, b, strategy=strategy, runner=conv_runner, **layer)
        assert r.y.shape == ref.shape and r.y.dtype == np.float32
        assert r.strategy == strategy
        assert relative_error(r.y, ref) < TOL, strategy


# (n, cin, h, w, cout, k, stride, dilation, padding, groups)
GROUPED = [
    pytest.param((1, 6, 11, 9, 6, 3, 1, 1, 1, 6), id="depthwise-k3"),
    pytest.param((2, 5, 10, 13, 10, 5, 2, 1, 2, 5), id="depthwise-x2-k5-s2"),
    pytest.param((1, 4, 9, 8, 6, 3, 1, 2, 2, 2), id="groups2-d2"),
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", GROUPED)
def test_grouped_runs_direct_and_matches_reference(conv_runner, case, layout):
    n, cin, h, w, cout, k, s, d, p, g = case
    x, wt, b = random_layer(n, cin, h, w, cout, k, g)
    xs = to_layout(x, layout)
    layer = {"stride": s, "dilation": d, "padding": p, "groups": g, "layout": layout}
    r = conv2d(xs, wt, b, strategy="auto", runner=conv_runner, **layer)
    assert r.strategy == "direct"
    assert relative_error(r.y, conv2d_reference(xs, wt, b, **layer)) < TOL


@pytest.mark.parametrize("strategy", ["im2col", "implicit-gemm"])
def test_gemm_strategies_refuse_groups_clearly(conv_runner, strategy):
    x, wt, _ = random_layer(1, 4, 6, 6, 4, 3, 4)
    with pytest.raises(StrategyError, match=r"groups=1.*depthwise.*--strategy direct"):
        conv2d(x, wt, groups=4, strategy=strategy, runner=conv_runner)


def test_auto_choices(conv_runner):
    limits = conv_runner.limits
    pointwise = ConvSpec(1, 16, 8, 8, 32, 1, 1, layout="nhwc")
    assert choose_strategy(pointwise, limits)[0] == "im2col"
    assert "plain tiled GEMM" in choose_strategy(pointwise, limits)[1]
    assert choose_strategy(ConvSpec(1, 16, 8, 8, 32, 3, 3, padding=1), limits)[0] == (
        "implicit-gemm"
    )
    assert choose_strategy(ConvSpec(1, 8, 8, 8, 8, 3, 3, groups=8), limits)[0] == "direct"


def test_pointwise_nhwc_is_one_gemm_without_a_column_matrix(conv_runner):
    x, wt, b = random_layer(2, 8, 5, 7, 6, 1)
    xs = to_layout(x, "nhwc")
    r = conv2d(xs, wt, b, layout="nhwc", strategy="im2col", runner=conv_runner)
    assert [p.name for p in r.timing.passes] == ["gemm"]
    assert r.memory.column_bytes == 0
    assert relative_error(r.y, conv2d_reference(xs, wt, b, layout="nhwc")) < TOL


def test_memory_shows_the_im2col_blowup(conv_runner):
    x, wt, b = random_layer(1, 4, 10, 12, 8, 3)
    r = conv2d(x, wt, b, padding=1, strategy="im2col", runner=conv_runner)
    assert r.memory.column_bytes == 4 * 9 * 10 * 12 * 4  # Cin·k²·pixels·float32
    assert r.memory.blowup == pytest.approx(9.0)
    assert [p.name for p in r.timing.passes] == ["im2col", "gemm"]
    implicit = conv2d(x, wt, b, padding=1, strategy="implicit-gemm", runner=conv_runner)
    assert implicit.memory.column_bytes == 0
    assert implicit.memory.total_bytes < r.memory.total_bytes


def test_timing_and_flops_are_reported(conv_runner):
    x, wt, b = random_layer(1, 4, 10, 12, 8, 3)
    r = conv2d(x, wt, b, padding=1, strategy="implicit-gemm", runner=conv_runner)
    assert r.spec.flops == 2 * 8 * 10 * 12 * 4 * 9
    if conv_runner.context.has_timestamps:
        assert r.timing.timer == "gpu"
    assert r.gpu_ms > 0 and r.gflops > 0
    d = r.to_dict()
    assert d["tiles"]["budget"]["fits"] is True and d["memory"]["column_bytes"] == 0


@pytest.mark.parametrize("strategy", ["im2col", "implicit-gemm"])
def test_gemm_tiles_use_the_planner_accounting(conv_runner, strategy):
    limits = conv_runner.limits
    spec = ConvSpec(1, 24, 20, 20, 40, 5, 5, padding=2)
    tiles = CONV_STRATEGIES[strategy].tiles(spec, limits)
    again = (
        plan_tile(tiles.tile, tiles.cin_block, tiles.cout_block, (5, 5), dtype="fp32",
                  budget=limits.workgroup_storage, cin=24, cout=40)
        if strategy == "implicit-gemm"
        else plan_tile(tiles.tile, tiles.cin_block, tiles.cout_block, 1, dtype="fp32",
                       budget=limits.workgroup_storage, cin=spec.gemm_k, cout=40)
    )  # fmt: skip
    assert tiles.budget == again and tiles.budget.fits
    assert tiles.threads <= limits.max_invocations


def test_no_tile_fits_a_tiny_budget_says_so():
    from blurapp.core.planner import DeviceLimits

    tiny = DeviceLimits(workgroup_storage=256, max_invocations=256)
    spec = ConvSpec(1, 4, 9, 9, 4, 3, 3)
    assert "no tile fits" in why_not("implicit-gemm", spec, tiny)
    assert choose_strategy(spec.with_layout("nchw"), tiny)[0] == "direct"


@pytest.mark.parametrize(
    ("x", "w", "kwargs", "error", "message"),
    [
        (np.zeros((1, 3, 5, 5)), np.zeros((2, 3, 3, 3)), {"strategy": "fft"}, StrategyError, "fft"),
        (np.zeros((3, 5, 5)), np.zeros((2, 3, 3, 3)), {}, UsageError, "4-D"),
        (np.zeros((1, 3, 5, 5)), np.zeros((2, 3, 7, 7)), {}, UsageError, "spans"),
        (np.full((1, 3, 5, 5), np.nan), np.zeros((2, 3, 3, 3)), {}, UsageError, "NaN"),
        (np.zeros((1, 3, 5, 5)), np.zeros((2, 3, 3, 3)), {"groups": 2}, UsageError, "groups"),
    ],
)
def test_bad_input_is_a_usage_error(conv_runner, x, w, kwargs, error, message):
    with pytest.raises(error, match=message):
        conv2d(x, w, runner=conv_runner, **kwargs)


def test_bias_shape_is_checked(conv_runner):
    x, wt, _ = random_layer(1, 3, 5, 5, 2, 3)
    with pytest.raises(UsageError, match="bias"):
        conv2d(x, wt, np.zeros(3), runner=conv_runner)


def test_wall_clock_timing_without_timestamps(gpu):
    import dataclasses

    from blurapp.conv.engine import ConvRunner

    runner = ConvRunner(dataclasses.replace(gpu, has_timestamps=False))
    x, wt, b = random_layer(1, 4, 10, 12, 8, 3)
    r = conv2d(x, wt, b, padding=1, strategy="im2col", runner=runner)
    assert r.timing.timer == "wall"
    assert [p.name for p in r.timing.passes] == ["im2col", "gemm"]
    assert all(p.ms > 0 for p in r.timing.passes)
    ref = conv2d_reference(x, wt, b, padding=1)
    np.testing.assert_allclose(r.y, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_pipeline_cache_is_bounded(gpu, monkeypatch):
    """Each layer shape or layout compiles its own pipelines; the runner keeps only
    KEPT_PIPELINES of them, and a dropped one is compiled again, with the same result."""
    from blurapp.conv import engine

    monkeypatch.setattr(engine, "KEPT_PIPELINES", 1)
    runner = engine.ConvRunner(gpu)
    x, wt, b = random_layer(1, 3, 7, 6, 4, 3)
    ref = conv2d_reference(x, wt, b, padding=1)
    for layout in ("nchw", "nhwc", "nchw"):
        r = conv2d(to_layout(x, layout), wt, b, padding=1, layout=layout, strategy="direct",
                   runner=runner)  # fmt: skip
        y = r.y if layout == "nchw" else np.transpose(r.y, (0, 3, 1, 2))
        np.testing.assert_allclose(y, ref, rtol=TOL, atol=TOL * np.abs(ref).max())
        assert len(runner._pipelines) == 1
    assert runner.stats == {"pipelines": 3, "pipelines_evicted": 2}
