"""GpuFilter against the float64 reference: every strategy, border mode, awkward shape."""

from __future__ import annotations

import dataclasses
import functools
import types
import zlib

import numpy as np
import pytest

from blurapp.core.borders import Border
from blurapp.core.errors import ImageError, KernelSpecError, StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import from_float
from blurapp.core.reference import correlate_float
from blurapp.core.strategies import gpu_names
from blurapp.gpu.engine import GpuFilter, get_filter, modelled_bytes, to_storage
from blurapp.gpu.strategies import STRATEGIES

pytestmark = pytest.mark.gpu

GPU_STRATEGIES = gpu_names()
ALL_BORDERS = ("clamp", "zero", "constant=0.5", "reflect", "mirror", "wrap")
NON_SEPARABLE_5X3 = "matrix:5x3:" + ",".join(
    str(v) for v in (1, -2, 3, 0.5, 2, 4, 1, -1, 2, 0, -3, 2, 1, 5, -0.5)
)


@functools.cache
def kernel(spec: str) -> Kernel:
    if spec == "random:65x65":  # non-separable, larger than the 20×20 image it runs on
        w = np.random.default_rng(65).random((65, 65))
        return Kernel.from_weights(w / w.sum())
    return Kernel.parse(spec)


def image(shape: tuple[int, int, int], tag: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{shape}{tag}".encode()))
    return rng.random(shape, dtype=np.float32)


def assert_matches_reference(out: np.ndarray, x: np.ndarray, k: Kernel, border: str) -> None:
    ref = correlate_float(x, k, Border.parse(border))
    assert out.shape == x.shape
    assert out.dtype == np.float32
    # 1e-5 of the data range: inputs are in [0, 1]; derivative kernels widen the output range.
    tol = 1e-5 * max(1.0, float(np.ptp(ref)))
    np.testing.assert_allclose(out, ref, rtol=0, atol=tol)


def _cases() -> list[object]:
    cases = []

    def add(strategy: str, border: str, spec: str, shape: tuple[int, int, int]) -> None:
        h, w, c = shape
        cases.append(
            pytest.param(
                strategy, border, spec, shape, id=f"{strategy}-{border}-{spec}-{h}x{w}x{c}"
            )
        )

    # Every strategy × every border mode, on a 1×1 image (the kernel is larger: reflections
    # repeat), an odd 7×5 one and a 37×23 one, channels 1, 3 and 4.
    for shape in ((1, 1, 1), (7, 5, 3), (37, 23, 4)):
        for spec in ("gaussian:sigma=1", "box:4"):
            for strategy in GPU_STRATEGIES:
                for border in ALL_BORDERS:
                    add(strategy, border, spec, shape)
    # Several workgroups in both directions, partial ones at the edges, 2 channels.
    for strategy in GPU_STRATEGIES:
        for border in ("clamp", "constant=0.5", "mirror"):
            add(strategy, border, "gaussian:sigma=1", (129, 257, 2))
    # The other kernel shapes on three border modes each (together all six).
    others = {
        "gaussian:sigma=6": ((33, 40, 2), ("reflect", "wrap", "constant=0.5")),  # 49×49 > image
        "box:6x2": ((129, 257, 3), ("clamp", "mirror", "zero")),
        "sobel:x": ((129, 257, 1), ("reflect", "constant=0.5", "wrap")),
        "box:9x1": ((129, 257, 1), ("clamp", "mirror", "constant=0.5")),
        "box:1x9": ((129, 257, 4), ("reflect", "wrap", "zero")),
    }
    for spec, (shape, borders) in others.items():
        for strategy in GPU_STRATEGIES:
            for border in borders:
                add(strategy, border, spec, shape)
    # Non-separable kernels: direct and tiled only; 65×65 on a 20×20 image (scalar halo).
    for spec, shape in ((NON_SEPARABLE_5X3, (17, 31, 2)), ("random:65x65", (20, 20, 3))):
        for strategy in ("direct", "tiled"):
            for border in ALL_BORDERS:
                add(strategy, border, spec, shape)
    return cases


@pytest.mark.parametrize(("strategy", "border", "spec", "shape"), _cases())
def test_matches_reference(gpu, strategy, border, spec, shape) -> None:
    x = image(shape, spec)
    k = kernel(spec)
    out, timing = get_filter().run(x, k, Border.parse(border), strategy)
    assert_matches_reference(out, x, k, border)
    assert timing.pixels == shape[0] * shape[1]


@pytest.mark.parametrize("tile", [8, 16, 32])
@pytest.mark.parametrize("spec", ["gaussian:sigma=1", "gaussian:sigma=3"])
def test_tile_override(gpu, tile, spec) -> None:
    # sigma=3 is 25×25: at T=32 only the scalar (one channel at a time) halo fits.
    x = image((45, 70, 3), "tile")
    out, _ = get_filter().run(x, kernel(spec), Border.parse("mirror"), "tiled", tile=tile)
    assert_matches_reference(out, x, kernel(spec), "mirror")


def test_two_dimensional_image_stays_two_dimensional(gpu) -> None:
    x = image((9, 11, 1), "2d")[:, :, 0]
    out, _ = get_filter().run(x, kernel("box:4"), "wrap", "tiled")
    assert out.shape == x.shape
    ref = correlate_float(x[:, :, None], kernel("box:4"), Border.parse("wrap"))[:, :, 0]
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)


