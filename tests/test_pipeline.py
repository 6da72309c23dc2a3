"""The one pixel path (blurapp.pipeline): alpha, linear light, range, the 8-bit fast paths."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.reference import correlate
from blurapp.pipeline import _quantiser, filter_pixels, prepare, working_bytes


def _output(spec: FilterSpec, channels: int, dtype: np.dtype, squeeze: bool) -> str:
    """The GPU output format the pipeline picks for an image of this kind."""
    shape = (3, 4) if squeeze else (3, 4, channels)
    return prepare(np.zeros(shape, np.uint8), spec, dtype=dtype).output


def test_without_alpha_or_linear_it_is_the_reference() -> None:
    image = np.random.default_rng(0).integers(0, 256, (9, 8, 3)).astype(np.uint8)
    settings = FilterSpec.create("gaussian:sigma=1", "wrap", "cpu")
    outcome = filter_pixels(image, settings)
    got = outcome.image
    np.testing.assert_array_equal(got, correlate(image, "gaussian:sigma=1", "wrap"))
    assert outcome.strategy == "cpu" and outcome.timing.pixels == 72


def test_settings_are_checked_up_front() -> None:
    with pytest.raises(StrategyError, match="rank"):
        FilterSpec.create("laplacian", strategy="separable")
    with pytest.raises(UsageError, match="wide"):
        FilterSpec.create("box:3", range_mode="wide")
    with pytest.raises(UsageError, match="sideways"):
        FilterSpec.create("box:3", alpha="sideways")
    flipped = FilterSpec.create("matrix:3x1:1,2,3", convolve=True)
    np.testing.assert_array_equal(flipped.effective_kernel.weights, [[3.0, 2.0, 1.0]])
    assert flipped.kernel.spec == "matrix:3x1:1,2,3"  # as given: --convolve round-trips


# ------------------------------------------------------------------ fast paths (issue 4)


def test_which_inputs_are_uploaded_as_stored() -> None:

    auto = FilterSpec.create("gaussian:sigma=1")
    rgb8 = np.zeros((4, 5, 3), np.uint8)
    p = prepare(rgb8, auto)
    x, storage = p.x, p.storage
    assert storage == "rgba8" and x.dtype == np.uint8 and x.shape == (4, 5, 3)
    p = prepare(rgb8[:, :, 0], auto)  # grey: H×W×1, same bytes
    x, storage = p.x, p.storage
    assert storage == "rgba8" and x.shape == (4, 5, 1)
    # Anything that needs float work before the kernel goes as floats.
    rgba8 = np.zeros((4, 5, 4), np.uint8)
    assert prepare(rgba8, auto).storage == "rgba32f"  # premultiplied
    straight = FilterSpec.create("gaussian:sigma=1", alpha="straight")
    assert prepare(rgba8, straight).storage == "rgba8"
    linear = FilterSpec.create("gaussian:sigma=1", linear=True)
    assert prepare(rgb8, linear).storage == "rgba32f"
    assert prepare(rgb8.astype(np.uint16), auto).storage == "rgba32f"
    cpu = FilterSpec.create("gaussian:sigma=1", strategy="cpu")
    assert prepare(rgb8, cpu).storage == "rgba32f"
    # Quantised in the filter stage only where _finish would only quantise.
    assert _quantiser(auto, 3, np.dtype(np.uint8), False) is not None
    assert _quantiser(auto, 4, np.dtype(np.uint8), False) is None  # un-premultiply first
    assert _quantiser(auto, 3, np.dtype(np.float32), False) is None
    signed = FilterSpec.create("sobel:x", range_mode="abs")
    assert _quantiser(signed, 3, np.dtype(np.uint8), False) is None


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 3), (37, 53, 3), (20, 31), (16, 9, 4), (5, 7, 2)])
@pytest.mark.parametrize("strategy", ["separable", "tiled", "auto"])
def test_rgba8_upload_matches_the_reference(gpu, shape, strategy) -> None:
    """8-bit pixels uploaded as stored, quantised from the readback: within 1 level of the
    float64 reference (the GPU's f32 sums may land on the other side of a .5)."""
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    settings = FilterSpec.create("gaussian:sigma=2", "mirror", strategy, alpha="straight")
    outcome = filter_pixels(image, settings)
    got = outcome.image
    want = correlate(image, "gaussian:sigma=2", "mirror")
    assert got.shape == image.shape and got.dtype == np.uint8
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert outcome.strategy != "cpu"


@pytest.mark.gpu
def test_engine_takes_uint8_for_rgba8_and_converts_in_place(gpu) -> None:
    from blurapp.core.numbers import to_float
    from blurapp.engine import filter_float

    image = np.random.default_rng(3).integers(0, 256, (23, 41, 3)).astype(np.uint8)
    floats, *_ = filter_float(to_float(image, np.float32), "box:5", "clamp", "separable")
    stored, *_ = filter_float(image, "box:5", "clamp", "separable", storage="rgba8")
    np.testing.assert_allclose(stored, floats, atol=1e-6)
    seen = []

    def convert(y: np.ndarray) -> np.ndarray:
        seen.append((y.dtype, y.shape))
        return (y * 2).astype(np.float64)

    doubled, *_ = filter_float(image, "box:5", "clamp", "separable", storage="rgba8",
                               convert=convert)  # fmt: skip
    assert seen == [(np.float32, (23, 41, 3))] and doubled.dtype == np.float64
    np.testing.assert_allclose(doubled, 2 * floats, atol=1e-6)
    # cpu with a uint8 rgba8 input means v / 255 too, and applies convert.
    ref, *_ = filter_float(image, "box:5", "clamp", "cpu", storage="rgba8", convert=np.negative)
    np.testing.assert_allclose(ref, -floats, atol=1e-6)


def test_estimate_counts_what_each_path_holds() -> None:
    u8 = np.dtype(np.uint8)
    float_path = working_bytes(3840, 2160, 3, u8, FilterSpec.create("box:3", linear=True), u8)
    fast = working_bytes(3840, 2160, 3, u8, FilterSpec.create("box:3"), u8)
    assert fast == 3840 * 2160 * 3 * 3  # in, out and the encoder's buffers: 75 MB
    assert float_path > 5 * fast


# ------------------------------------------------- rgba8 output texture (peak memory, issue 4)


def test_which_outputs_the_gpu_quantises() -> None:

    auto = FilterSpec.create("gaussian:sigma=1")
    u8, u16, f32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32)
    # 8-bit output that only needs clamping and rounding: the rgba8unorm output texture.
    assert _output(auto, 3, u8, False) == "rgba8"
    assert _output(auto, 1, u8, True) == "rgba8"
    straight = FilterSpec.create("gaussian:sigma=1", alpha="straight")
    assert _output(straight, 4, u8, False) == "rgba8"
    # Anything else keeps float results: 16-bit or float files, float work after the filter
    # (un-premultiply, sRGB encoding) or another range mode.
    assert _output(auto, 3, u16, False) == "rgba32f"
    assert _output(auto, 3, f32, False) == "rgba32f"
    assert _output(auto, 4, u8, False) == "rgba32f"
    linear = FilterSpec.create("gaussian:sigma=1", linear=True)
    assert _output(linear, 3, u8, False) == "rgba32f"
    offset = FilterSpec.create("sobel:x", range_mode="offset")
    assert _output(offset, 3, u8, False) == "rgba32f"


