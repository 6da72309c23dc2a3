"""The planner: tile fitting against device limits, and auto's choice with its reason."""

from __future__ import annotations

import pytest

from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits, choose_tile, halo_texels, plan

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
    # WebGPU's default 256 invocations rule out T=32 whatever the kernel.
    assert choose_tile((3, 3), WEBGPU_DEFAULT).tile == 16


def test_large_kernel_falls_back_to_scalar_halo() -> None:
    choice = choose_tile((65, 65), LAVAPIPE)
    assert choice.layout == "scalar"
    assert choice.halo_bytes <= LAVAPIPE.workgroup_storage
    assert choice.halo_bytes == halo_texels(choice.tile, (65, 65)) * 4


def test_requested_tile_is_honoured_or_refused_clearly() -> None:
    assert choose_tile((3, 3), LAVAPIPE, requested=8).tile == 8
    with pytest.raises(StrategyError, match="invocations"):
        choose_tile((3, 3), WEBGPU_DEFAULT, requested=32)
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


def test_plan_tiled_for_non_separable() -> None:
    p = plan(Kernel.parse("laplacian"), LAVAPIPE)
    assert p.strategy == "tiled"
    assert p.tile == 32
    assert "rank 2" in p.reason


def test_plan_small_rank_one_kernel_is_not_worth_two_passes() -> None:
    p = plan(Kernel.parse("sobel:x"), LAVAPIPE)
    assert p.strategy == "tiled"
    assert "second pass" in p.reason


def test_plan_without_gpu_and_for_huge_kernels() -> None:
    assert plan(Kernel.parse("box:3"), None).strategy == "cpu"
    assert plan(Kernel.parse("identity"), LAVAPIPE).strategy in ("tiled", "direct")
    assert plan(Kernel.parse("matrix:1x1:2"), LAVAPIPE).strategy == "direct"
    p = plan(Kernel.parse("disk:radius=100"), LAVAPIPE)
    assert p.strategy == "direct"
    assert "does not fit" in p.reason
