"""The fft strategy: overlap-save blocks, every border mode, its stated float32 error bound."""

from __future__ import annotations

import functools
import math
import zlib

import numpy as np
import pytest

from blurapp.core.borders import Border
from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits
from blurapp.core.reference import correlate_float
from blurapp.gpu import fft
from blurapp.gpu.engine import get_filter, modelled_bytes

ALL_BORDERS = ("clamp", "zero", "constant=0.5", "reflect", "mirror", "wrap")
EPS32 = 2.0**-24
NON_SEPARABLE_5X3 = "matrix:5x3:" + ",".join(
    str(v) for v in (1, -2, 3, 0.5, 2, 4, 1, -1, 2, 0, -3, 2, 1, 5, -0.5)
)


@functools.cache
def kernel(spec: str) -> Kernel:
    if spec.startswith("random:"):  # non-separable, signed, normalised to sum 1
        cols, rows = (int(v) for v in spec[7:].split("x"))
        w = np.random.default_rng(rows * 1000 + cols).random((rows, cols)) - 0.3
        return Kernel.from_weights(w / w.sum())
    return Kernel.parse(spec)


def image(shape: tuple[int, int, int], tag: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{shape}{tag}".encode()))
    return rng.random(shape, dtype=np.float32)


def error_bound(x: np.ndarray, k: Kernel, block: tuple[int, int], border: str) -> float:
    """The class docstring's bound: 2^-24 · log2(NR·NC) · max|x| · ||k||_1, max|x| over what the
    blocks hold (a constant border's value included); the output's own rounding is inside it."""
    top = max(float(np.abs(x).max()), abs(Border.parse(border).value))
    scale = top * float(np.abs(k.weights).sum())
    return EPS32 * math.log2(block[0] * block[1]) * max(scale, 1e-30)


def check(x: np.ndarray, k: Kernel, border: str, **run) -> np.ndarray:
    out, timing = get_filter().run(x, k, border, "fft", **run)
    ref = correlate_float(x, k, Border.parse(border))
    assert out.shape == x.shape and out.dtype == np.float32
    h, w, c = x.shape
    plan = fft.plan_blocks(k.shape, (h, w), c, get_filter().context.limits)
    err = float(np.abs(out - ref).max())
    assert err <= error_bound(x, k, plan.block, border), (err, plan)
    assert [p.name for p in timing.passes] == ["fft rows", "convolve cols", "ifft rows", "crop"]
    return out


# ------------------------------------------------------------------------- the block plan


LIMITS = DeviceLimits()


@pytest.mark.parametrize(
    ("kernel_shape", "image_shape"),
    [((1, 1), (1, 1)), ((3, 3), (7, 5)), ((61, 61), (1024, 1024)), ((241, 241), (3000, 4000)),
     ((65, 65), (20, 20)), ((513, 513), (600, 900)), ((2, 6), (129, 257)), ((1, 67), (21, 90))],
)  # fmt: skip
def test_blocks_cover_the_image(kernel_shape, image_shape) -> None:
    plan = fft.plan_blocks(kernel_shape, image_shape, 3, LIMITS)
    (nr, nc), (tr, tc) = plan.block, plan.tile
    for n, k in zip(plan.block, kernel_shape, strict=True):
        assert n & (n - 1) == 0 and 2 <= n <= fft.MAX_BLOCK and n >= k
    assert (tr, tc) == (nr - kernel_shape[0] + 1, nc - kernel_shape[1] + 1)
    assert plan.grid == (math.ceil(image_shape[0] / tr), math.ceil(image_shape[1] / tc))
    # No block larger than one that covers the image by itself.
    assert nr <= max(2, 1 << (image_shape[0] + kernel_shape[0] - 2).bit_length())
    assert nc <= max(2, 1 << (image_shape[1] + kernel_shape[1] - 2).bit_length())
    batches = plan.batches()
    assert sum(b for _, b in batches) == plan.blocks
    assert plan.batch_items * nr * nc * 8 <= LIMITS.max_storage_binding


def test_a_large_kernel_gets_a_block_several_times_its_side() -> None:
    plan = fft.plan_blocks((61, 61), (1024, 1024), 3, LIMITS)
    assert plan.block[0] >= 4 * 61 // 2  # the kernel is a small fraction of the transform


def test_batches_respect_the_binding_limit() -> None:
    small = DeviceLimits(max_storage_binding=1 << 20)
    plan = fft.plan_blocks((9, 9), (2000, 3000), 4, small)
    assert plan.batch_items * plan.block[0] * plan.block[1] * 8 <= 1 << 20
    assert len(plan.batches()) > 1


def test_kernel_wider_than_the_workgroup_memory_is_refused() -> None:
    tiny = DeviceLimits(workgroup_storage=1024)  # 128 complex values a line
    with pytest.raises(StrategyError, match=r"fft handles kernels up to 128 taps a side"):
        fft.plan_blocks((129, 3), (50, 50), 1, tiny)
    assert fft.plan_blocks((128, 3), (50, 50), 1, tiny).block[0] == 128


def test_spectrum_is_the_correlation_in_float64() -> None:
    w = np.random.default_rng(5).random((5, 3))
    block = (8, 16)
    b = np.random.default_rng(6).random(block)
    got = np.fft.ifft2(np.fft.fft2(b) * fft.kernel_spectrum(w, block)).real * (8 * 16)
    want = np.zeros(block)
    for u in range(5):
        for v in range(3):
            want += w[u, v] * np.roll(b, (-u, -v), axis=(0, 1))
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert fft.kernel_spectrum(w, block) is fft.kernel_spectrum(w.copy(), block)  # cached


def test_modelled_bytes_of_the_passes() -> None:
    k = kernel("disk:radius=30")
    plan = fft.plan_blocks(k.shape, (1024, 1024), 3, LIMITS)
    nr, nc = plan.block
    items = sum(plan.items(b) for _, b in plan.batches())
    got = modelled_bytes("fft", k, (1024, 1024, 3))
    assert list(got) == ["fft rows", "convolve cols", "ifft rows", "crop"]
    assert got["convolve cols"] == 3 * items * nr * nc * 8
    assert got["ifft rows"] == 2 * items * nr * nc * 8
    assert got["crop"] == 1024 * 1024 * (3 * 8 + 16)
    # RGB: items (R+iG), (B+iR'), (G'+iB') of two blocks read 1, 2 and 1 texels an element.
    assert plan.texel_loads(2) == 4 * nr * nc
    narrow = modelled_bytes("fft", k, (1024, 1024, 3), storage="rgba8")
    assert narrow["fft rows"] < got["fft rows"] and narrow["crop"] == got["crop"]


# -------------------------------------------------------------- against the float64 reference


def _cases() -> list[object]:
    cases = []
    shapes = {  # every border mode on each; 1 to 4 channels
        (1, 1, 1): ("box:4", "gaussian:sigma=1"),
        (7, 5, 3): ("box:4", NON_SEPARABLE_5X3),
        (16, 24, 2): ("box:6x2", "sobel:x"),  # even image, even rectangular kernel
        (37, 23, 4): ("gaussian:sigma=1", "random:8x3"),
        (20, 20, 3): ("random:65x65",),  # the kernel is larger than the image
    }
    for shape, specs in shapes.items():
        for spec in specs:
            for border in ALL_BORDERS:
                h, w, c = shape
                cases.append(pytest.param(spec, border, shape, id=f"{spec}-{border}-{h}x{w}x{c}"))
    return cases


@pytest.mark.gpu
@pytest.mark.parametrize(("spec", "border", "shape"), _cases())
def test_matches_reference(gpu, spec, border, shape) -> None:
    check(image(shape, spec), kernel(spec), border)


@pytest.mark.gpu
@pytest.mark.parametrize("border", ALL_BORDERS)
def test_image_not_a_multiple_of_the_block(gpu, border) -> None:
    """Several blocks each way, partial ones at the right and bottom edges."""
    x = image((301, 517, 3), "blocks")
    k = kernel("disk:radius=12")
    plan = fft.plan_blocks(k.shape, x.shape[:2], 3, gpu.limits)
    assert plan.grid[0] > 1 and plan.grid[1] > 1
    assert x.shape[0] % plan.tile[0] and x.shape[1] % plan.tile[1]
    check(x, k, border)


@pytest.mark.gpu
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_batches_of_blocks(gpu, monkeypatch, channels) -> None:
    """Batches smaller than the image (and, with odd channels, an item whose halves come from
    two blocks): the same pixels as one batch."""
    x = image((90, 70, channels), "batches")
    k = kernel("random:9x7")
    whole = check(x, k, "mirror")
    plan = fft.plan_blocks(k.shape, x.shape[:2], channels, gpu.limits)
    monkeypatch.setattr(fft, "_BATCH_BYTES", 3 * plan.block[0] * plan.block[1] * 8 // 2)
    small = fft.plan_blocks(k.shape, x.shape[:2], channels, gpu.limits)
    assert small.block == plan.block and len(small.batches()) > 1
    batched = check(x, k, "mirror")
    if channels % 2 == 0:  # the same pairs of real signals: the same bits
        np.testing.assert_array_equal(batched, whole)


@pytest.mark.gpu
@pytest.mark.parametrize("radix", [2, 4, 8, 16])
def test_every_radix(gpu, monkeypatch, radix) -> None:
    """The butterflies of every radix (the largest one used, and the smaller last stages)."""
    monkeypatch.setattr(fft, "_MAX_RADIX", radix)
    check(image((45, 70, 3), "radix"), kernel("random:9x7"), "reflect")


@pytest.mark.gpu
def test_largest_kernel(gpu) -> None:
    x = image((40, 600, 1), "largest")
    k = kernel("box:513x3")
    check(x, k, "reflect")


@pytest.mark.gpu
def test_large_disk_on_a_photo_sized_image(gpu) -> None:
    """The issue's case at a quarter of the size: error within 1e-4 of the data range."""
    x = image((256, 384, 3), "disk30")
    out = check(x, kernel("disk:radius=30"), "clamp")
    ref = correlate_float(x, kernel("disk:radius=30"), Border.parse("clamp"))
    assert np.abs(out - ref).max() <= 1e-4 * np.ptp(x)


@pytest.mark.gpu
def test_input_outside_unit_range(gpu) -> None:
    x = image((33, 45, 2), "range") * 300.0 - 100.0
    check(x, kernel("gaussian:sigma=3"), "constant=0.5")


@pytest.mark.gpu
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_lands_where_the_reference_has_it(gpu, bad) -> None:
    # The passes alone spread it over the block; filter_float runs fft on the finite values
    # and places the non-finite outputs (blurapp.gpu.nonfinite; tests/gpu/test_nonfinite_large.py).
    from blurapp.engine import filter_float

    x = image((12, 10, 3), "nan")
    x[5, 4, 1] = bad
    raw, _ = get_filter().run(x, kernel("box:3"), "clamp", "fft")
    assert (~np.isfinite(raw)).sum() > 9  # the whole block, not the 3×3 around it
    y, _, ran, _ = filter_float(x, kernel("box:3"), "clamp", "fft")
    ref = correlate_float(x, kernel("box:3"), Border.parse("clamp"))
    assert ran == "fft"
    for test in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(test(y), test(ref))
    assert (~np.isfinite(y)).sum() == 9
    finite = np.isfinite(ref)
    np.testing.assert_allclose(y[finite], ref[finite], atol=1e-5)


@pytest.mark.gpu
def test_new_kernel_rewrites_the_spectrum_only(fresh_filter) -> None:
    f = fresh_filter
    x = image((30, 40, 3), "cache")
    f.run(x, kernel("disk:radius=3"), "wrap", "fft")
    created = dict(f.stats)
    out, _ = f.run(x, kernel("random:7x7"), "wrap", "fft")
    assert dict(f.stats) == created
    ref = correlate_float(x, kernel("random:7x7"), Border.parse("wrap"))
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)


@pytest.mark.gpu
def test_tiles_agree_with_the_whole_image_within_the_bound(gpu) -> None:
    """In tiles the blocks follow the tile: the same result within the error bound, not bit for
    bit (the other strategies' arithmetic per pixel does not depend on the image size)."""
    from blurapp.core.filterspec import FilterSpec
    from blurapp.pipeline import filter_pixels

    x = image((70, 90, 3), "tiles")
    k = kernel("disk:radius=5")
    spec = FilterSpec.create("disk:radius=5", "mirror", "fft")
    whole = filter_pixels(x, spec)
    tiled = filter_pixels(x, spec, max_tile_side=40)
    assert "tiles of up to" in tiled.reason and whole.strategy == tiled.strategy == "fft"
    ref = correlate_float(x, k, Border.parse("mirror"))
    bound = error_bound(x, k, (2048, 2048), "mirror")
    assert np.abs(tiled.image - ref).max() <= bound
    assert np.abs(whole.image - ref).max() <= bound
