"""NaN and Inf with the large-kernel strategies: ``fft`` and ``lowrank`` (whose arithmetic would
spread them) mark an output NaN or ±Inf exactly where the float64 reference does, for every
border mode and the awkward shapes, through the engine and through ``blurapp apply``
(blurapp.gpu.nonfinite); and weights float32 cannot hold as normal numbers are zero taps in
every strategy alike."""

from __future__ import annotations

import functools
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blurapp.core import strategies
from blurapp.core.borders import Border
from blurapp.core.kernel import Kernel
from blurapp.core.lowrank import low_rank
from blurapp.core.reference import correlate_float
from blurapp.engine import filter_float
from blurapp.gpu.nonfinite import COUNT_PASS_PREFIX, fft_count_bound

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "_nonfinite_core", _HERE.parent / "core/test_nonfinite.py"
)
_core = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_core)
SCIPY_MODES, mixed_image, scipy_correlate = (
    _core.SCIPY_MODES,
    _core.mixed_image,
    _core.scipy_correlate,
)

pytestmark = pytest.mark.gpu

# Rank 1 and signed with a zero column; both signs, rank 2; positive, 7×7 (larger than some
# images); even-sized with zero taps.
KERNELS = ["sobel:x", "unsharp:sigma=1", "disk:radius=3", "matrix:3x2:1,0,-1,2,0,-2"]


@functools.cache
def kernel(spec: str) -> Kernel:
    return Kernel.parse(spec)


def images() -> list[np.ndarray]:
    """NaN, +inf, -inf and meeting infinities; a 1×1 NaN; a 4×3 image smaller than the 7×7 disk
    with +inf and -inf; an odd 5×9 one of NaN beside +inf."""
    tiny = np.full((4, 3, 1), 0.25)
    tiny[1, 1, 0], tiny[3, 0, 0] = np.inf, -np.inf
    odd = np.random.default_rng(2).random((5, 9, 3))
    odd[2, 4, 1], odd[2, 5, 1], odd[0, 8, 2] = np.nan, np.inf, -np.inf
    return [mixed_image(), np.full((1, 1, 1), np.nan), tiny, odd]


def tolerance(strategy: str, k: Kernel, x: np.ndarray, border: str) -> float:
    """The strategy's stated error for the finite part of ``x`` (what it is run on)."""
    finite = x[np.isfinite(x)]
    top = max(float(np.abs(finite).max()) if finite.size else 0.0, abs(Border.parse(border).value))
    top = max(top, 1e-3)
    l1 = float(np.abs(k.weights).sum())
    if strategy == "fft":  # 2^-24 · log2(NR·NC) · max|x| · ||k||_1, at most 2048² blocks
        return 2.0**-24 * 22 * top * l1 + 1e-7
    chosen = low_rank(k)
    pairs = sum(
        np.abs(c).sum() * np.abs(r).sum() for c, r in zip(chosen.columns, chosen.rows, strict=True)
    )
    return chosen.error * top + 4e-6 * pairs * top + 1e-7


def check(got: np.ndarray, want: np.ndarray, atol: float) -> None:
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape
    for name, test in (("NaN", np.isnan), ("+Inf", np.isposinf), ("-Inf", np.isneginf)):
        diff = np.argwhere(test(got) != test(want))
        assert diff.size == 0, f"{name} differs from the reference at {diff[:5].tolist()}"
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=atol)


@pytest.mark.parametrize("border", SCIPY_MODES)
@pytest.mark.parametrize("strategy", ["fft", "lowrank"])
def test_nan_and_inf_land_where_the_reference_has_them(gpu, strategy: str, border: str) -> None:
    for spec in KERNELS:
        k = kernel(spec)
        for x in images():
            want = correlate_float(x, k, border)
            got, timing, ran, _ = filter_float(x, k, border, strategy)
            assert ran == strategy and got.dtype == np.float32
            check(got, want, tolerance(strategy, k, x, border))
            assert any(p.name.startswith(COUNT_PASS_PREFIX) for p in timing.passes)
    # The reference is scipy's on these (tests/core/test_nonfinite.py holds it everywhere).
    x = mixed_image()
    want = scipy_correlate(x, kernel("laplacian").weights, border)
    check(filter_float(x, kernel("laplacian"), border, strategy)[0], want, 1e-5)


def test_finite_images_take_the_plain_run(gpu) -> None:
    x = np.random.default_rng(1).random((9, 8, 3)).astype(np.float32)
    for strategy in ("fft", "lowrank"):
        _, timing, _, _ = filter_float(x, kernel("laplacian"), "clamp", strategy)
        assert not any(p.name.startswith(COUNT_PASS_PREFIX) for p in timing.passes)
    # Direct and tiled place NaN themselves: no overlay for them.
    x[3, 3, 0] = np.nan
    for strategy in ("direct", "tiled"):
        _, timing, _, _ = filter_float(x, kernel("laplacian"), "clamp", strategy)
        assert not any(p.name.startswith(COUNT_PASS_PREFIX) for p in timing.passes)