def test_quantiser_takes_uint8_results_as_they_are() -> None:

    auto = FilterSpec.create("gaussian:sigma=1")
    y = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)[:, :, :1]  # a strided view
    got = _quantiser(auto, 1, np.dtype(np.uint8), True)(y)
    assert got.shape == (2, 3) and got.flags.c_contiguous and not np.shares_memory(got, y)
    np.testing.assert_array_equal(got, y[:, :, 0])
    got = _quantiser(auto, 1, np.dtype(np.uint8), False)(y)
    assert got.shape == (2, 3, 1) and not np.shares_memory(got, y)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 3), (37, 23, 3), (20, 31), (16, 9, 4)])
def test_8bit_outputs_come_from_an_rgba8_texture(gpu, shape) -> None:
    """The batch's 8-bit path reads back rgba8 (4 bytes per texel, no float readback buffer)
    and still matches the float64 reference within a level, for 8- and 16-bit inputs."""
    from blurapp.core.borders import Border
    from blurapp.core.kernel import Kernel
    from blurapp.core.numbers import from_float, to_float
    from blurapp.core.reference import correlate_float
    from blurapp.gpu.engine import get_filter

    rng = np.random.default_rng(sum(shape) + 7)
    for dtype in (np.uint8, np.uint16):
        image = rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)
        get_filter().clear()
        settings = FilterSpec.create("gaussian:sigma=2", "reflect", alpha="straight")
        got = filter_pixels(image, settings, dtype=np.uint8).image
        assert got.shape == image.shape and got.dtype == np.uint8
        ref = correlate_float(
            to_float(image), Kernel.parse("gaussian:sigma=2"), Border.parse("reflect")
        )
        want = from_float(ref, np.uint8, squeeze=image.ndim == 2)
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        (res,) = get_filter()._shapes.values()
        assert set(res.readbacks) == {"rgba8"}
        assert ("output", shape[1], shape[0], "rgba8unorm") in res.textures
    # 16-bit output keeps the float texture.
    image = rng.integers(0, 65536, shape).astype(np.uint16)
    get_filter().clear()
    got = filter_pixels(image, FilterSpec.create("gaussian:sigma=2", alpha="straight")).image
    assert got.dtype == np.uint16
    (res,) = get_filter()._shapes.values()
    assert set(res.readbacks) == {"rgba32f"}


