"""The lowrank strategy on the GPU: held to the error it promises, on every border mode and the
awkward shapes, with its pairs summed on the GPU without a readback in between."""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

from blurapp.core.borders import Border
from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.lowrank import low_rank
from blurapp.core.planner import DeviceLimits
from blurapp.core.reference import correlate_float
from blurapp.gpu.engine import get_filter, modelled_bytes
from blurapp.gpu.strategies import get_strategy

pytestmark = pytest.mark.gpu

BORDERS = ("clamp", "zero", "constant=0.5", "reflect", "mirror", "wrap")


@functools.cache
def kernel(spec: str) -> Kernel:
    return Kernel.parse(spec)


def image(shape: tuple[int, int, int], tag: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{shape}{tag}".encode()))
    return rng.random(shape, dtype=np.float32)


def assert_within_promise(
    out: np.ndarray, x: np.ndarray, k: Kernel, border: str, tolerance: float | None
) -> float:
    """|GPU - float64 reference| <= the promised error · max|x| plus float32 rounding."""
    chosen = low_rank(k, tolerance)
    b = Border.parse(border)
    ref = correlate_float(x, k, b)
    scale = max(float(np.abs(x).max()), abs(b.value))
    # float32 rounding of the k pairs, each summed separately: a few ulps of what they add up.
    pairs = sum(
        np.abs(c).sum() * np.abs(r).sum() for c, r in zip(chosen.columns, chosen.rows, strict=True)
    )
    slack = 4e-6 * pairs * scale
    err = float(np.abs(out.astype(np.float64) - ref).max())
    assert out.shape == x.shape and out.dtype == np.float32
    assert err <= chosen.error * scale + slack, (err, chosen.describe())
    return err


CASES = [
    # exact ranks: laplacian 2, unsharp 2, LoG 3, disk r=4 5; an even-sided non-separable one
    ("laplacian", None),
    ("unsharp:sigma=1.5,amount=2", None),
    ("log:sigma=1.2", None),
    ("disk:radius=4", None),
    ("matrix:4x2:1,-2,3,0.5,2,4,1,-1", None),
    # approximations: rank 11 at 1e-2 (k=9) and at the default (k=10)
    ("disk:radius=16.5", 1e-2),
    ("disk:radius=16.5", None),
]


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize(("spec", "tolerance"), CASES)
@pytest.mark.parametrize(
    "shape", [(1, 1, 1), (7, 5, 3), (37, 23, 4), (129, 257, 2)], ids=lambda s: "x".join(map(str, s))
)
def test_within_the_promised_error(gpu, spec, tolerance, border, shape) -> None:
    # 1×1 and 7×5: the kernel is larger than the image (reflections repeat); 129×257: several
    # workgroups in both directions with partial ones at the edges (not multiples of 16/32).
    if shape == (129, 257, 2) and spec.startswith("disk:radius=16"):
        shape = (61, 97, 2)  # keep the run short; still not a multiple of a workgroup
    x = image(shape, spec)
    k = kernel(spec)
    out, timing = get_filter().run(x, k, border, "lowrank", tolerance=tolerance)
    assert_within_promise(out, x, k, border, tolerance)
    assert len(timing.passes) == 2 * low_rank(k, tolerance).k


def test_the_tolerance_really_approximates(gpu) -> None:
    # At 1e-2 the rank-11 disk runs as 9 pairs: visibly not exact, but within the promise.
    x = image((80, 90, 1), "approx")
    k = kernel("disk:radius=16.5")
    loose, _ = get_filter().run(x, k, "mirror", "lowrank", tolerance=1e-2)
    tight, _ = get_filter().run(x, k, "mirror", "lowrank")
    err_loose = assert_within_promise(loose, x, k, "mirror", 1e-2)
    err_tight = assert_within_promise(tight, x, k, "mirror", None)
    assert 1e-5 < err_loose <= 1e-2
    assert err_tight < err_loose


def test_passes_sum_pairs_on_the_gpu_without_readback() -> None:
    k = kernel("log:sigma=1.5")  # rank 3
    passes = get_strategy("lowrank").passes(k, 1, 0.5, (40, 30), DeviceLimits())
    assert [p.name for p in passes] == ["rows1", "cols1", "rows2", "cols2", "rows3", "cols3"]
    assert [(p.src, p.dst, p.add) for p in passes] == [
        ("input", "tmp0", None), ("tmp0", "tmp1", None),
        ("input", "tmp0", None), ("tmp0", "tmp2", "tmp1"),
        ("input", "tmp0", None), ("tmp0", "output", "tmp2"),
    ]  # fmt: skip
    chosen = low_rank(k)
    for j, (rows, cols) in enumerate(zip(passes[::2], passes[1::2], strict=True)):
        # Constant border: the row pass reads V, the column pass V·sum(row_j).
        assert rows.constant == 0.5
        assert cols.constant == pytest.approx(0.5 * chosen.rows[j].sum())
        np.testing.assert_allclose(cols.weights, chosen.columns[j].astype(np.float32))
        # Weights from the buffer (one pipeline for every pair), unrolled all the same.
        assert dict(rows.template)["baked"] is None and dict(rows.template)["unrolled"]
    # One row and one column shape of code for all pairs (plus the adding one).
    assert len({(p.shader, p.template) for p in passes}) == 3
    total = modelled_bytes("lowrank", k, (30, 40, 4))
    assert list(total) == [p.name for p in passes]
    assert total["cols2"] == total["cols1"] + 40 * 30 * 16  # the running sum read back


def test_another_kernel_of_the_same_size_compiles_nothing(fresh_filter) -> None:
    f = fresh_filter
    x = image((30, 40, 3), "cache")
    f.run(x, kernel("dog:sigma=1,sigma2=2"), "clamp", "lowrank")
    created = dict(f.stats)
    out, _ = f.run(x, kernel("unsharp:sigma=2"), "clamp", "lowrank")
    assert dict(f.stats) == created  # 17×17 rank 2 again: same pipelines, textures, groups
    assert_within_promise(out, x, kernel("unsharp:sigma=2"), "clamp", None)


def test_refusals_are_one_line(gpu) -> None:
    w = np.random.default_rng(65).random((65, 65))
    k = Kernel.from_weights(w / w.sum())
    with pytest.raises(StrategyError, match="more than 32 separable pairs"):
        get_filter().run(np.zeros((8, 8, 1), np.float32), k, "clamp", "lowrank", tolerance=1e-6)


def test_non_finite_images(gpu) -> None:
    # NaN and Inf land where the reference has them (tests/gpu/test_nonfinite_large.py has the
    # border modes and shapes); auto picks lowrank for such an image as for any other.
    from blurapp.engine import filter_float

    x = image((20, 24, 3), "nan")
    x[5, 7, 1] = np.nan
    x[11, 3, 0] = np.inf
    y, _, ran, _ = filter_float(x, "disk:radius=8", "clamp", "lowrank")
    ref = correlate_float(x, kernel("disk:radius=8"), Border.parse("clamp"))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))  # DESIGN.md's NaN rule
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(ref))
    y, _, ran, reason = filter_float(x, "unsharp:sigma=2", "clamp", "auto")
    assert ran == "lowrank" and reason.startswith("rank 2")
    ref = correlate_float(x, kernel("unsharp:sigma=2"), Border.parse("clamp"))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(ref))
    # The finite outputs: the reference's within lowrank's promise (scaled by the finite max).
    finite = np.isfinite(ref)
    slack = 4e-6 * 4 * float(np.abs(kernel("unsharp:sigma=2").weights).sum())
    np.testing.assert_allclose(y[finite], ref[finite], rtol=0, atol=slack)


def test_tolerance_through_the_pixel_pipeline(gpu) -> None:
    import blurapp
    from blurapp.core.filterspec import FilterSpec
    from blurapp.pipeline import filter_pixels

    x = image((40, 50, 1), "pipe")[:, :, 0]
    spec = FilterSpec.create("disk:radius=16.5", "wrap", "lowrank", tolerance=1e-2)
    result = filter_pixels(x, spec)
    got = result.image
    assert (result.strategy, result.reason) == (
        "lowrank",
        "lowrank k=9 (tolerance 0.01), error ≤ 0.0098",
    )
    direct, *_ = get_filter().run(x, kernel("disk:radius=16.5"), "wrap", "lowrank", tolerance=1e-2)
    np.testing.assert_array_equal(got, direct)
    assert blurapp.filter_image is not None