def test_auto_picks_fft_and_lowrank_for_an_image_with_nan(gpu) -> None:
    x = mixed_image((20, 24, 3))
    for spec, expected in (("disk:radius=30", "fft"), ("unsharp:sigma=2", "lowrank")):
        k = kernel(spec)
        got, _, ran, reason = filter_float(x, k, "mirror", "auto")
        assert ran == expected and "NaN" not in reason
        check(got, correlate_float(x, k, "mirror"), tolerance(expected, k, x, "mirror"))


@pytest.mark.parametrize("strategy", ["fft", "lowrank"])
def test_quantised_outputs_and_convert_see_the_overlaid_floats(gpu, strategy: str) -> None:
    # NaN, +inf and -inf in; output="rgba8" quantises after the overlay as the cpu strategy
    # does (from_float: NaN and -inf to 0, +inf to 255), and convert receives those pixels.
    x = mixed_image((13, 11, 3))
    k = kernel("sobel:x")
    cpu8, _, _, _ = filter_float(x, k, "reflect", "cpu", output="rgba8")
    got8, _, _, _ = filter_float(x, k, "reflect", strategy, output="rgba8")
    assert got8.dtype == np.uint8 and got8.shape == x.shape
    want = correlate_float(x, k, "reflect")
    bad = ~np.isfinite(want)
    assert np.isnan(want).any() and np.isposinf(want).any() and np.isneginf(want).any()
    np.testing.assert_array_equal(got8[bad], cpu8[bad])
    np.testing.assert_array_equal(got8[np.isposinf(want)], 255)
    np.testing.assert_array_equal(got8[np.isnan(want) | np.isneginf(want)], 0)
    assert np.abs(got8.astype(int) - cpu8.astype(int)).max() <= 1
    seen = []

    def convert(pixels: np.ndarray) -> np.ndarray:
        seen.append((pixels.dtype, pixels.shape))
        return pixels.astype(np.float64) * 2

    got, _, _, _ = filter_float(x, k, "reflect", strategy, convert=convert)
    assert seen == [(np.dtype(np.float32), x.shape)]
    check(got / 2, want, 1e-5)
    seen.clear()
    got, _, _, _ = filter_float(x, k, "reflect", strategy, output="rgba8", convert=convert)
    assert seen == [(np.dtype(np.uint8), x.shape)]
    np.testing.assert_array_equal(got, got8 * 2.0)


def test_every_strategy_quantises_nan_as_the_reference(gpu) -> None:
    # An rgba8unorm store makes NaN 255 on lavapipe; filter_float quantises such an image's
    # float result instead, as cpu does (NaN to 0), in every strategy and through the pipeline.
    from blurapp.core.filterspec import FilterSpec
    from blurapp.pipeline import filter_pixels

    x = mixed_image((13, 11, 3)).astype(np.float32)
    k = kernel("box:3")
    cpu8, _, _, _ = filter_float(x, k, "clamp", "cpu", output="rgba8")
    assert cpu8[np.isnan(correlate_float(x, k, "clamp"))].max() == 0
    for strategy in strategies.gpu_names():
        got8, _, _, _ = filter_float(x, k, "clamp", strategy, output="rgba8")
        assert np.abs(got8.astype(int) - cpu8.astype(int)).max() <= 1, strategy
        np.testing.assert_array_equal(got8[~np.isfinite(x)], cpu8[~np.isfinite(x)])
        image = filter_pixels(x, FilterSpec.create(k, "clamp", strategy), dtype=np.uint8).image
        np.testing.assert_array_equal(image[np.isnan(x)], 0)


def test_half_float_storage_overflows_as_in_direct(gpu) -> None:
    # 1e5 is finite in float32 but inf in the rgba16f texture: what the texture holds decides.
    x = np.random.default_rng(3).random((10, 9, 2)).astype(np.float32)
    x[4, 4, 0], x[7, 2, 1], x[1, 6, 1] = 1e5, -1e5, np.nan
    k = kernel("laplacian")
    with np.errstate(over="ignore", invalid="ignore"):  # the uploads' casts, as intended
        direct, _, _, _ = filter_float(x, k, "clamp", "direct", storage="rgba16f")
    for strategy in ("fft", "lowrank"):
        got, _, _, _ = filter_float(x, k, "clamp", strategy, storage="rgba16f")
        for test in (np.isnan, np.isposinf, np.isneginf):
            np.testing.assert_array_equal(test(got), test(direct))
        finite = np.isfinite(direct)
        np.testing.assert_allclose(got[finite], direct[finite], atol=1e-4)
    # rgba8 storage holds no NaN or Inf (clamped on upload): the plain run, as for direct.
    with np.errstate(invalid="ignore"):
        _, timing, _, _ = filter_float(x, k, "clamp", "fft", storage="rgba8")
    assert not any(p.name.startswith(COUNT_PASS_PREFIX) for p in timing.passes)


