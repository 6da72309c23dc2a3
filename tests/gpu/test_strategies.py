"""The strategy registry: passes, workgroup shapes that fit the device, modelled bytes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits
from blurapp.gpu.engine import modelled_bytes
from blurapp.gpu.strategies import BAKED_TAPS, STRATEGIES, get_strategy, line_block

LAVAPIPE = DeviceLimits(workgroup_storage=32768, max_invocations=1024, max_texture_side=16384)
DEFAULT = DeviceLimits()
T = 16  # texel bytes
NON_SEP = "matrix:5x3:1,-2,3,0.5,2,4,1,-1,2,0,-3,2,1,5,-0.5"


def test_unknown_strategy_names_the_valid_ones() -> None:
    with pytest.raises(StrategyError, match="direct, tiled, separable, transpose"):
        get_strategy("fastest")


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
    halo_len = (params["tile"] + 64) ** 2
    assert halo_len * 4 <= LAVAPIPE.workgroup_storage
    tiles = math.ceil(20 / params["tile"]) ** 2
    assert p.bytes_modelled == (tiles * halo_len * 3 + 400) * T


def test_separable_and_transpose_passes() -> None:
    k = Kernel.parse("gaussian:sigma=2x1")  # 9 rows, 17 columns
    sep = get_strategy("separable").passes(k, 1, 0.5, (50, 30), DEFAULT)
    assert [p.name for p in sep] == ["rows", "cols"]
    assert [dict(p.template)["taps"] for p in sep] == [17, 9]
    # The column pass reads the row pass applied to constants outside the image.
    assert sep[0].constant == 0.5
    assert sep[1].constant == pytest.approx(0.5 * k.separability.row.sum())
    np.testing.assert_allclose(
        np.outer(sep[1].weights, sep[0].weights), k.weights, rtol=1e-6, atol=1e-9
    )
    # Short kernels are baked into the shader as float32 literals that round-trip exactly.
    for p in sep:
        baked = dict(p.template)["baked"]
        assert np.array_equal(np.array([float(v) for v in baked], np.float32), p.weights)
    tr = get_strategy("transpose").passes(k, 0, 0.0, (50, 30), DEFAULT)
    assert [p.name for p in tr] == ["rows", "transpose", "rows_t", "transpose_back"]
    assert [p.out_size for p in tr] == [(50, 30), (30, 50), (30, 50), (50, 30)]
    assert tr[0].shader == tr[2].shader == "separable_rows"
    assert tr[1].bytes_modelled == tr[3].bytes_modelled == 2 * 50 * 30 * T
    # Each invocation of the row pass reads its 16 outputs plus the 16-texel halo once.
    assert line_block(17) == 16 and line_block(9) == 8
    assert sep[0].bytes_modelled == (math.ceil(50 / 16) * 30 * (16 + 16) + 1500) * T
    assert sep[1].bytes_modelled == (50 * math.ceil(30 / 8) * (8 + 8) + 1500) * T
    # Fewer texels than one read per tap: the point of computing a run of outputs.
    assert sep[0].bytes_modelled < (50 * 30 * 17 + 1500) * T


@pytest.mark.parametrize(
    ("taps", "block", "baked"),
    [
        (1, 8, True),
        (14, 8, True),
        (15, 16, True),
        (33, 16, True),
        (34, 8, True),
        (65, 8, True),
        (66, 1, False),
        (513, 1, False),
    ],
)
def test_line_pass_blocks_and_baking(taps, block, baked) -> None:
    k = Kernel.parse(f"box:{taps}x1")
    (rows, cols) = get_strategy("separable").passes(k, 0, 0.0, (100, 7), DEFAULT)
    params = dict(rows.template)
    assert params["block"] == line_block(taps) == block
    assert (params["baked"] is not None) == baked == (taps <= BAKED_TAPS)
    # Every output is covered: blocks × invocations span the image.
    assert rows.workgroups[0] * params["wg_x"] * block >= 100
    assert rows.workgroups[1] * params["wg_y"] >= 7
    assert dict(cols.template)["taps"] == 1


def test_tiled_blocks_and_padded_weights() -> None:
    k = Kernel.parse(NON_SEP)
    for tile, block in ((8, (2, 4)), (16, (2, 8)), (32, (2, 8))):
        (p,) = get_strategy("tiled").passes(k, 0, 0.0, (70, 45), LAVAPIPE, tile=tile)
        params = dict(p.template)
        assert (params["block_h"], params["block_w"]) == block
        assert (params["kh"], params["kw"]) == (3, 5)
        assert p.workgroups == (math.ceil(70 / tile), math.ceil(45 / tile))
        # (block_h - 1) zero rows above and below the kernel.
        pad = (block[0] - 1) * 5
        assert p.weights.shape == (15 + 2 * pad,)
        assert not p.weights[:pad].any() and not p.weights[len(p.weights) - pad :].any()
        np.testing.assert_array_equal(p.weights[pad : pad + 15], k.weights.ravel())


def test_rank_two_refused_with_the_rank_and_alternatives() -> None:
    for name in ("separable", "transpose"):
        assert STRATEGIES[name].why_not(Kernel.parse("laplacian")) == (
            f"{name} needs a rank-1 kernel; laplacian has rank 2: use direct, tiled or cpu"
        )
        assert STRATEGIES[name].why_not(Kernel.parse("box:4")) is None
    assert STRATEGIES["direct"].why_not(Kernel.parse("laplacian")) is None


@pytest.mark.parametrize("limits", [DEFAULT, LAVAPIPE])
@pytest.mark.parametrize("spec", ["box:3", "gaussian:sigma=2", "box:33"])
def test_workgroups_fit(limits, spec) -> None:
    k = Kernel.parse(spec)
    for name in ("direct", "tiled", "separable", "transpose"):
        for p in get_strategy(name).passes(k, 0, 0.0, (64, 64), limits):
            params = dict(p.template)
            if "wg_x" in params:
                wg = params["wg_x"] * params["wg_y"]
            elif "block_w" in params:
                wg = (params["tile"] // params["block_w"]) * (params["tile"] // params["block_h"])
                halo = (params["tile"] + params["kw"] - 1) * (params["tile"] + params["kh"] - 1)
                texel = T if params["layout"] == "vec4" else 4
                assert halo * texel <= limits.workgroup_storage
            else:
                wg = params["tile"] * params["rows"]  # the transpose: TILE × ROWS
            assert wg <= limits.max_invocations, (name, p.name)