def test_rank_two_kernel_to_separable_strategies_is_refused(gpu) -> None:
    x = image((8, 8, 1), "lap")
    for strategy in ("separable", "transpose"):
        with pytest.raises(StrategyError) as err:
            get_filter().run(x, kernel("laplacian"), "clamp", strategy)
        assert str(err.value) == (
            f"{strategy} needs a rank-1 kernel; laplacian has rank 2: use direct, tiled or cpu"
        )


@pytest.mark.parametrize(
    ("shape", "needle"),
    [((0, 5, 1), "empty"), ((5, 0, 3), "empty"), ((4, 4, 5), "5 channels"), ((4, 4, 0), "0")],
)
def test_bad_images_are_refused(gpu, shape, needle) -> None:
    with pytest.raises(ImageError, match=needle):
        get_filter().run(np.zeros(shape, np.float32), kernel("box:4"), "clamp", "direct")


def test_image_larger_than_the_device_allows(gpu) -> None:
    side = gpu.limits.max_texture_side
    with pytest.raises(ImageError, match=f"largest texture side is {side}"):
        get_filter().run(np.zeros((1, side + 1), np.float32), kernel("box:4"), "clamp", "direct")


def test_non_finite_weights_are_refused(gpu) -> None:
    weights = np.ones((3, 3))
    weights[1, 1] = np.nan
    fake = types.SimpleNamespace(weights=weights, shape=(3, 3), name="matrix")
    with pytest.raises(KernelSpecError, match="non-finite"):
        get_filter().run(np.zeros((4, 4, 1), np.float32), fake, "clamp", "direct")


@pytest.mark.parametrize("strategy", ["cpu", "auto", "fastest", ""])
def test_unknown_strategy(gpu, strategy) -> None:
    with pytest.raises(StrategyError, match="unknown GPU strategy"):
        get_filter().run(np.zeros((4, 4, 1), np.float32), kernel("box:4"), "clamp", strategy)


def test_bad_tile(gpu) -> None:
    with pytest.raises(StrategyError, match="12"):
        get_filter().run(
            np.zeros((4, 4, 1), np.float32), kernel("box:4"), "clamp", "tiled", tile=12
        )


