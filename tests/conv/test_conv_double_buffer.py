"""Double-buffered implicit GEMM: same results as single-buffered, twice the tile memory."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.conv.data import random_layer, relative_error, to_layout
from blurapp.conv.engine import conv2d
from blurapp.conv.reference import conv2d_reference
from blurapp.core.errors import StrategyError

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("tiles", [(4, 4, 8, 4), (4, 8, 4, 2)])
def test_double_buffered_equals_single_buffered(conv_runner, layout, tiles):
    # 13 input channels: 4 blocks of 4 (the last with 1 valid) or 7 of 2; both copies used
    x, wt, b = random_layer(1, 13, 9, 11, 6, 3, seed=2)
    xs = to_layout(x, layout)
    layer = {"padding": 1, "layout": layout, "strategy": "implicit-gemm", "tiles": tiles}
    single = conv2d(xs, wt, b, runner=conv_runner, **layer)
    double = conv2d(xs, wt, b, double_buffer=True, runner=conv_runner, **layer)
    np.testing.assert_array_equal(double.y, single.y)  # same sums in the same order
    assert relative_error(double.y, conv2d_reference(xs, wt, b, padding=1, layout=layout)) < 1e-5
    sb, db = single.tiles.budget, double.tiles.budget
    assert db.double_buffer and not sb.double_buffer
    assert db.total_bytes - sb.total_bytes == sb.input_bytes + sb.weight_bytes


def test_double_buffering_is_refused_where_it_does_not_exist(conv_runner):
    x, wt, _ = random_layer(1, 4, 8, 8, 4, 3)
    with pytest.raises(StrategyError, match="no double-buffered variant"):
        conv2d(x, wt, strategy="direct", double_buffer=True, runner=conv_runner)
    with pytest.raises(StrategyError, match="not int8"):
        conv2d(x, wt, dtype="int8", double_buffer=True, runner=conv_runner)
