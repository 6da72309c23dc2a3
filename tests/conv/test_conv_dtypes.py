"""int8 and fp16 layers: exact int32 accumulators, masks of partial blocks, stated errors.

Stated error bounds (max |y − ref| / max |ref| against the float64 reference of the float
inputs, standard-normal data): int8 with per-tensor min/max input and symmetric weight
quantisation < 3e-2 (measured 7e-3 to 1.3e-2: the quantisation, not the arithmetic, which
is exact); fp16 storage with f32 sums < 2e-3 (measured 2e-4 to 4e-4: f16's 11-bit mantissa).
"""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.conv.data import random_layer, relative_error, to_layout
from blurapp.conv.engine import conv2d, why_not
from blurapp.conv.quant import (
    QuantParams,
    choose_qparams,
    conv2d_int_reference,
    pack_input,
    quantize,
    quantize_bias,
)
from blurapp.conv.reference import conv2d_reference
from blurapp.conv.spec import ConvSpec
from blurapp.core.errors import StrategyError

INT8_BOUND = 3e-2
FP16_BOUND = 2e-3


def int64_accumulators(result, xs, wt, b):
    qx, qw = result.quant["input"], result.quant["weights"]
    bq = quantize_bias(b, result.spec.cout, qx, qw)
    return conv2d_int_reference(
        quantize(xs, qx), qx.zero_point, quantize(wt, qw), qw.zero_point, bq, result.spec
    )


def test_quantisation_round_trip_and_exact_zero():
    a = np.array([-1.0, 0.0, 0.5, 2.0])
    qp = choose_qparams(a)
    assert quantize(np.zeros(1), qp)[0] == qp.zero_point  # padding is exact
    assert np.abs((quantize(a, qp).astype(float) - qp.zero_point) * qp.scale - a).max() <= (
        qp.scale / 2 + 1e-9
    )
    sym = choose_qparams(a, symmetric=True)
    assert sym.zero_point == 0 and quantize(np.array([2.0]), sym)[0] == 127


def test_packing_puts_four_channels_of_a_pixel_in_one_word():
    spec = ConvSpec(1, 6, 2, 3, 4, 1, 1)
    xq = np.arange(36, dtype=np.int8).reshape(1, 6, 2, 3)
    packed = pack_input(xq, spec, zero_point=-7)
    assert packed.shape == (1, 2, 2, 3) and packed.dtype == np.uint32
    word = packed[0, 1, 0, 0:1].view(np.int8)
    assert list(word) == [24, 30, -7, -7]  # channels 4 and 5, then the zero-point padding
    nhwc = pack_input(to_layout(xq, "nhwc"), spec.with_layout("nhwc"), zero_point=-7)
    assert np.array_equal(nhwc, packed.transpose(0, 2, 3, 1))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("strategy", ["implicit-gemm", "direct"])
def test_int8_issue_masks_accumulators_equal_int64(conv_runner, strategy, layout):
    """M=5 with TM=2 (the last output block has one valid channel), Cin=10 with TC=8 (the last
    input block has one of two words, that word two of four channels), 9×11 pixels over 4×4
    tiles; weights with a zero point, so the −zw·Σxq term runs too."""
    x, wt, b = random_layer(2, 10, 9, 11, 5, 3, seed=5)
    xs = to_layout(x, layout)
    qw = choose_qparams(wt)  # affine: zw ≠ 0
    assert qw.zero_point != 0
    tiles = (4, 4, 2, 8) if strategy == "implicit-gemm" else None
    r = conv2d(xs, wt, b, padding=1, layout=layout, strategy=strategy, dtype="int8",
               accumulators=True, w_quant=qw, tiles=tiles, runner=conv_runner)  # fmt: skip
    if tiles:
        budget = r.tiles.budget
        assert (budget.cout_blocks, budget.last_cout_block_valid) == (3, 1)
        assert (budget.cin_blocks, budget.last_cin_block_valid) == (2, 2)
    want = int64_accumulators(r, xs, wt, b)
    assert r.accumulators.dtype == np.int32
    np.testing.assert_array_equal(r.accumulators.astype(np.int64), want)
    scale = r.quant["input"].scale * r.quant["weights"].scale
    np.testing.assert_allclose(r.y, (want * scale).astype(np.float32), rtol=1e-6)
    ref = conv2d_reference(xs, wt, b, padding=1, layout=layout)
    assert relative_error(r.y, ref) < INT8_BOUND