@pytest.mark.parametrize("strategy", GPU_STRATEGIES)
def test_timing(gpu, strategy) -> None:
    k = kernel("gaussian:sigma=2")
    x = image((96, 128, 4), "timing")
    _, timing = get_filter().run(x, k, "clamp", strategy)
    expected = modelled_bytes(strategy, k, x.shape, limits=gpu.limits)
    assert [p.name for p in timing.passes] == list(expected)
    assert [p.bytes_modelled for p in timing.passes] == list(expected.values())
    assert timing.timer == ("gpu" if gpu.has_timestamps else "wall")
    if "llvmpipe" in gpu.info["name"]:
        assert timing.timer == "gpu"  # lavapipe has timestamp-query
    assert all(p.ms > 0 for p in timing.passes), timing
    assert timing.wall_ms > 0
    assert timing.pixels == 96 * 128
    assert timing.bytes_modelled > 2 * 96 * 128 * 16


def test_wall_clock_timing_without_timestamps(gpu) -> None:
    f = GpuFilter(dataclasses.replace(gpu, has_timestamps=False))
    x = image((20, 30, 2), "wall")
    out, timing = f.run(x, kernel("gaussian:sigma=1"), "reflect", "transpose")
    assert_matches_reference(out, x, kernel("gaussian:sigma=1"), "reflect")
    assert timing.timer == "wall"
    assert [p.name for p in timing.passes] == ["rows", "transpose", "rows_t", "transpose_back"]
    assert all(p.ms > 0 for p in timing.passes)


@pytest.mark.parametrize("strategy", GPU_STRATEGIES)
def test_repeated_runs_rebuild_nothing(fresh_filter, strategy) -> None:
    f = fresh_filter
    x = image((30, 40, 3), "cache")
    f.run(x, kernel("gaussian:sigma=1"), "clamp", strategy)
    created = dict(f.stats)
    assert created["pipelines"] >= 1 and created["textures"] >= 2
    # Same shape, new pixels, same kernel: all reused.
    f.run(image((30, 40, 3), "cache2"), kernel("gaussian:sigma=1"), "clamp", strategy)
    assert dict(f.stats) == created
    # Another kernel of the same size: every strategy reads the new weights from a buffer
    # (fft writes the new kernel's spectrum into its own; the 1-D passes take their buffer
    # variant until a baked pipeline is ready) and reuses everything: no compile.
    _, timing = f.run(x, kernel("box:9"), "clamp", strategy)
    new = {k: v - created.get(k, 0) for k, v in f.stats.items() if v != created.get(k, 0)}
    assert new == {}
    assert not timing.first_run and timing.compile_ms == 0.0
    seen = dict(f.stats)
    out, _ = f.run(x, kernel("box:9"), "clamp", strategy)
    assert dict(f.stats) == seen
    assert_matches_reference(out, x, kernel("box:9"), "clamp")
    f.run(x, kernel("gaussian:sigma=1"), "clamp", strategy)
    created = dict(f.stats)
    # A new shape gets its own textures; going back to the first one creates nothing.
    f.run(image((31, 40, 3), "cache3"), kernel("box:9"), "clamp", strategy)
    grown = dict(f.stats)
    assert grown["textures"] > created["textures"]
    assert grown["pipelines"] == created["pipelines"]
    f.run(x, kernel("box:9"), "clamp", strategy)
    assert dict(f.stats) == grown


def test_get_filter_is_a_singleton(gpu) -> None:
    assert get_filter() is get_filter()
    assert get_filter().context is gpu


def test_every_gpu_entry_of_the_registry_has_its_class() -> None:
    assert tuple(STRATEGIES) == gpu_names()
    for name, strategy in STRATEGIES.items():
        assert strategy.name == name and strategy.summary  # summary comes from the registry


# Long 1-D kernels (more than 65 taps) take the looped, unbaked path of the 1-D passes.
@pytest.mark.parametrize("border", ALL_BORDERS)
@pytest.mark.parametrize("strategy", ["separable", "transpose"])
def test_long_one_dimensional_kernels(gpu, strategy, border) -> None:
    x = image((21, 90, 2), "long")
    k = kernel("box:67x3")
    out, _ = get_filter().run(x, k, border, strategy)
    assert_matches_reference(out, x, k, border)


