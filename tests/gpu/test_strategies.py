"""The strategy registry: passes, workgroup shapes that fit the device, modelled bytes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits
from blurapp.gpu.engine import modelled_bytes
from blurapp.gpu.strategies import STRATEGIES, column_tile, get_strategy, row_strip

LAVAPIPE = DeviceLimits(workgroup_storage=32768, max_invocations=1024, max_texture_side=16384)
DEFAULT = DeviceLimits()
T = 16  # texel bytes


def test_unknown_strategy_names_the_valid_ones() -> None:
    with pytest.raises(StrategyError, match="direct, tiled, separable, transpose"):
        get_strategy("fft")


def test_direct_bytes() -> None:
    k = Kernel.parse("box:5x3")
    assert modelled_bytes("direct", k, (10, 20)) == {"direct": 10 * 20 * (15 + 1) * T}


def test_tiled_bytes_count_the_halo_per_tile() -> None:
    k = Kernel.parse("gaussian:sigma=1")  # 9×9
    (tiled,) = get_strategy("tiled").passes(k, 0, 0.0, (100, 40), DEFAULT)
    t = dict(tiled.template)["tile"]
    tiles = math.ceil(100 / t) * math.ceil(40 / t)
    halo = (t + 8) ** 2
    assert modelled_bytes("tiled", k, (40, 100, 3)) == {"tiled": (tiles * halo + 4000) * T}
    # Fewer global reads than direct: the point of the halo.
    assert tiled.bytes_modelled < modelled_bytes("direct", k, (40, 100))["direct"]


def test_scalar_halo_for_a_65x65_kernel() -> None:
    k = Kernel.from_weights(np.random.default_rng(1).random((65, 65)))
    (p,) = get_strategy("tiled").passes(k, 0, 0.0, (20, 20), LAVAPIPE, channels=3)
    params = dict(p.template)
    assert params["layout"] == "scalar"
    assert params["halo_len"] * 4 <= LAVAPIPE.workgroup_storage
    tiles = math.ceil(20 / params["tile"]) ** 2
    assert p.bytes_modelled == (tiles * params["halo_len"] * 3 + 400) * T


def test_separable_and_transpose_passes() -> None:
    k = Kernel.parse("gaussian:sigma=2x1")  # 9 rows, 17 columns
    sep = get_strategy("separable").passes(k, 1, 0.5, (50, 30), DEFAULT)
    assert [p.name for p in sep] == ["rows", "cols"]
    assert [dict(p.constants)["TAPS"] for p in sep] == [17, 9]
    # The column pass reads the row pass applied to constants outside the image.
    assert sep[0].constant == 0.5
    assert sep[1].constant == pytest.approx(0.5 * k.separability.row.sum())
    np.testing.assert_allclose(
        np.outer(sep[1].weights, sep[0].weights), k.weights, rtol=1e-6, atol=1e-9
    )
    tr = get_strategy("transpose").passes(k, 0, 0.0, (50, 30), DEFAULT)
    assert [p.name for p in tr] == ["rows", "transpose", "rows_t", "transpose_back"]
    assert [p.out_size for p in tr] == [(50, 30), (30, 50), (30, 50), (50, 30)]
    assert tr[0].shader == tr[2].shader == "separable_rows"
    assert tr[1].bytes_modelled == tr[3].bytes_modelled == 2 * 50 * 30 * T
    sw, sh = row_strip(17, DEFAULT)
    strips = math.ceil(50 / sw) * math.ceil(30 / sh)
    assert sep[0].bytes_modelled == (strips * sh * (sw + 16) + 1500) * T


def test_rank_two_refused_with_the_rank_and_alternatives() -> None:
    for name in ("separable", "transpose"):
        assert STRATEGIES[name].why_not(Kernel.parse("laplacian")) == (
            f"{name} needs a rank-1 kernel; laplacian has rank 2: use direct, tiled or cpu"
        )
        assert STRATEGIES[name].why_not(Kernel.parse("box:4")) is None
    assert STRATEGIES["direct"].why_not(Kernel.parse("laplacian")) is None


@pytest.mark.parametrize("limits", [DEFAULT, LAVAPIPE])
@pytest.mark.parametrize("taps", [1, 2, 9, 49, 257, 513])
def test_separable_workgroups_fit(limits, taps) -> None:
    sw, sh = row_strip(taps, limits)
    assert sw * sh <= limits.max_invocations
    assert sh * (sw + taps - 1) * T <= limits.workgroup_storage
    tw, th = column_tile(taps, limits)
    assert tw * th <= limits.max_invocations
    assert tw * (th + taps - 1) * T <= limits.workgroup_storage