# ------------------------------------------------------------ tiles (issue 15)

TILE_CASES = [
    ("direct", "sobel:x"),
    ("tiled", "disk:radius=3"),
    ("separable", "gaussian:sigma=2"),
    ("transpose", "box:5x3"),
    ("cpu", "laplacian"),
    ("auto", "emboss"),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("strategy", "kernel"), TILE_CASES)
@pytest.mark.parametrize("border", ["clamp", "zero", "constant=0.3", "reflect", "mirror", "wrap"])
def test_tiles_give_the_untiled_result_bit_for_bit(gpu, strategy, kernel, border) -> None:
    """Every strategy whose arithmetic per pixel does not depend on the image size gives the
    same bytes in tiles of 20 (not a multiple of anything here) as whole: 8- and 16-bit,
    float, grey+alpha (premultiplied), every range mode on one of them."""
    rng = np.random.default_rng(len(kernel) + len(border))
    images = [
        rng.integers(0, 256, (41, 45, 3)).astype(np.uint8),
        rng.random((30, 26)).astype(np.float32),
        rng.integers(0, 65536, (25, 33, 4)).astype(np.uint16),
        rng.integers(0, 256, (22, 23, 2)).astype(np.uint8),
    ]
    for i, image in enumerate(images):
        for range_mode in ("clamp", "normalize") if i == 0 else ("offset",):
            spec = FilterSpec.create(kernel, border, strategy, range_mode=range_mode)
            whole = filter_pixels(image, spec)
            tiled = filter_pixels(image, spec, max_tile_side=20)
            assert "tiles of up to" in tiled.reason and "tiles" not in whole.reason
            np.testing.assert_array_equal(tiled.image, whole.image)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1), (1, 1, 3), (5, 7, 4), (13, 2)])
def test_tiles_on_awkward_sizes_and_kernels_larger_than_the_image(gpu, shape) -> None:
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    for border in ("mirror", "wrap", "constant=0.5"):
        spec = FilterSpec.create("gaussian:sigma=3", border, "separable", alpha="straight")
        whole = filter_pixels(image, spec).image
        np.testing.assert_array_equal(filter_pixels(image, spec, max_tile_side=26).image, whole)
        want = correlate(image, "gaussian:sigma=3", border)
        assert np.abs(whole.astype(int) - want.astype(int)).max() <= 1