# Tiled with its largest tile: interior tiles (no border arithmetic) and edge tiles whose
# 2×8 output blocks stick out of the image, in every border mode.
@pytest.mark.parametrize("border", ALL_BORDERS)
def test_tiled_blocks_at_the_edges(gpu, border) -> None:
    x = image((75, 101, 3), "edges")
    k = kernel(NON_SEPARABLE_5X3)
    out, _ = get_filter().run(x, k, border, "tiled", tile=32)
    assert_matches_reference(out, x, k, border)


STORAGE_TOLERANCE = {"rgba8": 0.5 / 255, "rgba16f": 2.0**-11}


@pytest.mark.parametrize("storage", ["rgba8", "rgba16f"])
@pytest.mark.parametrize("strategy", GPU_STRATEGIES)
def test_narrow_storage_formats(gpu, strategy, storage) -> None:
    from blurapp.gpu.engine import to_storage

    x = image((37, 70, 4), "fmt")
    k = kernel("gaussian:sigma=1")
    out, timing = get_filter().run(x, k, "mirror", strategy, storage=storage)
    # Exactly the f32 filter of what the texture holds (accumulation stays f32) ...
    stored = to_storage(x, storage).astype(np.float64)
    if storage == "rgba8":
        stored /= 255.0
    assert_matches_reference(out, stored, k, "mirror")
    # ... and within the format's rounding of the float64 result on the original pixels
    # (a normalised kernel cannot amplify a per-pixel rounding error).
    ref = correlate_float(x, k, Border.parse("mirror"))
    err = float(np.abs(out - ref).max())
    assert err <= STORAGE_TOLERANCE[storage] + 1e-6
    assert err > 0  # the narrower texture really was used
    # The first pass reads 4- or 8-byte texels: fewer modelled bytes than rgba32f.
    wide = modelled_bytes(strategy, k, x.shape, limits=gpu.limits)
    narrow = modelled_bytes(strategy, k, x.shape, limits=gpu.limits, storage=storage)
    assert [p.bytes_modelled for p in timing.passes] == list(narrow.values())
    assert sum(narrow.values()) < sum(wide.values())


def test_storage_of_integer_and_half_inputs(gpu) -> None:
    from blurapp.gpu.engine import to_storage

    u8 = (np.arange(5 * 6 * 3) % 256).astype(np.uint8).reshape(5, 6, 3)
    assert to_storage(u8, "rgba8") is not None and to_storage(u8, "rgba8").dtype == np.uint8
    np.testing.assert_array_equal(to_storage(u8 / 255.0, "rgba8"), u8)
    assert to_storage(np.array([[[-0.5, 2.0]]]), "rgba8").tolist() == [[[0, 255]]]
    out, _ = get_filter().run(u8 / 255.0, kernel("box:3"), "wrap", "direct", storage="rgba8")
    ref = correlate_float(u8 / 255.0, kernel("box:3"), Border.parse("wrap"))
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-6)
    half = image((6, 5, 2), "half").astype(np.float16)
    out, _ = get_filter().run(half, kernel("box:3"), "clamp", "tiled", storage="rgba16f")
    ref = correlate_float(half.astype(np.float64), kernel("box:3"), Border.parse("clamp"))
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-6)


def test_unknown_storage_format(gpu) -> None:
    from blurapp.core.errors import UsageError

    with pytest.raises(UsageError, match="unknown storage format 'rgb565'"):
        get_filter().run(np.zeros((4, 4, 1)), kernel("box:3"), "clamp", "direct", storage="rgb565")


def test_storage_through_the_engine_api(gpu) -> None:
    from blurapp.engine import filter_float

    x = image((16, 24, 3), "api")
    k = kernel("gaussian:sigma=1")
    wide, *_ = filter_float(x, k, "clamp", "separable")
    narrow, *_ = filter_float(x, k, "clamp", "separable", storage="rgba8")
    assert 0 < np.abs(wide - narrow).max() <= 0.5 / 255 + 1e-6


# ------------------------------------------------------------- rgba8 output (the batch's path)