@pytest.mark.parametrize("border", ["clamp", "constant=1e37", "wrap"])
def test_fft_on_huge_finite_values_overflows_nowhere(gpu, border: str) -> None:
    # One pixel of 3e38 made fft's transforms overflow over the whole block (72 non-finite
    # outputs of 256 where the reference has none); the input now runs scaled by a power of two.
    from blurapp.gpu.nonfinite import fft_exponent

    x = np.random.default_rng(8).random((16, 16, 2)).astype(np.float32)
    x[5, 5, 0], x[9, 2, 1], x[12, 12, 1] = 3e38, -1e35, np.nan
    for spec in ("box:3", "disk:radius=3"):
        k = kernel(spec)
        assert fft_exponent(3e38, k) > 0 and fft_exponent(1.0, k) == 0
        want = correlate_float(x, k, border)
        got, _, _, _ = filter_float(x, k, border, "fft")
        check(got, want, tolerance("fft", k, x, border))
        finite = np.nan_to_num(x, nan=0.0)
        got, _, _, _ = filter_float(finite, k, border, "fft")
        check(got, correlate_float(finite, k, border), tolerance("fft", k, x, border))


def test_an_hxw_image_stays_hxw(gpu) -> None:
    x = np.random.default_rng(4).random((6, 7))
    x[2, 3] = np.nan
    for strategy in ("fft", "lowrank"):
        got, _, _, _ = filter_float(x, kernel("box:3"), "wrap", strategy)
        want = correlate_float(x[:, :, None], kernel("box:3"), "wrap")[:, :, 0]
        assert got.shape == (6, 7)
        check(got, want, 1e-5)


def test_the_fft_count_bound_leaves_room_for_the_largest_kernel() -> None:
    # A count is decided by > 0.5; fft's stated bound for a full 513² mask in 2048² blocks.
    bound = fft_count_bound(np.ones((513, 513)), (2048, 2048))
    assert bound == pytest.approx(2.0**-24 * 22 * 513**2) and bound < 0.35


# -- zero taps: weights float32 cannot hold as normal numbers ----------------------------------

ALL = (*strategies.gpu_names(), "cpu")


@pytest.mark.parametrize(
    "spec", ["matrix:3x1:1e-46,1,1e-46", "matrix:3x1:1e-40,1,-1e-40", "matrix:1x3:1e-39,2,1e-39"]
)
def test_a_nan_under_a_tiny_weight_spreads_nowhere(gpu, spec: str) -> None:
    k = kernel(spec)
    x = np.random.default_rng(5).random((7, 8, 1))
    x[3, 4, 0] = np.nan
    x[5, 1, 0] = np.inf
    # scipy.ndimage.correlate skips the raw tiny weights too (|w| <= DBL_EPSILON).
    raw = np.array([float(v) for v in spec.split(":")[2].split(",")]).reshape(k.shape)
    for border in ("clamp", "constant=0.25"):
        want = scipy_correlate(x, raw, border)
        for strategy in ALL:
            if strategies.why_not(strategy, k) is None:
                check(filter_float(x, k, border, strategy)[0], want, 1e-5)


def test_a_gaussian_whose_tail_products_underflow(gpu) -> None:
    # Its factors are normal float32 out to |u| = 13, their products only within a disc of
    # radius ~13: a NaN reaches that disc in every strategy, not the 27×27 square of two 1-D
    # passes (separable and transpose get the overlay, as lowrank and fft do).
    k = kernel("gaussian:sigma=1,radius=20")
    x = np.random.default_rng(6).random((29, 29, 1))
    x[14, 14, 0] = np.nan
    want = correlate_float(x, k, "zero")
    disc = np.isnan(want[:, :, 0])
    assert disc.sum() < 27 * 27 and disc[14, 1] and not disc[1, 1]
    for strategy in ALL:
        got, _, _, _ = filter_float(x, k, "zero", strategy)
        check(got, want, 1e-5)
    assert not math.isnan(float(want[1, 1, 0]))


# -- through the command line --------------------------------------------------------------------


@pytest.mark.parametrize(("suffix", "strategy"), [(".npy", "fft"), (".tif", "lowrank")])
def test_blurapp_apply_on_a_float_file(gpu, tmp_path: Path, suffix: str, strategy: str) -> None:
    import tifffile

    x = mixed_image((15, 12, 3)).astype(np.float32)
    src, out = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    if suffix == ".npy":
        np.save(src, x)
    else:
        tifffile.imwrite(src, x, photometric="rgb")
    spec, border = "laplacian", "mirror"
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "apply", str(src), "-o", str(out), "--kernel", spec,
         "--border", border, "--strategy", strategy],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = np.load(out) if suffix == ".npy" else tifffile.imread(out)
    assert got.dtype == np.float32 and got.shape == x.shape
    check(
        got, correlate_float(x, kernel(spec), border), tolerance(strategy, kernel(spec), x, border)
    )