def test_a_tile_too_small_for_the_kernel_is_a_usage_error() -> None:
    spec = FilterSpec.create("box:9", strategy="cpu")
    with pytest.raises(UsageError, match="--max-tile-side 8 is too small for a 9×9 kernel"):
        filter_pixels(np.zeros((20, 20), np.uint8), spec, max_tile_side=8)


def test_tiles_report_progress_and_stop_when_cancelled() -> None:
    spec = FilterSpec.create("box:3", strategy="cpu")
    image = np.zeros((50, 50, 3), np.uint8)
    seen: list[tuple[int, int]] = []
    filter_pixels(image, spec, max_tile_side=12, progress=lambda d, n: seen.append((d, n)))
    assert seen == [(i, 25) for i in range(1, 26)]

    class StopError(Exception):
        pass

    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise StopError

    with pytest.raises(StopError):
        filter_pixels(image, spec, max_tile_side=12, check=check)
    assert len(calls) == 4  # stopped at the fourth tile, not after all 25


@pytest.mark.gpu
def test_at_the_texture_limit_and_one_pixel_over(gpu) -> None:
    """An image exactly as wide as the adapter's largest texture runs whole; one pixel wider
    is tiled to fit; both equal the reference."""
    side = gpu.limits.max_texture_side
    rng = np.random.default_rng(9)
    for width in (side, side + 1):
        image = rng.integers(0, 256, (3, width)).astype(np.uint8)
        spec = FilterSpec.create("box:3", "mirror", "separable", alpha="straight")
        got = filter_pixels(image, spec)
        assert ("tiles" in got.reason) == (width > side)
        want = correlate(image, "box:3", "mirror")
        assert np.abs(got.image.astype(int) - want.astype(int)).max() <= 1


@pytest.mark.parametrize("strategy", ["cpu", pytest.param("auto", marks=pytest.mark.gpu)])
def test_channels_not_chosen_are_copied_from_the_input(request, strategy) -> None:
    """GIMP's channel toggles: --channels rgb keeps alpha as it was and filters the colour as
    the full filter does; in tiles too; a 16-bit input to 8 bits converts the kept channels
    as apply converts pixels."""
    if strategy != "cpu":
        request.getfixturevalue("gpu")
    rng = np.random.default_rng(12)
    image = rng.integers(0, 256, (23, 31, 4)).astype(np.uint8)
    full = filter_pixels(image, FilterSpec.create("box:5", strategy=strategy)).image
    spec = FilterSpec.create("box:5", strategy=strategy, channels="rgb")
    for side in (None, 12):
        got = filter_pixels(image, spec, max_tile_side=side).image
        np.testing.assert_array_equal(got[..., 3], image[..., 3])
        np.testing.assert_array_equal(got[..., :3], full[..., :3])
    wide = rng.integers(0, 65536, (9, 8, 3)).astype(np.uint16)
    got = filter_pixels(wide, FilterSpec.create("box:3", strategy=strategy, channels="g"),
                        dtype=np.uint8).image  # fmt: skip
    kept = np.rint(wide[..., [0, 2]] / 65535 * 255).astype(np.uint8)
    np.testing.assert_array_equal(got[..., [0, 2]], kept)


@pytest.mark.gpu
def test_warm_up_leaves_no_separable_sigma_to_compile(gpu) -> None:
    """After the start-up warm-up, a never-seen sigma of any size bucket, 8-bit or float, with
    the warmed border, compiles nothing on the critical path."""
    from blurapp.pipeline import warm_up

    spec = FilterSpec.create("gaussian:sigma=5", "mirror")
    assert warm_up(spec) == 22
    for sigma in (0.7, 3.37, 7.9, 15.2, 31.1):
        for image in (np.zeros((9, 7, 3), np.uint8), np.zeros((9, 7, 3), np.float32)):
            timing = filter_pixels(image, spec.replace(kernel=f"gaussian:sigma={sigma}")).timing
            assert not timing.first_run and timing.compile_ms == 0.0


def test_warm_up_stops_when_asked() -> None:
    from blurapp.pipeline import warm_up

    class StopError(Exception):
        pass

    def stop() -> None:
        raise StopError

    with pytest.raises(StopError):
        warm_up(FilterSpec.create("box:3"), check=stop)