def _reference_u8(x: np.ndarray, k: Kernel, border: str) -> np.ndarray:
    ref = correlate_float(x.astype(np.float64), k, Border.parse(border))
    return from_float(ref, np.uint8, range_mode="clamp", squeeze=False)


@pytest.mark.parametrize(
    "shape",
    [(37, 23, 3), (1, 1, 3), (29, 17, 2), (37, 23, 4)],
    ids=["37x23x3", "1x1x3", "29x17x2", "37x23x4"],
)
@pytest.mark.parametrize("border", ALL_BORDERS)
@pytest.mark.parametrize("strategy", GPU_STRATEGIES)
def test_rgba8_output_matches_the_reference(gpu, strategy, border, shape) -> None:
    """The last pass stores rgba8unorm (clamped, rounded to nearest by the GPU): within one level
    of from_float's clamp quantisation of the float64 reference, for every strategy and border.
    Inputs reach outside [0, 1] so that the clamp is exercised. With 1 to 3 channels the 1-D
    passes compute only the .rgb lanes (test_rgba8_output_of_rgb_skips_the_alpha_lane)."""
    x = image(shape, f"u8out{border}") * 1.4 - 0.2
    k = kernel("gaussian:sigma=1.5")
    out, timing = get_filter().run(x, k, border, strategy, output="rgba8")
    assert out.dtype == np.uint8 and out.shape == shape
    want = _reference_u8(x, k, border)
    assert np.abs(out.astype(int) - want.astype(int)).max() <= 1
    # Only the last pass writes 4-byte texels.
    wide = modelled_bytes(strategy, k, shape, limits=gpu.limits)
    narrow = modelled_bytes(strategy, k, shape, limits=gpu.limits, output="rgba8")
    assert [p.bytes_modelled for p in timing.passes] == list(narrow.values())
    last = list(wide)[-1]
    assert narrow[last] == wide[last] - shape[0] * shape[1] * 12
    assert {n: b for n, b in narrow.items() if n != last} == {
        n: b for n, b in wide.items() if n != last
    }


def test_rgba8_output_of_rgb_skips_the_alpha_lane() -> None:
    """An 8-bit output of 1 to 3 channels runs the 1-D passes' ``rgb`` variant (the alpha lane,
    never read back, is not computed); 4 channels, or a float output, the vec4 passes that the
    start-up warm-up's float runs compile."""
    from blurapp.core.planner import DeviceLimits
    from blurapp.gpu.engine import _passes

    k = kernel("gaussian:sigma=2")

    def rgb(strategy: str, channels: int, output: str) -> list[bool]:
        passes = _passes(strategy, k, 0, 0.0, (64, 48), DeviceLimits(), None, channels, None,
                         output)  # fmt: skip
        return [dict(p.template).get("rgb", False) for p in passes if p.shader != "transpose"]

    for strategy in ("separable", "transpose", "lowrank"):
        assert all(rgb(strategy, 3, "rgba8")) and all(rgb(strategy, 1, "rgba8"))
        assert not any(rgb(strategy, 4, "rgba8")) and not any(rgb(strategy, 3, "rgba32f"))
    assert rgb("direct", 3, "rgba8") == [False]


def test_rgba8_output_of_a_non_separable_kernel(gpu) -> None:
    x = image((29, 41, 4), "u8ns")
    k = kernel(NON_SEPARABLE_5X3)  # signed weights: results well outside [0, 1]
    for strategy in ("direct", "tiled"):
        out, _ = get_filter().run(x, k, "reflect", strategy, output="rgba8", storage="rgba8")
        stored = to_storage(x, "rgba8") / 255.0
        want = _reference_u8(stored, k, "reflect")
        assert np.abs(out.astype(int) - want.astype(int)).max() <= 1
        assert (out == 0).any() and (out == 255).any()


