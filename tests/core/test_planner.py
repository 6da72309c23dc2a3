"""The planner: tile fitting against device limits, and auto's choice with its reason."""

from __future__ import annotations

import pytest

from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits, choose_tile, halo_texels, plan, tile_invocations

LAVAPIPE = DeviceLimits(workgroup_storage=32768, max_invocations=1024, max_texture_side=16384)
WEBGPU_DEFAULT = DeviceLimits()


def test_halo_overhead_matches_design_figures() -> None:
    # DESIGN.md: T=16, R=4: 125 %; T=32, R=4: 56 %.
    assert halo_texels(16, (9, 9)) / 16**2 - 1 == pytest.approx(1.25)
    assert halo_texels(32, (9, 9)) / 32**2 - 1 == pytest.approx(0.5625)


def test_largest_tile_that_fits_vec4() -> None:
    # R=4 at T=32: 40*40*16 = 25600 bytes fits 32 KiB.
    choice = choose_tile((9, 9), LAVAPIPE)
    assert (choice.tile, choice.layout, choice.halo_bytes) == (32, "vec4", 25600)
    # R=8 at T=32 needs 48*48*16 = 36864 > 32768: falls back to T=16.
    assert choose_tile((17, 17), LAVAPIPE).tile == 16
    # Each invocation computes a 2×8 block of outputs: T=32 needs 64 invocations, not 1024,
    # so WebGPU's default 256 allow it (its 16 KiB of workgroup memory then limit the halo).
    assert tile_invocations(32) == 64 and tile_invocations(16) == 16 and tile_invocations(8) == 8
    assert choose_tile((3, 3), DeviceLimits(workgroup_storage=32768)).tile == 32
    assert choose_tile((3, 3), WEBGPU_DEFAULT).tile == 16  # 34*34*16 > 16384


def test_large_kernel_falls_back_to_scalar_halo() -> None:
    choice = choose_tile((65, 65), LAVAPIPE)
    assert choice.layout == "scalar"
    assert choice.halo_bytes <= LAVAPIPE.workgroup_storage
    assert choice.halo_bytes == halo_texels(choice.tile, (65, 65)) * 4


def test_requested_tile_is_honoured_or_refused_clearly() -> None:
    assert choose_tile((3, 3), LAVAPIPE, requested=8).tile == 8
    tiny = DeviceLimits(max_invocations=32)
    with pytest.raises(StrategyError, match="needs 64 invocations"):
        choose_tile((3, 3), tiny, requested=32)
    assert choose_tile((3, 3), tiny).tile == 16
    with pytest.raises(StrategyError, match="12"):
        choose_tile((3, 3), LAVAPIPE, requested=12)
    with pytest.raises(StrategyError, match="too large for tiled"):
        choose_tile((201, 201), LAVAPIPE)


def test_plan_separable_for_rank_one_with_reason() -> None:
    p = plan(Kernel.parse("gaussian:sigma=2"), LAVAPIPE)
    assert p.strategy == "separable"
    assert p.reason == (
        "rank 1, 17×17 taps: separable does 34 multiply-adds per pixel instead of 289"
    )


def test_plan_non_separable_kernels_by_size() -> None:
    # bench on lavapipe, 1024×1024 RGBA f32: 3×3 rank 2 direct 73 ms, tiled 95; 5×5 (disk
    # r=2) 150 and 153; 7×7 (disk r=3) 306 and 225; 9×9 620 and 324.
    p = plan(Kernel.parse("laplacian"), LAVAPIPE)
    assert p.strategy == "direct"
    assert p.reason == (
        "rank 2, 3×3 taps: too few taps for tiled's halo load and barrier to pay off; direct "
        "reads its 9 taps from global memory"
    )
    assert plan(Kernel.parse("sharpen"), LAVAPIPE).strategy == "direct"
    for spec in ("disk:radius=2", "disk:radius=3", "disk:radius=4", "motion:length=9,angle=30"):
        p = plan(Kernel.parse(spec), LAVAPIPE)
        assert (p.strategy, p.tile) == ("tiled", 32), spec
        assert "so not separable" in p.reason


def test_plan_small_rank_one_kernels() -> None:
    # bench, 1024×1024: sobel-sized 3×3 rank 1 separable 33 ms, direct 75, tiled 90; box:2
    # (2×2) separable 38, direct 45, tiled 67.
    p = plan(Kernel.parse("sobel:x"), LAVAPIPE)
    assert p.strategy == "separable"
    assert p.reason == "rank 1, 3×3 taps: separable does 6 multiply-adds per pixel instead of 9"
    p = plan(Kernel.parse("box:2"), LAVAPIPE)
    assert p.strategy == "separable"
    assert p.reason == (
        "rank 1, 2×2 taps: two 1-D passes of 2 and 2 taps cost less than one 2-D pass"
    )


def test_plan_one_dimensional_kernels() -> None:
    # bench, 1024×1024: box:3x1 separable 30 ms, direct 39, tiled 69; box:1x3 31, 39, 66;
    # box:9x1 separable 28, direct 69, tiled 98.
    for spec in ("box:3x1", "box:1x3"):
        p = plan(Kernel.parse(spec), LAVAPIPE)
        assert p.strategy == "separable", spec
        assert "reads 1.25 texels per pixel" in p.reason and "instead of direct's 3" in p.reason
    p = plan(Kernel.parse("box:9x1"), LAVAPIPE)
    assert p.strategy == "separable"
    assert "reads 2.00 texels per pixel" in p.reason and "instead of direct's 9" in p.reason


def test_plan_scalar_halo_only_where_it_pays() -> None:
    # bench, 256×256: 49×49 tiled (T=32, one-channel halo) 0.78 × direct's time; 65×65
    # (T=16, one-channel halo) 1.19 ×: tiled for the first, direct for the second.
    p = plan(Kernel.parse("disk:radius=24"), LAVAPIPE)
    assert (p.strategy, p.tile) == ("tiled", 32)
    p = plan(Kernel.parse("disk:radius=32"), LAVAPIPE)
    assert p.strategy == "direct"
    assert "one-channel halo" in p.reason and "per channel" in p.reason


def test_plan_without_gpu_and_for_huge_kernels() -> None:
    assert plan(Kernel.parse("box:3"), None).strategy == "cpu"
    assert plan(Kernel.parse("matrix:1x1:2"), LAVAPIPE).strategy == "direct"
    p = plan(Kernel.parse("disk:radius=100"), LAVAPIPE)
    assert p.strategy == "direct"
    assert "does not fit" in p.reason
