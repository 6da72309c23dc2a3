"""The planner: tile fitting against device limits, and auto's choice with its reason."""

from __future__ import annotations

import re

import numpy as np
import pytest

from blurapp.core import planner
from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import (
    DeviceLimits,
    choose_tile,
    fft_block,
    fft_cost,
    halo_texels,
    lowrank_cost,
    plan,
    tile_invocations,
)
from blurapp.core.strategies import STRATEGIES, StrategyInfo

LAVAPIPE = DeviceLimits(workgroup_storage=32768, max_invocations=1024, max_texture_side=16384)
WEBGPU_DEFAULT = DeviceLimits()


@pytest.fixture(autouse=True)
def without_fft(monkeypatch: pytest.MonkeyPatch) -> None:
    """The choices among the other strategies, whether or not the registry has fft yet (the
    tests that want it add it themselves)."""
    monkeypatch.setattr(planner, "STRATEGIES", {k: v for k, v in STRATEGIES.items() if k != "fft"})


def with_fft(monkeypatch: pytest.MonkeyPatch) -> None:
    fft = StrategyInfo("fft", "gpu", "FFT convolution", "#17becf", nan_overlay=True)
    monkeypatch.setattr(planner, "STRATEGIES", {**planner.STRATEGIES, "fft": fft})


def random_kernel(side: int) -> Kernel:
    """A full-rank kernel: lowrank would need more than 32 pairs."""
    w = np.random.default_rng(side).random((side, side))
    return Kernel.from_weights(w / w.sum())


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
    # (T=16, one-channel halo) 1.19 ×: tiled for the first, direct for the second. Full-rank
    # kernels, so that lowrank is out of the question.
    p = plan(random_kernel(49), LAVAPIPE)
    assert (p.strategy, p.tile) == ("tiled", 32)
    p = plan(random_kernel(65), LAVAPIPE)
    assert p.strategy == "direct"
    assert "one-channel halo" in p.reason and "per channel" in p.reason


def test_plan_without_gpu_and_for_huge_kernels() -> None:
    assert plan(Kernel.parse("box:3"), None).strategy == "cpu"
    assert plan(Kernel.parse("matrix:1x1:2"), LAVAPIPE).strategy == "direct"
    p = plan(random_kernel(201), LAVAPIPE)
    assert p.strategy == "direct"
    assert "does not fit" in p.reason


def test_plan_lowrank_where_a_few_pairs_do() -> None:
    # One interleaved run at 1024×1024 (docs/PERFORMANCE.md): unsharp and DoG are 2 pairs,
    # LoG 3; a disk of radius 16 is 11 pairs within half an 8-bit step and beats tiled (1988
    # against 3324 ms), one of radius 8 is 7 pairs and does not (1121 against 687 ms).
    for spec, k in (("unsharp:sigma=2", 2), ("dog:sigma=1,2", 2), ("log:sigma=3", 3)):
        p = plan(Kernel.parse(spec), LAVAPIPE)
        assert p.strategy == "lowrank" and p.tile is None, spec
        assert f"lowrank k={k} (the exact rank)" in p.reason
    p = plan(Kernel.parse("log:sigma=1.5"), LAVAPIPE)
    # The error of the exact rank is float64 rounding, whose last digits depend on the CPU's
    # LAPACK kernels (5.3e-16 on one VM, 5e-16 on a Zen 3 one).
    assert re.fullmatch(
        r"rank 3, 13×13 taps: lowrank k=3 \(the exact rank\), error ≤ \d(\.\d)?e-1[5-7]; "
        r"3 separable pairs do 78 multiply-adds per pixel instead of 169",
        p.reason,
    ), p.reason
    p = plan(Kernel.parse("disk:radius=16"), LAVAPIPE)
    assert p.strategy == "lowrank"
    assert "lowrank k=11 (tolerance 0.00196)" in p.reason and "\n" not in p.reason
    assert plan(Kernel.parse("disk:radius=8"), LAVAPIPE).strategy == "tiled"
    # The smallest kernels stay with direct and tiled: two 1-D passes per pair cost more.
    assert plan(Kernel.parse("laplacian"), LAVAPIPE).strategy == "direct"
    assert plan(Kernel.parse("disk:radius=4"), LAVAPIPE).strategy == "tiled"


def test_plan_lowrank_follows_the_tolerance() -> None:
    k = Kernel.parse("disk:radius=16.5")  # rank 11
    assert "lowrank k=10 " in plan(k, LAVAPIPE).reason
    assert (
        "lowrank k=9 (tolerance 0.01), error ≤ 0.0098" in plan(k, LAVAPIPE, tolerance=1e-2).reason
    )
    # A tolerance no number of pairs up to 32 meets leaves lowrank out.
    assert plan(random_kernel(49), LAVAPIPE, tolerance=1e-9).strategy != "lowrank"
    assert lowrank_cost(2, (17, 17)) < lowrank_cost(3, (17, 17)) < lowrank_cost(3, (25, 25))


def test_the_plan_does_not_depend_on_the_image_having_nan() -> None:
    # blurapp.engine places NaN and Inf exactly whatever runs (blurapp.gpu.nonfinite), so the
    # planner is not told whether the image has any: lowrank stays lowrank.
    import inspect

    assert list(inspect.signature(plan).parameters) == ["kernel", "limits", "tolerance"]
    assert plan(Kernel.parse("disk:radius=16"), LAVAPIPE).strategy == "lowrank"


def test_fft_only_once_the_registry_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fft_cost((33, 33)) is None
    kernels = ["disk:radius=16", "disk:radius=30", "bokeh:radius=30", "gaussian:sigma=9"]
    assert all(plan(Kernel.parse(s), LAVAPIPE).strategy != "fft" for s in kernels)
    with_fft(monkeypatch)
    cost = fft_cost((33, 33))
    assert cost is not None and cost == fft_cost((33, 31))  # the larger side decides the block
    # a + b·log2(block) per transformed pixel, times the blocks' overlap.
    block = fft_block((33, 33))
    assert block & (block - 1) == 0 and block >= 66
    overlap = block**2 / (block - 32) ** 2
    assert cost == pytest.approx((planner.FFT_FIXED + planner.FFT_LOG2 * np.log2(block)) * overlap)
    p = plan(Kernel.parse("disk:radius=30"), LAVAPIPE)
    assert p.strategy == "fft" and p.tile is None
    assert p.reason.startswith("rank 20, 61×61 taps: fft's ") and "lowrank" in p.reason
    # Rank 1 stays separable, small kernels direct or tiled.
    assert plan(Kernel.parse("gaussian:sigma=9"), LAVAPIPE).strategy == "separable"
    assert plan(Kernel.parse("laplacian"), LAVAPIPE).strategy == "direct"