def test_rgba8_output_rounds_to_nearest_and_clamps(gpu) -> None:
    identity = Kernel.from_weights(np.ones((1, 1)))
    levels = np.arange(256, dtype=np.float64)
    values = np.concatenate(
        [[-1.0, -1e-3, 0.0, 1.0, 1.001, 7.5], (levels + 0.4) / 255, (levels[:-1] + 0.6) / 255]
    )
    x = values.astype(np.float32).reshape(1, -1, 1)
    for strategy in GPU_STRATEGIES:
        out, _ = get_filter().run(x, identity, "clamp", strategy, output="rgba8")
        np.testing.assert_array_equal(out, from_float(x, np.uint8, squeeze=False))


def test_rgba8_output_of_a_two_dimensional_image_and_convert(gpu) -> None:
    x = image((9, 14, 1), "u8two")
    k = kernel("box:3")
    out, _ = get_filter().run(x[:, :, 0], k, "wrap", "separable", output="rgba8")
    assert out.shape == (9, 14) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, get_filter().run(x, k, "wrap", "separable",
                                                        output="rgba8")[0][:, :, 0])  # fmt: skip
    seen = []

    def convert(y: np.ndarray) -> np.ndarray:
        seen.append((y.dtype, y.shape, y.flags.writeable))
        return y.astype(np.int16) - 1

    got, _ = get_filter().run(x, k, "wrap", "direct", output="rgba8", convert=convert)
    assert seen == [(np.uint8, (9, 14, 1), False)]
    np.testing.assert_array_equal(got, out[:, :, None].astype(np.int16) - 1)


def test_rgba8_output_has_its_own_small_output_texture_and_readback(fresh_filter) -> None:
    """An rgba8 output allocates a 4-byte-per-texel output texture and readback buffer (not the
    float ones), shares the f32 intermediates with the float output, and is cached."""
    f = fresh_filter
    x = image((30, 70, 3), "u8mem")
    k = kernel("gaussian:sigma=1")
    f.run(x, k, "clamp", "separable", output="rgba8")
    res = f._shapes[(70, 30)]
    assert {key[0]: key[3] for key in res.textures} == {
        "input": "rgba32float",
        "tmp0": "rgba32float",
        "output": "rgba8unorm",
    }
    assert set(res.readbacks) == {"rgba8"}
    assert [rb[1] for rb in res.readbacks["rgba8"]] == [512]  # 70 × 4 bytes, padded to 256
    created = dict(f.stats)
    f.run(image((30, 70, 3), "u8mem2"), k, "clamp", "separable", output="rgba8")
    assert dict(f.stats) == created
    # The float output adds its own output texture, readback and pipelines only (both passes':
    # the 8-bit output of RGB ran the variant that skips the alpha lane).
    f.run(x, k, "clamp", "separable")
    new = {n: v - created.get(n, 0) for n, v in f.stats.items() if v != created.get(n, 0)}
    assert new == {"textures": 1, "buffers": 1, "pipelines": 2, "shader_modules": 2,
                   "bind_groups": 1}  # fmt: skip
    assert set(res.readbacks) == {"rgba8", "rgba32f"}


def test_unknown_output_format(gpu) -> None:
    from blurapp.core.errors import UsageError
    from blurapp.engine import filter_float

    with pytest.raises(UsageError, match="unknown output format 'rgba16'"):
        get_filter().run(np.zeros((4, 4, 1)), kernel("box:3"), "clamp", "direct", output="rgba16")
    with pytest.raises(UsageError, match="unknown output format 'rgba16'"):
        modelled_bytes("direct", kernel("box:3"), (4, 4), output="rgba16")
    for strategy in ("cpu", "direct"):
        with pytest.raises(UsageError, match="unknown output format 'rgba16'"):
            filter_float(np.zeros((4, 4, 1)), "box:3", "clamp", strategy, output="rgba16")


def test_rgba8_output_through_the_engine_api(gpu) -> None:
    from blurapp.engine import filter_float

    x = image((16, 24, 3), "u8api") * 1.2 - 0.1
    k = kernel("gaussian:sigma=1")
    want = _reference_u8(x, k, "clamp")
    for strategy in ("separable", "cpu", "auto"):
        got, _, ran, _ = filter_float(x, k, "clamp", strategy, output="rgba8")
        assert got.dtype == np.uint8 and got.shape == x.shape
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        if ran == "cpu":
            np.testing.assert_array_equal(got, want)  # the same float64 result and rounding