# (n, cin, h, w, cout, k, stride, dilation, padding, groups)
CASES = [
    pytest.param((1, 7, 10, 9, 9, 3, 2, 1, 1, 1), id="k3-s2"),
    pytest.param((1, 4, 11, 12, 6, 3, 1, 2, 2, 1), id="k3-d2"),
    pytest.param((2, 16, 6, 8, 12, 1, 1, 1, 0, 1), id="k1"),
    pytest.param((1, 6, 9, 8, 6, 3, 1, 1, 1, 6), id="depthwise"),
    pytest.param((1, 6, 9, 8, 4, 3, 1, 1, 1, 2), id="groups2"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", CASES)
def test_int8_and_fp16_match_their_references(conv_runner, case, layout):
    n, cin, h, w, cout, k, s, d, p, g = case
    x, wt, b = random_layer(n, cin, h, w, cout, k, g, seed=11)
    xs = to_layout(x, layout)
    layer = {"stride": s, "dilation": d, "padding": p, "groups": g, "layout": layout}
    ref = conv2d_reference(xs, wt, b, **layer)
    strategies = ["direct"] if g > 1 else ["direct", "implicit-gemm"]
    for strategy in strategies:
        r = conv2d(xs, wt, b, strategy=strategy, dtype="int8", accumulators=True,
                   runner=conv_runner, **layer)  # fmt: skip
        np.testing.assert_array_equal(r.accumulators, int64_accumulators(r, xs, wt, b))
        assert relative_error(r.y, ref) < INT8_BOUND, strategy
        if "shader-f16" in conv_runner.context.features:
            r = conv2d(xs, wt, b, strategy=strategy, dtype="fp16", runner=conv_runner, **layer)
            assert r.y.dtype == np.float32 and relative_error(r.y, ref) < FP16_BOUND, strategy


@pytest.mark.gpu
def test_auto_picks_a_strategy_that_runs_the_dtype(conv_runner):
    x, wt, b = random_layer(1, 8, 8, 8, 8, 3, seed=1)
    r = conv2d(x, wt, b, padding=1, dtype="int8", runner=conv_runner)
    assert r.strategy == "implicit-gemm" and r.dtype == "int8"
    assert r.to_dict()["quant"]["weights"]["zero_point"] == 0
    assert r.memory.input_bytes == 8 * 8 * 8  # one byte per value, packed


@pytest.mark.parametrize("strategy", ["im2col", "winograd"])
def test_float32_only_strategies_name_the_ones_that_can(strategy):
    from blurapp.conv.engine import ConvOptions
    from blurapp.core.planner import DeviceLimits

    spec = ConvSpec(1, 8, 8, 8, 8, 3, 3, padding=1)
    reason = why_not(strategy, spec, DeviceLimits(workgroup_storage=32768),
                     ConvOptions(dtype="int8"))  # fmt: skip
    assert reason == (
        f"{strategy} runs --dtype float32 only; for --dtype int8 use --strategy "
        "implicit-gemm or direct"
    )


@pytest.mark.gpu
def test_a_forced_tile_that_breaks_the_shader_rules_is_refused(conv_runner):
    x, wt, _ = random_layer(1, 6, 8, 8, 5, 3)
    with pytest.raises(StrategyError, match="TC=6 is not a multiple of 4"):
        conv2d(x, wt, strategy="implicit-gemm", dtype="int8", tiles=(4, 4, 2, 6),
               runner=conv_runner)  # fmt: skip


def test_weights_quantised_with_clipping_still_have_exact_accumulators():
    # the oracle itself: a hand-sized 1×1 layer
    spec = ConvSpec(1, 2, 1, 1, 1, 1, 1)
    xq = np.array([[[[3]], [[-2]]]], np.int8)
    wq = np.array([[[[4]], [[5]]]], np.int8)
    acc = conv2d_int_reference(xq, 1, wq, -1, np.array([7], np.int32), spec)
    assert acc[0, 0, 0, 0] == 7 + (3 - 1) * (4 + 1) + (-2 - 1) * (5 + 1)
    assert QuantParams(0.5, 0).to_dict() == {"scale": 0.5, "zero_point": 0}