def test_input_key_skips_the_upload_of_an_image_the_texture_holds(fresh_filter) -> None:
    """A live preview changes the kernel, not the image: with the same input_key the input
    texture is reused as it is; a new key, another channel count or no key uploads again."""
    f = fresh_filter
    x = image((21, 37, 3), "key")
    y = image((21, 37, 3), "key2")
    box, gauss = kernel("box:3"), kernel("gaussian:sigma=1")
    out, _ = f.run(x, box, "clamp", "separable", input_key="a")
    assert f.uploads == 1
    out2, _ = f.run(y, gauss, "mirror", "tiled", input_key="a")  # y ignored: the key says x
    assert f.uploads == 1
    assert_matches_reference(out2, x, gauss, "mirror")
    out3, _ = f.run(y, gauss, "mirror", "tiled", input_key="b")
    assert f.uploads == 2
    assert_matches_reference(out3, y, gauss, "mirror")
    f.run(y[:, :, :2], gauss, "clamp", "direct", input_key="b")  # same key, 2 channels
    assert f.uploads == 3
    for _ in range(2):
        f.run(y, gauss, "clamp", "direct")  # no key: always uploaded
    assert f.uploads == 5
    out4, _ = f.run(x, box, "clamp", "separable", input_key="b")  # after keyless runs
    assert f.uploads == 6
    np.testing.assert_array_equal(out4, out)
    # Each storage format has its own input texture and remembers its own key.
    f.run(x, box, "clamp", "separable", input_key="b", storage="rgba16f")
    f.run(x, box, "clamp", "separable", input_key="b")
    assert f.uploads == 7


def test_stepping_sigma_keeps_the_pipeline_caches_bounded(fresh_filter) -> None:
    """A preview stepping a Gaussian's sigma 40 times compiles only per size bucket (the 1-D
    passes read the new weights from a buffer); the baked pipelines, one pair per kernel as the
    background compile makes them, stop at the caches' size."""
    from blurapp.core.borders import Border
    from blurapp.gpu.engine import KEPT_PIPELINES, KEPT_SHADER_MODULES
    from blurapp.gpu.strategies import TAP_BUCKETS, get_strategy

    f = fresh_filter
    f.BAKE_IN_BACKGROUND = False
    x = image((9, 11, 2), "sigma-steps")
    sigmas = [0.5 + 0.05 * i for i in range(40)]
    border = Border.parse("mirror")
    buckets = set()
    for sigma in sigmas:
        k = Kernel.parse(f"gaussian:sigma={sigma}")
        out, _ = f.run(x, k, "mirror", "separable")
        assert_matches_reference(out, x, k, "mirror")
        buckets.add(next(b for b in TAP_BUCKETS if b >= k.shape[0]))
    assert f.stats["pipelines"] == 2 * len(buckets) < len(sigmas)
    # The baked pipelines of every step (what background compiles would add): bounded.
    for sigma in sigmas:
        k = Kernel.parse(f"gaussian:sigma={sigma}")
        for p in get_strategy("separable").passes(
            k, border.mode.value, border.value, (11, 9), f.context.limits, None, 2
        ):
            f._pipeline(p)
        assert len(f._pipelines) <= KEPT_PIPELINES
        assert len(f._modules) <= KEPT_SHADER_MODULES
    made, kept = f.stats["pipelines"], len(f._pipelines)
    assert made == 2 * len(buckets) + 2 * len(sigmas) > KEPT_PIPELINES == kept
    assert f.stats["pipelines_evicted"] == made - kept
    assert f.stats["shader_modules_evicted"] == f.stats["shader_modules"] - len(f._modules)
    # The newest kernel runs baked without a compile; the first one's baked pipelines were
    # dropped: it runs again through the buffer variant, right.
    _, timing = f.run(x, Kernel.parse(f"gaussian:sigma={sigmas[-1]}"), "mirror", "separable")
    assert f.stats["pipelines"] == made and not timing.first_run
    first = Kernel.parse(f"gaussian:sigma={sigmas[0]}")
    out, _ = f.run(x, first, "mirror", "separable")
    assert_matches_reference(out, x, first, "mirror")


@pytest.mark.parametrize("strategy", ["separable", "transpose"])
def test_a_new_kernel_is_not_compiled_and_the_baked_pipeline_gives_the_same_values(
    fresh_filter, strategy
) -> None:
    """A sigma step within a size bucket runs the 1-D passes' buffer variant without compiling
    anything; once the baked pipelines exist they are used, with bit-identical results, and
    the zeros that pad the taps to the bucket do not spread a NaN (DESIGN.md Numbers)."""
    from blurapp.core.borders import Border
    from blurapp.gpu.strategies import get_strategy

    f = fresh_filter
    f.BAKE_IN_BACKGROUND = False
    x = image((37, 29, 3), "bucket")
    x[18, 3, 1] = np.nan
    first, t0 = f.run(x, kernel("gaussian:sigma=2"), "mirror", strategy)
    assert t0.first_run and t0.compile_ms > 0
    k = kernel("gaussian:sigma=2.07")  # 17 taps too: the same bucket
    buffered, t1 = f.run(x, k, "mirror", strategy)
    assert not t1.first_run and t1.compile_ms == 0.0
    assert_matches_reference(buffered, x, k, "mirror")
    want = correlate_float(x.astype(np.float64), k, Border.parse("mirror"))
    np.testing.assert_array_equal(np.isnan(buffered), np.isnan(want))
    border = Border.parse("mirror")
    for p in get_strategy(strategy).passes(
        k, border.mode.value, border.value, (29, 37), f.context.limits, None, 3
    ):
        f._pipeline(p)  # the baked pipelines, as the background compile would make them
    made = f.stats["pipelines"]
    baked, t2 = f.run(x, k, "mirror", strategy)
    assert f.stats["pipelines"] == made and not t2.first_run
    np.testing.assert_array_equal(baked, buffered)
    assert not np.array_equal(first, buffered)


def test_background_baking_waits_while_user_work_holds_it(fresh_filter) -> None:
    """Baking is background work: while the window's user work holds the background (the
    scheduler's pause, as for the calibration) no bake compiles; it goes on after."""
    import time

    from blurapp.gpu import calibration

    f = fresh_filter
    f.BAKE_IN_BACKGROUND = True
    x = image((19, 23, 3), "hold")
    k = kernel("gaussian:sigma=1.7")
    calibration.pause()
    try:
        first, _ = f.run(x, k, "clamp", "separable")
        time.sleep(1.5)
        assert f.stats["baked_in_background"] == 0
    finally:
        calibration.resume()
    deadline = time.monotonic() + 60
    while f.stats["baked_in_background"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f.stats["baked_in_background"] == 2
    again, _ = f.run(x, k, "clamp", "separable")
    np.testing.assert_array_equal(again, first)


def test_baked_pipelines_compile_in_the_background_and_are_swapped_in(fresh_filter) -> None:
    """Where baking pays (hardware adapters; forced here), a new kernel runs the buffer
    variant at once while its baked pipelines compile on a thread; later runs use them, with
    the same values."""
    import time

    f = fresh_filter
    f.BAKE_IN_BACKGROUND = True
    x = image((21, 17, 3), "bake")
    k = kernel("gaussian:sigma=1.3")
    first, _ = f.run(x, k, "mirror", "separable")
    deadline = time.monotonic() + 60
    while f.stats["baked_in_background"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f.stats["baked_in_background"] == 2  # the rows and the columns pass
    made = f.stats["pipelines"]
    again, timing = f.run(x, k, "mirror", "separable")
    assert f.stats["pipelines"] == made and not timing.first_run
    np.testing.assert_array_equal(again, first)
    assert_matches_reference(again, x, k, "mirror")
