"""The n-D GPU passes (blurapp.gpu.ndpass): f32 and double-float against the float64 reference
and scipy.ndimage on every border mode, origin, awkward shapes and ndim 1-4; NaN/Inf; the df64
start-up check and its fallback; slabs beyond the binding limit; caching."""

from __future__ import annotations

import dataclasses
import itertools
import math
import struct
import threading
import warnings

import numpy as np
import pytest
import scipy.ndimage as ndi

from blurapp.core import ndreference
from blurapp.core.borders import Border, BorderMode
from blurapp.core.errors import ImageError, UsageError
from blurapp.gpu import ndpass
from blurapp.gpu.ndpass import Line, NdPasses, correlate1d_chain, correlate_nd

pytestmark = pytest.mark.gpu

# Our modes and scipy's names for them (scipy's filters treat "wrap" as "grid-wrap").
MODES = {
    "clamp": (Border(BorderMode.CLAMP), "nearest"),
    "constant": (Border(BorderMode.CONSTANT, 0.75), "constant"),
    "reflect": (Border(BorderMode.REFLECT), "reflect"),
    "mirror": (Border(BorderMode.MIRROR), "mirror"),
    "wrap": (Border(BorderMode.WRAP), "grid-wrap"),
}
CVAL = 0.75

# Awkward shapes per ndim: a 1-long axis, odd sizes, axes shorter than the kernels below; and
# last axes of a multiple of 4 (f32 reads those lines as vec4 chunks).
SHAPES = {
    1: [(1,), (2,), (4,), (7,), (32,), (33,)],
    2: [(1, 1), (1, 5), (6, 1), (5, 9), (3, 16)],
    3: [(1, 3, 2), (4, 1, 5), (3, 5, 7), (2, 3, 8)],
    4: [(1, 2, 1, 3), (2, 3, 4, 5)],
}
KERNEL_SIZES = (1, 2, 4, 7, 12)  # 12 is longer than every axis above but the 33


def _context_with(gpu, feature: str):
    """The GPU context with a device that has ``feature``: the session's on a software adapter
    (blurapp.gpu.device asks for it there, which is checked), a new device elsewhere; skipped
    where the adapter lacks it."""
    if feature not in gpu.adapter.features:
        pytest.skip(f"the adapter has no {feature}")
    if gpu.is_software:
        assert feature in gpu.device.features  # device.py asked for it
        return gpu
    limits = {k: gpu.device.limits[k] for k in ("max-storage-buffer-binding-size",
                                                  "max-buffer-size")}  # fmt: skip
    device = gpu.adapter.request_device_sync(
        required_features=[*gpu.device.features, feature], required_limits=limits
    )
    return dataclasses.replace(gpu, device=device, features=frozenset(device.features))


def _origins(size: int) -> list[int]:
    """The smallest, zero and the largest origin scipy allows for ``size`` weights."""
    return sorted({-(size // 2), 0, (size - 1) // 2})


def _rel_err(got: np.ndarray, want: np.ndarray, scale: float) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want))) / max(scale, 1e-300)


@pytest.fixture(params=["unrolled", "looped"])
def shaders(request, monkeypatch) -> str:
    """Both shader families: the unrolled ones (large arrays) and the looped ones (arrays of
    fewer than ndpass.SMALL elements), forced either way on the small test arrays."""
    monkeypatch.setattr(ndpass, "SMALL", 0 if request.param == "unrolled" else 1 << 62)
    monkeypatch.setattr(ndpass, "BAKE_IN_BACKGROUND", False)  # looped: never the unrolled
    return request.param


@pytest.fixture(scope="module")
def engine(gpu) -> NdPasses:
    return NdPasses(gpu)


@pytest.fixture(scope="module")
def df64_ok(gpu) -> bool:
    ok, message = ndpass.df64_status()
    assert ok, message  # lavapipe passes; a failing adapter is tested below with a forced one
    return ok


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_line_f32_every_axis_origin_and_shape(engine, shaders, ndim: int, mode: str) -> None:
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(ndim * 10 + len(mode))
    checked = 0
    for shape in SHAPES[ndim]:
        x = rng.normal(size=shape).astype(np.float32)
        for axis, size in itertools.product(range(ndim), KERNEL_SIZES):
            w = rng.normal(size=size)
            # Random, symmetric and antisymmetric weights (f32 folds the last two's pairs).
            w = [w, w + w[::-1], w - w[::-1]][(axis + size) % 3]
            for origin in _origins(size):
                line = Line(axis, w, border, origin, cval=CVAL)
                got = correlate1d_chain(x, [line], precision="f32", passes_engine=engine)
                assert got.dtype == np.float32 and got.shape == x.shape
                want = ndreference.correlate1d(x, line)
                scipy_want = ndi.correlate1d(
                    x.astype(np.float64), w, axis=axis, mode=scipy_mode, cval=CVAL, origin=origin
                )
                np.testing.assert_allclose(want, scipy_want, rtol=0, atol=1e-12)
                scale = float(np.abs(w).sum()) * max(float(np.abs(x).max()), CVAL)
                # f32 accumulation of `size` taps: a few ulps per tap.
                assert _rel_err(got, want, scale) < 4 * size * 2.0**-24, (shape, axis, origin)
                checked += 1
    assert checked == sum(map(len, map(_origins, KERNEL_SIZES))) * len(SHAPES[ndim]) * ndim


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_line_df64_within_1e12_of_scipy(engine, df64_ok, shaders, ndim: int, mode: str) -> None:
    """float64 on the GPU: 1e8 offsets and derivative weights within 1e-12 * sum|w| * max|x|."""
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(100 + ndim * 10 + len(mode))
    cval = 1e8 + 0.25
    worst = 0.0
    for shape in SHAPES[ndim]:
        x = 1e8 + rng.normal(size=shape)
        for axis, size in itertools.product(range(ndim), KERNEL_SIZES):
            # A derivative (antisymmetric, sums to 0: the 1e8 cancels) or random weights.
            w = np.linspace(-1.0, 1.0, size) if size % 2 else rng.normal(size=size)
            for origin in _origins(size):
                line = Line(axis, w, border, origin, cval=cval)
                got = correlate1d_chain(x, [line], precision="df64", passes_engine=engine)
                assert got.dtype == np.float64 and got.shape == x.shape
                want = ndi.correlate1d(x, w, axis=axis, mode=scipy_mode, cval=cval, origin=origin)
                scale = float(np.abs(w).sum()) * max(float(np.abs(x).max()), cval)
                err = _rel_err(got, want, scale)
                assert err < 1e-12, (shape, axis, size, origin, err)
                ref_err = _rel_err(got, ndreference.correlate1d(x, line), scale)
                assert ref_err < 1e-12
                worst = max(worst, err)
    assert worst > 0.0 or ndim == 1  # it did compute in df64, not copy float64 through


@pytest.mark.parametrize("mode", sorted(MODES))
def test_unrolled_df64_line_passes_still_agree(engine, df64_ok, monkeypatch, mode: str) -> None:
    """float64 runs the rolled passes by default (MAX_UNROLLED_TAPS["df64"] is 0); the unrolled
    df64 code is kept behind that limit, and held to the same 1e-12 bound when it is raised."""
    monkeypatch.setattr(ndpass, "MAX_UNROLLED_TAPS", {"f32": 17, "df64": 17})
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(31 + len(mode))
    cval = 1e8 + 0.25
    for shape in [(37, 50), (3, 9, 8)]:
        x = 1e8 + rng.normal(size=shape)
        for axis, size in itertools.product(range(len(shape)), (4, 9, 17)):
            w = np.linspace(-1.0, 1.0, size) if size % 2 else rng.normal(size=size)
            for origin in _origins(size):
                line = Line(axis, w, border, origin, cval=cval)
                got = correlate1d_chain(x, [line], precision="df64", passes_engine=engine)
                want = ndi.correlate1d(x, w, axis=axis, mode=scipy_mode, cval=cval, origin=origin)
                scale = float(np.abs(w).sum()) * max(float(np.abs(x).max()), cval)
                assert _rel_err(got, want, scale) < 1e-12, (shape, axis, size, origin)
    unrolled = [dict(key[1]) for key in engine._pipelines if "precision" in dict(key[1])]
    assert any(k["precision"] == "df64" and not k.get("roll") for k in unrolled)


@pytest.mark.parametrize("precision", ["f32", "df64"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_rolled_line_passes(engine, df64_ok, monkeypatch, precision: str, mode: str) -> None:
    """The rolled passes (nd_line.wgsl's `roll`: the taps a loop, blocks of outputs from a
    rolling window; df64 always, f32 beyond its unrolled limit, forced here for every length),
    also with kernels of 65 and 129 taps and blocks that end past the axis, against scipy."""
    monkeypatch.setattr(ndpass, "MAX_UNROLLED_TAPS", {"f32": 0, "df64": 0})
    monkeypatch.setattr(ndpass, "MAX_GROUP_TAPS", 0)  # column groups rolled too
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(7 + len(mode))
    df = precision == "df64"
    for shape in [(37, 50), (3, 9, 8), (130,), (6, 33)]:
        x = 1e8 + rng.normal(size=shape) if df else rng.normal(size=shape).astype(np.float32)
        for axis, size in itertools.product(range(len(shape)), (1, 4, 7, 65, 129)):
            w = rng.normal(size=size)
            for origin in _origins(size):
                line = Line(axis, w, border, origin, cval=CVAL)
                got = correlate1d_chain(x, [line], precision=precision, passes_engine=engine)
                want = ndi.correlate1d(
                    x.astype(np.float64), w, axis=axis, mode=scipy_mode, cval=CVAL, origin=origin
                )
                scale = float(np.abs(w).sum()) * max(float(np.abs(x).max()), CVAL)
                bound = 1e-12 if df else 4 * size * 2.0**-24
                assert _rel_err(got, want, scale) < bound, (shape, axis, size, origin)
    assert any(dict(key[1]).get("roll") for key in engine._pipelines)


@pytest.mark.parametrize("family", ["rolled", "unrolled"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_passes_in_column_groups(engine, monkeypatch, family: str, mode: str) -> None:
    """f32 passes across a non-contiguous axis whose vec4 columns come in multiples of
    ndpass.ROLL_GROUPS (rolled) or UNROLLED_GROUPS take that many an invocation, 2 where the
    columns are only even (nd_line.wgsl's `groups`), with 32-byte accesses on a device with
    ndpass.WIDE_FEATURE (`wide`, ndpass.WIDE_IO), in blocks of 8 or (from
    ndpass.LONG_GROUP_TAPS taps) 16: the same values bit for bit as one column an invocation,
    every origin, plain and folded weights, NaN and Inf, blocks past the axis."""
    rolled = family == "rolled"
    if rolled:
        monkeypatch.setattr(ndpass, "MAX_UNROLLED_TAPS", {"f32": 0, "df64": 0})
        monkeypatch.setattr(ndpass, "MAX_GROUP_TAPS", 0)
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(31 + len(mode) + rolled)
    name = "ROLL_GROUPS" if rolled else "UNROLLED_GROUPS"
    groups = getattr(ndpass, name)
    has_wide = ndpass.WIDE_FEATURE in engine.context.device.features
    cases = [((37, 16), 0), ((3, 20, 32), 1), ((5, 2, 64), 0), ((70, 48), 0), ((29, 8), 0),
             ((4, 11, 24), 1)]  # fmt: skip
    for k, (shape, axis) in enumerate(cases):
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = -np.inf
        for size in (1, 4, 19, 65) if rolled else (1, 4, 9, 17):
            w = rng.normal(size=size)
            w = w + w[::-1] if size % 4 == 1 else w  # the folded sums too
            for j, origin in enumerate(_origins(size)):
                line = Line(axis, w, border, origin, cval=CVAL)
                monkeypatch.setattr(ndpass, name, groups)
                monkeypatch.setattr(ndpass, "WIDE_IO", (k + j) % 2 == 0)
                got = correlate1d_chain(x, [line], precision="f32", passes_engine=engine)
                monkeypatch.setattr(ndpass, name, 1)
                one = correlate1d_chain(x, [line], precision="f32", passes_engine=engine)
                np.testing.assert_array_equal(got, one)
                want = ndi.correlate1d(
                    x.astype(np.float64), w, axis=axis, mode=scipy_mode, cval=CVAL, origin=origin
                )
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    templates = [dict(key[1]) for key in engine._pipelines if key[0] == "nd_line"]
    for g in (groups, 2):
        ours = [t for t in templates if t.get("groups") == g and t.get("roll", False) == rolled]
        assert ours
        if has_wide:
            assert {t.get("wide", False) for t in ours} == {True, False}
    if not rolled:  # short kernels in blocks of 8, ndpass.LONG_GROUP_TAPS and longer of 16
        blocks = {t["block"] for t in templates if t.get("groups", 1) > 1 and not t.get("roll")}
        assert {ndpass.UNROLLED_GROUP_BLOCK, ndpass.LONG_GROUP_BLOCK} <= blocks


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_chain_reads_back_into_out(engine, df64_ok, precision: str) -> None:
    """``out=`` receives the result (the input itself too); a wrong one is refused."""
    dtype = np.float32 if precision == "f32" else np.float64
    x = np.random.default_rng(3).normal(size=(40, 24)).astype(dtype)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.MIRROR))]  # fmt: skip
    correlate1d_chain(x, lines, precision=precision, passes_engine=engine)
    engine.wait_baked()  # every call below on the same pipelines (the same arithmetic)
    want = correlate1d_chain(x, lines, precision=precision, passes_engine=engine)
    out = np.empty_like(x)
    got = correlate1d_chain(x, lines, precision=precision, passes_engine=engine, out=out)
    assert got is out
    np.testing.assert_array_equal(out, want)
    same = x.copy()
    again = correlate1d_chain(same, lines, precision=precision, passes_engine=engine, out=same)
    assert again is same
    np.testing.assert_array_equal(same, want)
    with pytest.raises(ValueError, match="C-contiguous"):
        correlate1d_chain(x, lines, precision=precision, passes_engine=engine, out=out.T)


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_chain_of_three_passes_runs_without_readback(
    engine, df64_ok, shaders, precision: str
) -> None:
    """A 3-D separable Gaussian (one pass per axis, mixed borders) equals scipy's passes."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(9, 10, 11)) + (1e6 if precision == "df64" else 0.0)
    if precision == "f32":
        x = x.astype(np.float32)
    g = np.exp(-0.5 * (np.arange(-4, 5) / 1.5) ** 2)
    g /= g.sum()
    lines = [
        Line(0, g, Border(BorderMode.REFLECT)),
        Line(1, g, Border(BorderMode.MIRROR), origin=1),
        Line(2, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.CONSTANT), cval=-3.0),
    ]
    want = x.astype(np.float64)
    for ln, m in zip(lines, ["reflect", "mirror", "constant"], strict=True):
        want = ndi.correlate1d(want, ln.weights, ln.axis, mode=m, cval=-3.0, origin=ln.origin)
    got = correlate1d_chain(x, lines, precision=precision, passes_engine=engine)
    scale = 2.0 * float(np.abs(x).max())
    bound = 1e-12 if precision == "df64" else 3e-6
    assert _rel_err(got, want, scale) < bound
    np.testing.assert_allclose(
        ndreference.correlate1d_chain(x, lines), want, rtol=0, atol=1e-9 * scale
    )


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_correlate_nd_f32_and_df64(engine, df64_ok, shaders, ndim: int, mode: str) -> None:
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(200 + ndim * 10 + len(mode))
    wshapes = {1: [(1,), (4,), (9,)], 2: [(3, 2), (1, 7), (8, 8)], 3: [(3, 1, 4), (2, 3, 6)],
               4: [(2, 3, 1, 3), (3, 2, 3, 4)]}[ndim]  # fmt: skip
    for shape, wshape in itertools.product(SHAPES[ndim], wshapes):
        w = rng.normal(size=wshape)
        w[rng.random(wshape) < 0.3] = 0.0  # zero taps are skipped
        origins = [int(rng.integers(-(s // 2), (s - 1) // 2 + 1)) for s in wshape]
        x = 1e8 + rng.normal(size=shape)
        want = ndi.correlate(x, w, mode=scipy_mode, cval=CVAL, origin=origins)
        np.testing.assert_allclose(
            ndreference.correlate_nd(x, w, border, origins, cval=CVAL), want, rtol=0,
            atol=1e-12 * 1e8 * max(float(np.abs(w).sum()), 1e-300),
        )  # fmt: skip
        scale = max(float(np.abs(w).sum()), 1e-300) * 1e8
        got = correlate_nd(x, w, border, origins, precision="df64", cval=CVAL, passes_engine=engine)
        assert got.dtype == np.float64
        assert _rel_err(got, want, scale) < 1e-12, (shape, wshape, origins)
        xs = rng.normal(size=shape).astype(np.float32)
        want32 = ndi.correlate(xs.astype(np.float64), w, mode=scipy_mode, cval=CVAL, origin=origins)
        got32 = correlate_nd(
            xs, w, border, origins, precision="f32", cval=CVAL, passes_engine=engine
        )
        assert got32.dtype == np.float32
        scale32 = max(float(np.abs(w).sum()), 1e-300) * max(float(np.abs(xs).max()), CVAL)
        assert _rel_err(got32, want32, scale32) < 4 * w.size * 2.0**-24, (shape, wshape)


def test_correlate_nd_mixed_borders_per_axis(engine, df64_ok) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 5, 4))
    w = rng.normal(size=(3, 4, 5))
    borders = [Border(BorderMode.WRAP), Border(BorderMode.CONSTANT, 2.0), Border(BorderMode.MIRROR)]
    want = ndreference.correlate_nd(x, w, borders, [1, -1, 0])
    got = correlate_nd(x, w, borders, [1, -1, 0], precision="df64", passes_engine=engine)
    assert _rel_err(got, want, float(np.abs(w).sum()) * 2.0) < 1e-12
    # Each axis's border alone equals scipy's with that mode (the others' windows inside).
    interior = (slice(1, -1), slice(None), slice(None))
    for a, (b, m) in enumerate([(borders[0], "grid-wrap"), (borders[2], "mirror")]):
        axis = 0 if a == 0 else 2
        w1 = np.zeros((3, 1, 1))
        w1[:, 0, 0] = [1.0, 2.0, -1.0]
        w1 = np.moveaxis(w1, 0, axis)
        got1 = correlate_nd(x, w1, b, 0, precision="df64", passes_engine=engine)
        np.testing.assert_allclose(got1, ndi.correlate(x, w1, mode=m), rtol=0, atol=1e-13)
    assert np.all(np.isfinite(got[interior]))


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_nan_and_inf_propagate_as_scipy(engine, df64_ok, shaders, precision: str) -> None:
    dtype = np.float32 if precision == "f32" else np.float64
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    x[1, 2] = np.nan
    x[2, 4] = np.inf
    x[3, 4] = -np.inf
    x[0, 0] = np.inf
    x = x.astype(dtype)
    xf = x.astype(np.float64)
    for w in ([0.0, 1.0, 0.0], [1.0, 0.0, 2.0], [-1.0, 0.0, 1.0], [0.5, 0.5]):
        w = np.array(w)
        for axis in (0, 1):
            for border, m in [MODES["reflect"], MODES["clamp"]]:
                line = Line(axis, w, border)
                got = correlate1d_chain(x, [line], precision=precision, passes_engine=engine)
                want = ndi.correlate1d(xf, w, axis=axis, mode=m)
                _same_nonfinite(got, want)
    # correlate: a NaN or Inf under a zero weight does not spread (scipy's footprint).
    w2 = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1e-17, 0.0]])
    got = correlate_nd(x, w2, Border(BorderMode.MIRROR), precision=precision, passes_engine=engine)
    _same_nonfinite(got, ndi.correlate(xf, w2, mode="mirror"))
    # NaN and infinite constants outside the array.
    for cval in (np.nan, np.inf, -np.inf):
        line = Line(1, np.array([1.0, 2.0, 3.0]), Border(BorderMode.CONSTANT), cval=cval)
        got = correlate1d_chain(x, [line], precision=precision, passes_engine=engine)
        _same_nonfinite(got, ndi.correlate1d(xf, line.weights, 1, mode="constant", cval=cval))
        got = correlate_nd(
            x, np.ones((2, 3)), Border(BorderMode.CONSTANT), precision=precision, cval=cval,
            passes_engine=engine,
        )  # fmt: skip
        _same_nonfinite(got, ndi.correlate(xf, np.ones((2, 3)), mode="constant", cval=cval))


def _same_nonfinite(got: np.ndarray, want: np.ndarray) -> None:
    """NaN where scipy has NaN, the same infinities, the finite values close."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-4)


def test_df64_beyond_float32_range(engine, df64_ok) -> None:
    """Powers-of-two scaling: 1e300 and 1e-300 data keep float64's relative accuracy."""
    rng = np.random.default_rng(9)
    for magnitude in (1e300, 1e-300, 1e-30):
        x = magnitude * (1.0 + rng.random((5, 8)))
        w = rng.normal(size=5)
        line = Line(1, w, Border(BorderMode.CONSTANT), cval=magnitude)
        got = correlate1d_chain(x, [line], precision="df64", passes_engine=engine)
        want = ndi.correlate1d(x, w, 1, mode="constant", cval=magnitude)
        assert _rel_err(got, want, float(np.abs(w).sum()) * float(np.abs(x).max())) < 1e-12


def test_df64_status_checks_the_adapter(gpu) -> None:
    ok, message = ndpass.df64_status()
    assert ok
    assert gpu.info["summary"] in message and "exact" in message


def test_forced_df64_failure_falls_back_once_with_a_warning(gpu, monkeypatch) -> None:
    """Where the check fails, float64 runs the float64 reference and says so once."""
    monkeypatch.setattr(ndpass, "_run_check", lambda passes, two_prod: ("forced failure", False))
    monkeypatch.setattr(ndpass, "_warned", False)
    try:
        ok, message = ndpass.df64_status(refresh=True)
        assert not ok and "forced failure" in message and gpu.info["summary"] in message
        x = 1e8 + np.random.default_rng(1).normal(size=(4, 9))
        line = Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.REFLECT))
        with pytest.warns(RuntimeWarning, match="float64 numpy reference") as caught:
            got = correlate1d_chain(x, [line], precision="df64")
        assert len(caught) == 1 and gpu.info["summary"] in str(caught[0].message)
        np.testing.assert_array_equal(got, ndreference.correlate1d(x, line))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once: the second call is quiet
            got = correlate_nd(x, np.ones((2, 2)), Border(BorderMode.WRAP), precision="df64")
        np.testing.assert_array_equal(
            got, ndreference.correlate_nd(x, np.ones((2, 2)), Border(BorderMode.WRAP))
        )
        # f32 is not affected.
        out32 = correlate1d_chain(x.astype(np.float32), [line], precision="f32")
        assert out32.dtype == np.float32
    finally:
        monkeypatch.undo()
        assert ndpass.df64_status(refresh=True)[0]


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_slabs_beyond_the_binding_limit(gpu, df64_ok, shaders, precision: str) -> None:
    """A forced small binding: chains pass by pass over slabs, long lines with halos,
    correlate_nd along axis 0 with its halo; all equal to the unslabbed result."""
    small = NdPasses(gpu, max_binding=4096)  # 1024 f32 or 512 df64 elements
    whole = NdPasses(gpu)
    rng = np.random.default_rng(11)
    dtype = np.float32 if precision == "f32" else np.float64
    bound = 1e-12 if precision == "df64" else 2e-5
    x = (rng.normal(size=(6, 40, 30)) + 100.0).astype(dtype)  # 7200 elements
    lines = [
        Line(0, rng.normal(size=5), Border(BorderMode.REFLECT), 1),
        Line(1, rng.normal(size=9), Border(BorderMode.CONSTANT), cval=np.nan),
        Line(2, rng.normal(size=4), Border(BorderMode.WRAP), -1),
    ]
    want = ndreference.correlate1d_chain(x, lines)
    got = correlate1d_chain(x, lines, precision=precision, passes_engine=small)
    got_whole = correlate1d_chain(x, lines, precision=precision, passes_engine=whole)
    scale = float(np.nanmax(np.abs(want)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert _rel_err(np.nan_to_num(got), np.nan_to_num(want), scale) < bound
    assert _rel_err(np.nan_to_num(got_whole), np.nan_to_num(want), scale) < bound
    # An axis of (6, 2000): lines longer than a slab, cut with halos (kernel longer than 6).
    y = (rng.normal(size=(3, 2000))).astype(dtype)
    for border in (Border(BorderMode.MIRROR), Border(BorderMode.CONSTANT, 0.5)):
        line = Line(1, rng.normal(size=31), border, 3)
        got = correlate1d_chain(y, [line], precision=precision, passes_engine=small)
        want = ndreference.correlate1d(y, line)
        assert _rel_err(got, want, float(np.abs(want).max())) < bound
    line0 = Line(0, rng.normal(size=7), Border(BorderMode.REFLECT), -2)  # pass along a short axis
    got = correlate1d_chain(y, [line0], precision=precision, passes_engine=small)
    assert _rel_err(got, ndreference.correlate1d(y, line0), 10.0) < bound
    # correlate_nd in slabs along axis 0.
    z = (rng.normal(size=(30, 7, 5)) + 100.0).astype(dtype)  # 35 elements a row
    w = rng.normal(size=(5, 3, 4))
    for border in (Border(BorderMode.WRAP), Border(BorderMode.CONSTANT, -1.0)):
        want = ndreference.correlate_nd(z, w, border, [2, 0, -1])
        got = correlate_nd(z, w, border, [2, 0, -1], precision=precision, passes_engine=small)
        assert _rel_err(got, want, float(np.abs(want).max())) < bound * 10


def test_slab_that_cannot_fit_is_refused_in_one_line(gpu) -> None:
    tiny = NdPasses(gpu, max_binding=256)  # 64 f32 elements
    x = np.ones((3, 100), np.float32)
    with pytest.raises(ImageError, match="cannot run in slabs") as err:
        correlate_nd(x, np.ones((3, 3)), Border(BorderMode.REFLECT), precision="f32",
                     passes_engine=tiny)  # fmt: skip
    assert "\n" not in str(err.value)
    with pytest.raises(ImageError, match="kernel is longer than a slab"):
        correlate1d_chain(
            np.ones(1000, np.float32), [Line(0, np.ones(80), Border(BorderMode.REFLECT))],
            precision="f32", passes_engine=tiny,
        )  # fmt: skip


def test_repeated_calls_build_nothing_new(gpu, monkeypatch) -> None:
    monkeypatch.setattr(ndpass, "SMALL", 0)  # the unrolled shaders, compiled in the call
    passes = NdPasses(gpu)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(64, 64)).astype(np.float32)
    lines = [Line(0, rng.normal(size=9), Border(BorderMode.REFLECT)),
             Line(1, rng.normal(size=9), Border(BorderMode.REFLECT))]  # fmt: skip
    first = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)

    def made() -> dict[str, int]:  # what was built, not how often a pass ran in place
        return {k: v for k, v in passes.stats.items() if k != "in_place"}

    built = made()
    # New weights of the same length (and a new origin): the same pipelines, buffers and
    # bind groups (the weights travel in the uniform buffer, not in the code).
    other = [Line(0, rng.normal(size=9), Border(BorderMode.REFLECT), 1), lines[1]]
    second = correlate1d_chain(x + 1, other, precision="f32", passes_engine=passes)
    assert made() == built
    np.testing.assert_allclose(
        second, ndreference.correlate1d_chain(x + 1, other), rtol=0, atol=1e-4
    )
    assert not np.array_equal(first, second)


def test_buffer_cache_is_bounded(gpu, monkeypatch) -> None:
    passes = NdPasses(gpu)
    line = Line(0, np.ones(3), Border(BorderMode.CLAMP))
    for n in range(1, ndpass.KEPT_ARRAYS + 4):
        correlate1d_chain(np.ones(n * 8, np.float32), [line], precision="f32", passes_engine=passes)
    assert len(passes._arrays) == ndpass.KEPT_ARRAYS
    assert passes.stats["arrays_evicted"] == 3
    # A size beyond the byte budget drops the others first.
    monkeypatch.setattr(ndpass, "KEPT_BYTES", 2 * 4096 * 4)  # two or three buffers a size
    got = correlate1d_chain(
        np.ones(4096, np.float32), [line], precision="f32", passes_engine=passes
    )
    np.testing.assert_allclose(got, 3.0)
    assert len(passes._arrays) == 1 and passes.stats["arrays_evicted"] == 3 + ndpass.KEPT_ARRAYS


def test_bad_arguments(gpu) -> None:
    x = np.ones((3, 4), np.float32)
    line = Line(0, np.ones(3), Border(BorderMode.CLAMP))
    with pytest.raises(UsageError, match="unknown precision 'f16'"):
        correlate1d_chain(x, [line], precision="f16")
    with pytest.raises(np.exceptions.AxisError):
        correlate1d_chain(x, [Line(2, np.ones(3), Border(BorderMode.CLAMP))], precision="f32")
    with pytest.raises(ValueError, match="invalid origin 2"):
        Line(0, np.ones(3), Border(BorderMode.CLAMP), origin=2)
    with pytest.raises(ValueError, match="must be 1-D"):
        Line(0, np.ones((3, 3)), Border(BorderMode.CLAMP))
    with pytest.raises(ValueError, match="invalid origin"):
        correlate_nd(x, np.ones((3, 3)), Border(BorderMode.CLAMP), [0, -2], precision="f32")
    with pytest.raises(ValueError, match="weights have 1 dimensions"):
        correlate_nd(x, np.ones(3), Border(BorderMode.CLAMP), precision="f32")
    with pytest.raises(ImageError, match="real numbers"):
        correlate1d_chain(x.astype(np.complex64), [line], precision="f32")


def test_empty_and_zero_d_arrays(gpu, df64_ok) -> None:
    line = Line(0, np.array([1.0, 2.0, 3.0]), Border(BorderMode.REFLECT))
    empty = np.zeros((0, 4), np.float32)
    assert correlate1d_chain(empty, [line], precision="f32").shape == (0, 4)
    scalar = np.array(2.5)
    got = correlate1d_chain(scalar, [line], precision="df64")
    assert got.shape == () and math.isclose(float(got), 15.0)


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_correlate_nd_rows_longer_than_one_piece(engine, df64_ok, shaders, precision: str) -> None:
    """Kernel rows beyond MAX_TAPS_ROW run as pieces whose sum is the correlation."""
    rng = np.random.default_rng(21)
    dtype = np.float32 if precision == "f32" else np.float64
    bound = 1e-12 if precision == "df64" else 1e-5
    cases = [((5, 80), (2, 70), "reflect"), ((40,), (150,), "mirror"),
             ((3, 130), (3, 67), "constant")]  # fmt: skip
    for shape, wshape, mode in cases:
        assert wshape[-1] > ndpass.MAX_TAPS_ROW[precision]
        border, scipy_mode = MODES[mode]
        x = rng.normal(size=shape).astype(dtype)
        w = rng.normal(size=wshape)
        origins = [(s - 1) // 2 for s in wshape]
        want = ndi.correlate(x.astype(np.float64), w, mode=scipy_mode, cval=CVAL, origin=origins)
        got = correlate_nd(x, w, border, origins, precision=precision, cval=CVAL,
                           passes_engine=engine)  # fmt: skip
        scale = float(np.abs(w).sum()) * max(float(np.abs(x).max()), CVAL)
        assert _rel_err(got, want, scale) < bound, (shape, wshape)


def test_binding_limit_not_a_multiple_of_16(gpu) -> None:
    """Buffers are whole vec4s: an array of exactly the limit's bytes, the limit not a multiple
    of 16, runs in slabs instead of binding more than the device allows."""
    passes = NdPasses(gpu, max_binding=4100)
    x = np.random.default_rng(4).normal(size=(5, 205)).astype(np.float32)  # 4100 bytes
    line = Line(1, np.array([1.0, -2.0, 0.5]), Border(BorderMode.MIRROR))
    got = correlate1d_chain(x, [line], precision="f32", passes_engine=passes)
    np.testing.assert_allclose(got, ndreference.correlate1d(x, line), rtol=0, atol=1e-5)
    got = correlate_nd(x, np.ones((3, 3)), Border(BorderMode.WRAP), precision="f32",
                       passes_engine=passes)  # fmt: skip
    want = ndreference.correlate_nd(x, np.ones((3, 3)), Border(BorderMode.WRAP))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def _gaussian(sigma: float, order: int) -> np.ndarray:
    """scipy's gaussian_filter1d weights of that order, as correlation weights."""
    from scipy.ndimage._filters import _gaussian_kernel1d

    return _gaussian_kernel1d(sigma, order, int(4.0 * sigma + 0.5))[::-1].copy()


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_df64_gaussian_derivative_chains_within_1e12(engine, df64_ok, shaders, order: int) -> None:
    """scipy's gaussian_filter with a derivative order along axis 0 (sigma 4: 33 taps), 3
    passes chained, on 1e8-offset data: within 1e-12 * prod(sum|w|) * max|x| of scipy."""
    rng = np.random.default_rng(30 + order)
    x = 1e8 + 10.0 * rng.normal(size=(20, 24, 28))
    for border, mode in (MODES["reflect"], MODES["mirror"], MODES["wrap"]):
        lines = [Line(a, _gaussian(4.0, order if a == 0 else 0), border) for a in range(3)]
        want = x
        for ln in lines:
            want = ndi.correlate1d(want, ln.weights, ln.axis, mode=mode)
        got = correlate1d_chain(x, lines, precision="df64", passes_engine=engine)
        scale = math.prod(float(np.abs(ln.weights).sum()) for ln in lines) * float(x.max())
        assert _rel_err(got, want, scale) < 1e-12, mode


def test_small_arrays_run_looped_while_the_unrolled_pipeline_compiles(gpu) -> None:
    """A small array with a new kernel length runs the looped shader at once and compiles
    the unrolled one in the background; the next call runs that; both give the same values."""
    passes = NdPasses(gpu)
    rng = np.random.default_rng(8)
    x = rng.normal(size=(48, 64)).astype(np.float32)
    assert x.size < ndpass.SMALL and ndpass.BAKE_IN_BACKGROUND
    lines = [Line(1, rng.normal(size=11), Border(BorderMode.REFLECT))]
    want = ndreference.correlate1d_chain(x, lines)
    first = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    shaders_used = {key[0] for key in passes._pipelines}
    assert "nd_line_loop" in shaders_used  # served while the unrolled one compiled
    passes.wait_baked()
    assert "nd_line" in {key[0] for key in passes._pipelines}
    made = passes.stats["pipelines"]
    second = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    assert passes.stats["pipelines"] == made  # the baked one, nothing new
    np.testing.assert_allclose(first, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(second, want, rtol=0, atol=1e-5)
    w = rng.normal(size=(3, 5))
    got = correlate_nd(x, w, Border(BorderMode.MIRROR), precision="f32", passes_engine=passes)
    passes.wait_baked()
    assert {"nd_taps_loop", "nd_taps"} <= {key[0] for key in passes._pipelines}
    again = correlate_nd(x, w, Border(BorderMode.MIRROR), precision="f32", passes_engine=passes)
    want_nd = ndreference.correlate_nd(x, w, Border(BorderMode.MIRROR))
    np.testing.assert_allclose(got, want_nd, rtol=0, atol=1e-5)
    np.testing.assert_allclose(again, want_nd, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_folded_weights_first_calls_equal_the_baked_pipelines_bit_for_bit(gpu, mode: str) -> None:
    """Symmetric and antisymmetric weights, which the unrolled and fused passes fold (one
    multiply a pair), give a small array's first call (the looped fallbacks, folded alike, in
    the fused pair's order) the values of the later calls on the baked pipelines, bit for bit:
    scipy's test_gauss_memory_overlap calls gaussian_filter twice and wants them equal."""
    passes = NdPasses(gpu)
    rng = np.random.default_rng(31)
    border = MODES[mode][0]
    sym = _gaussian(1.0, 0).astype(np.float32).astype(np.float64)  # 9 taps, symmetric
    box = np.full(6, np.float64(np.float32(1 / 6)))
    chains = [
        [Line(0, sym, border), Line(1, sym, border)],  # a fused pair (axis -1 first but constant)
        [Line(1, box, border), Line(0, box, border)],  # an even box, along axis -1 first
        [Line(0, np.array([1.0, 2.0, 1.0]), border), Line(1, np.array([-1.0, 0.0, 1.0]), border)],
        [Line(1, _gaussian(2.0, 0).astype(np.float32).astype(np.float64), border)],  # chunked
    ]
    for shape in [(40, 64), (37, 20), (3, 24, 16)]:
        x = (1e4 * rng.random(shape)).astype(np.float32)
        for lines in chains:
            lines = [Line(ln.axis - 2 + len(shape), ln.weights, ln.border) for ln in lines]
            passes._pipelines.clear()
            first = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
            assert "nd_line_loop" in {key[0] for key in passes._pipelines}
            for _ in range(4):  # one pipeline baked at a time: a call each
                passes.wait_baked()
                later = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
            assert not passes._baking
            np.testing.assert_array_equal(first, later)
            third = later
            want = ndreference.correlate1d_chain(x.astype(np.float64), lines)
            np.testing.assert_allclose(third, want, rtol=2e-6, atol=1e-2)


# Shapes whose last axis holds a multiple of 4 (the fused pair's condition): one-line planes,
# axes shorter than the kernels, several planes, a strip narrower than an invocation's.
FUSED_SHAPES = [(1, 4), (5, 8), (3, 16), (37, 12), (70, 36), (2, 9, 20), (2, 1, 3, 8)]


@pytest.mark.parametrize("mode_a", sorted(MODES))
def test_fused_last_two_axes_equal_their_two_passes(engine, monkeypatch, mode_a: str) -> None:
    """Two f32 passes along axes -2 and -1 run as one dispatch (nd_plane.wgsl) with the same
    sums as the two line passes (to rounding where the pair runs along axis -1 first): every
    border pair, origin, folded or plain weights, NaN and Inf, against the unfused passes and
    the float64 reference."""
    monkeypatch.setattr(ndpass, "SMALL", 0)  # the unrolled and fused shaders
    fused_taps = ndpass.MAX_FUSED_TAPS
    rng = np.random.default_rng(len(mode_a))
    border_a = MODES[mode_a][0]
    cases = 0
    for k, (shape, mode_b) in enumerate(itertools.product(FUSED_SHAPES, sorted(MODES))):
        ta, tb = [(3, 3), (5, 1), (1, 9), (9, 5), (4, 6), (13, 2), (2, 13)][k % 7]
        wa, wb = rng.normal(size=ta), rng.normal(size=tb)
        wa = [wa, wa + wa[::-1], wa - wa[::-1]][k % 3]
        wb = [wb, wb - wb[::-1], wb + wb[::-1]][k % 3]
        oa = _origins(ta)[k % len(_origins(ta))]
        ob = _origins(tb)[(k // 2) % len(_origins(tb))]
        x = rng.normal(size=shape).astype(np.float32)
        if k % 4 == 1:
            x.flat[rng.integers(x.size)] = np.nan
        if k % 5 == 2:
            x.flat[rng.integers(x.size)] = -np.inf
        nd = len(shape)
        lines = [Line(nd - 2, wa, border_a, oa, cval=CVAL),
                 Line(nd - 1, wb, MODES[mode_b][0], ob, cval=-2.5)]  # fmt: skip
        if k % 3 == 1:  # axis -1's pass first (nd_plane.wgsl's `rev`)
            lines.reverse()
        monkeypatch.setattr(ndpass, "PLANE_COLS", (16, 8)[k % 2])  # both widths of a strip
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        monkeypatch.setattr(ndpass, "MAX_FUSED_TAPS", 0)
        unfused = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        monkeypatch.setattr(ndpass, "MAX_FUSED_TAPS", fused_taps)
        want = ndreference.correlate1d_chain(x, lines)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(unfused))
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        # (1 + sum|w|) each: a pass of zero weights (an antisymmetric 1-tap one) still lets
        # the next pass's constant border through.
        scale = float((1 + np.abs(wa).sum()) * (1 + np.abs(wb).sum())) * max(
            float(np.abs(x[np.isfinite(x)]).max(initial=0.0)), CVAL, 2.5
        )
        if finite.any():
            # The same sums as the two passes (to the last bits: a compiler may contract them).
            assert _rel_err(got[finite], unfused[finite].astype(np.float64), scale) < 2.0**-22
            assert _rel_err(got[finite], want[finite], scale) < 4 * (ta + tb) * 2.0**-24
        cases += 1
    templates = [dict(key[1]) for key in engine._pipelines if key[0] == "nd_plane"]
    assert {t["rev"] for t in templates} == {True, False} and cases == 35
    # Planes with strips inside the line ran them as a dispatch of their own (PLANE_SPLIT),
    # the border strips in smaller workgroups (PLANE_BORDER_WG).
    assert {t.get("edge", "all") for t in templates} == {"all", "interior", "border"}
    assert {t["wg"] for t in templates if t.get("edge") == "border"} == {ndpass.PLANE_BORDER_WG}
    assert ndpass.PLANE_BORDER_WG < ndpass._WG


def _plane_orders(engine: NdPasses, shape: tuple[int, ...], lines: list[Line]) -> set[bool]:
    """The `rev` of each fused-pair dispatch a chain runs as (an empty set: no fused pair)."""
    features = engine.context.device.features
    dispatches, _ = ndpass._chain_dispatches(
        shape, lines, "f32", "fma", 0, (0,) * len(lines),
        ndpass.WIDE_IO and ndpass.WIDE_FEATURE in features,
        ndpass.SHUFFLE and ndpass.SHUFFLE_FEATURE in features,
    )  # fmt: skip
    return {dict(d.template)["rev"] for d in dispatches if d.shader == "nd_plane"}


@pytest.mark.parametrize("mode_b", sorted(MODES))
def test_pairs_without_a_constant_border_run_along_the_last_axis_first(
    engine, monkeypatch, mode_b: str
) -> None:
    """A pair along axis -2 then axis -1 with no constant border runs axis -1's pass first
    (nd_plane.wgsl's `rev`, ndpass.PLANE_ROW_FIRST): the same values to rounding as the two
    passes in their order, fused or not, and the reference; NaN where the passes give NaN.
    Such pairs fuse up to MAX_FUSED_TAPS_ROW_FIRST (17) taps, the others up to
    MAX_FUSED_TAPS; a constant border keeps the chain's order."""
    monkeypatch.setattr(ndpass, "SMALL", 0)  # the fused shaders, not the small fallback
    rng = np.random.default_rng(40 + len(mode_b))
    shapes = [*FUSED_SHAPES, (61, 96)]
    for k, (shape, mode_a) in enumerate(itertools.product(shapes, sorted(MODES))):
        ta, tb = [(17, 17), (17, 3), (5, 17), (9, 9), (13, 16), (2, 5)][k % 6]
        wa, wb = rng.normal(size=ta), rng.normal(size=tb)
        wa = [wa, wa + wa[::-1], wa - wa[::-1]][k % 3]
        wb = [wb + wb[::-1], wb, wb - wb[::-1]][k % 3]
        x = rng.normal(size=shape).astype(np.float32)
        if k % 4 == 1:
            x.flat[rng.integers(x.size)] = np.nan
        nd = len(shape)
        oa, ob = _origins(ta)[k % len(_origins(ta))], _origins(tb)[k % len(_origins(tb))]
        lines = [Line(nd - 2, wa, MODES[mode_a][0], oa, cval=CVAL),
                 Line(nd - 1, wb, MODES[mode_b][0], ob, cval=-2.5)]  # fmt: skip
        constant = "constant" in (mode_a, mode_b)
        most = ndpass.MAX_FUSED_TAPS if constant else ndpass.MAX_FUSED_TAPS_ROW_FIRST
        fuses = max(ta, tb) <= most
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        assert _plane_orders(engine, x.shape, lines) == ({not constant} if fuses else set())
        monkeypatch.setattr(ndpass, "PLANE_ROW_FIRST", False)
        in_order = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        fused_in_order = max(ta, tb) <= ndpass.MAX_FUSED_TAPS
        assert _plane_orders(engine, x.shape, lines) == ({False} if fused_in_order else set())
        monkeypatch.setattr(ndpass, "PLANE_ROW_FIRST", True)
        want = ndreference.correlate1d_chain(x, lines)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(in_order))
        finite = np.isfinite(want)
        sum_w = float(np.abs(wa).sum() * np.abs(wb).sum())
        scale = sum_w * max(float(np.abs(x[np.isfinite(x)]).max(initial=0.0)), CVAL) + 2.5 * float(
            np.abs(wb).sum()
        )
        if finite.any():
            assert _rel_err(got[finite], want[finite], scale) < 4 * (ta + tb) * 2.0**-24
            in_order_f = in_order[finite].astype(np.float64)
            assert _rel_err(got[finite], in_order_f, scale) < 8 * (ta + tb) * 2.0**-24


def test_fused_pair_in_a_longer_chain_and_small_arrays(gpu) -> None:
    """A 3-D chain fuses its last two passes (axes 1, 2) after the first; a small array runs
    the two line passes while the fused pipeline compiles, then the fused one, equal."""
    passes = NdPasses(gpu)
    rng = np.random.default_rng(9)
    x = rng.normal(size=(6, 40, 64)).astype(np.float32)
    g = np.exp(-0.5 * (np.arange(-4, 5) / 1.5) ** 2)
    g /= g.sum()
    lines = [
        Line(0, g, Border(BorderMode.REFLECT)),
        Line(1, g, Border(BorderMode.MIRROR), 1),
        Line(2, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.CONSTANT), cval=-3.0),
    ]
    want = ndreference.correlate1d_chain(x, lines)
    scale = 2.0 * float(np.abs(x).max())
    first = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    assert "nd_plane" not in {key[0] for key in passes._pipelines}  # small: the lines served
    for _ in range(3):  # one pipeline compiles in the background at a time
        passes.wait_baked()
        if "nd_plane" in {key[0] for key in passes._pipelines}:
            break
        correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    assert "nd_plane" in {key[0] for key in passes._pipelines}
    second = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    for got in (first, second):
        assert _rel_err(got, want, scale) < 3e-6
    assert _rel_err(second, first.astype(np.float64), scale) < 2.0**-22


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_mapped_and_staged_transfers_agree(gpu, df64_ok, monkeypatch, precision: str) -> None:
    """Where the device maps storage buffers (a software or integrated adapter), the upload and
    the read-back use the ping-pong buffers' own mappings; the staged path (MAPPED_IO off, or a
    device without the feature) gives the same values."""
    dtype = np.float32 if precision == "f32" else np.float64
    x = np.random.default_rng(12).normal(size=(33, 20)).astype(dtype)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.WRAP))]  # fmt: skip
    results = {}
    for mapped in (True, False):
        monkeypatch.setattr(ndpass, "MAPPED_IO", mapped)
        passes = NdPasses(gpu)
        for _ in range(2):  # the second call on the pipelines the first baked
            correlate1d_chain(x, lines, precision=precision, passes_engine=passes)
            passes.wait_baked()
        results[mapped] = correlate1d_chain(x, lines, precision=precision, passes_engine=passes)
        used = {b.mapped for b in passes._arrays.values()}
        assert used == {mapped and "mappable-primary-buffers" in gpu.device.features}
    np.testing.assert_array_equal(results[True], results[False])
    want = ndreference.correlate1d_chain(x.astype(np.float64), lines)
    np.testing.assert_allclose(results[True], want, rtol=0, atol=1e-5)
    if gpu.is_software and "mappable-primary-buffers" in gpu.adapter.features:
        assert "mappable-primary-buffers" in gpu.device.features  # device.py asked for it


def test_wide_fused_pairs_equal_the_16_byte_ones(gpu, monkeypatch) -> None:
    """On a device with "shader-int64" (ndpass.WIDE_FEATURE) a fused pair whose lines hold a
    multiple of 8 elements loads and stores 8 floats at a time (nd_plane.wgsl's `wide`): the
    same values bit for bit as the 16-byte accesses, on every border pair, both orders, both
    strip widths, origins, NaN and Inf; lines of 4 (mod 8) elements keep the 16-byte path.
    blurapp.gpu.device asks for the feature on software adapters that have it; elsewhere a
    device is made here with it."""
    wide_ctx = _context_with(gpu, ndpass.WIDE_FEATURE)
    wide, narrow = NdPasses(wide_ctx), NdPasses(wide_ctx)
    monkeypatch.setattr(ndpass, "SMALL", 0)  # the fused shaders on these small arrays
    rng = np.random.default_rng(23)
    shapes = [(5, 8), (3, 16), (37, 24), (70, 48), (2, 9, 40), (19, 12), (4, 64)]
    modes = sorted(MODES)
    for k, shape in enumerate(shapes * 5):
        ta, tb = [(3, 3), (5, 1), (1, 9), (9, 5), (4, 6), (13, 2), (2, 13)][k % 7]
        wa, wb = rng.normal(size=ta), rng.normal(size=tb)
        wa = [wa, wa + wa[::-1], wa - wa[::-1]][k % 3]
        oa = _origins(ta)[k % len(_origins(ta))]
        ob = _origins(tb)[(k // 3) % len(_origins(tb))]
        x = rng.normal(size=shape).astype(np.float32)
        if k % 4 == 1:
            x.flat[rng.integers(x.size)] = np.nan
        if k % 5 == 2:
            x.flat[rng.integers(x.size)] = np.inf
        nd = len(shape)
        lines = [Line(nd - 2, wa, MODES[modes[k % 5]][0], oa, cval=CVAL),
                 Line(nd - 1, wb, MODES[modes[(k // 5) % 5]][0], ob, cval=-2.5)]  # fmt: skip
        if k % 3 == 1:
            lines.reverse()
        monkeypatch.setattr(ndpass, "PLANE_COLS", (16, 8)[k % 2])
        monkeypatch.setattr(ndpass, "WIDE_IO", True)
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=wide)
        monkeypatch.setattr(ndpass, "WIDE_IO", False)  # the 16-byte path on the same device
        want = correlate1d_chain(x, lines, precision="f32", passes_engine=narrow)
        np.testing.assert_array_equal(got, want)
    templates = [dict(key[1]) for key in wide._pipelines if key[0] == "nd_plane"]
    assert {t.get("wide", False) for t in templates} == {True, False}
    assert not any(dict(key[1]).get("wide") for key in narrow._pipelines if key[0] == "nd_plane")


@pytest.mark.parametrize("width", [1024, 16])
def test_fused_pairs_reading_a_texture_equal_the_storage_ones(gpu, monkeypatch, width) -> None:
    """A wide fused pair's interior strips read the input as a texture (ndpass.TEXTURE_INPUT,
    filled by a copy on the GPU just before them, also after other passes of a chain): the
    same values bit for bit as their storage loads, on every border pair, both orders, origins,
    NaN and Inf; texels filling whole texture rows or not (TEXTURE_WIDTH 16: many rows); a
    repeated call makes no new texture. Their border strips read the same texture
    (ndpass.TEXTURE_BORDERS). The texture is bound as a read-only storage texture
    (ndpass.TEXTURE_STORAGE, with TEXTURE_WIDTH 16) or as a sampled one (1024)."""
    ctx = _context_with(gpu, ndpass.WIDE_FEATURE)
    textured, plain = NdPasses(ctx), NdPasses(ctx)
    monkeypatch.setattr(ndpass, "SMALL", 0)  # the fused, split shaders on these small arrays
    monkeypatch.setattr(ndpass, "TEXTURE_WIDTH", width)
    store = width == 16
    monkeypatch.setattr(ndpass, "TEXTURE_STORAGE", store)
    monkeypatch.setattr(ndpass, "WIDE_IO", True)
    rng = np.random.default_rng(29)
    shapes = [(37, 64), (70, 48), (300, 40), (64, 256), (2, 9, 40), (4, 40, 64)]
    modes = sorted(MODES)
    for k, shape in enumerate(shapes * 4):
        ta, tb = [(3, 3), (5, 5), (1, 9), (9, 5), (4, 6), (13, 2), (2, 13)][k % 7]
        wa, wb = rng.normal(size=ta), rng.normal(size=tb)
        wb = [wb, wb + wb[::-1], wb - wb[::-1]][k % 3]
        oa = _origins(ta)[k % len(_origins(ta))]
        ob = _origins(tb)[(k // 3) % len(_origins(tb))]
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = -np.inf
        nd = len(shape)
        lines = [Line(nd - 2, wa, MODES[modes[k % 5]][0], oa, cval=CVAL),
                 Line(nd - 1, wb, MODES[modes[(k // 5) % 5]][0], ob, cval=-2.5)]  # fmt: skip
        if k % 2:
            lines.reverse()
        if nd == 3 and k % 3 == 0:  # a line pass first: the texture is filled from its output
            lines.insert(0, Line(0, rng.normal(size=3), MODES[modes[k % 5]][0], 0, cval=CVAL))
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=textured)
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", False)
        want = correlate1d_chain(x, lines, precision="f32", passes_engine=plain)
        np.testing.assert_array_equal(got, want)
    templates = [dict(key[1]) for key in textured._pipelines if key[0] == "nd_plane"]
    assert any(t.get("texin") and t.get("edge") == "interior" for t in templates)
    assert any(t.get("texin") and t.get("edge") == "border" for t in templates)  # TEXTURE_BORDERS
    assert {t.get("texfmt", "") for t in templates if t.get("texin")} == {
        "rgba32float" if store else ""
    }
    assert not any(dict(key[1]).get("texin") for key in plain._pipelines)
    assert textured.stats["textures"] >= 1
    assert textured.stats["in_place"] >= 1  # TEXTURE_IN_PLACE
    monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
    made = textured.stats["textures"]
    correlate1d_chain(x, lines, precision="f32", passes_engine=textured)
    assert textured.stats["textures"] == made


def test_tall_bands_equal_bands_of_32_lines(gpu, monkeypatch) -> None:
    """On a software adapter a fused pair's interior invocations walk TALL_BANDS lines a tap
    (ndpass._plane_rows): the same values bit for bit as bands of PLANE_ROWS lines, bands
    taller than the plane, planes not a multiple of the band, several planes, both orders,
    every border, origins, NaN and Inf; never fewer workgroups than TALL_BANDS_GROUPS a CPU."""
    ctx = _context_with(gpu, ndpass.WIDE_FEATURE)
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "WIDE_IO", True)
    monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
    rng = np.random.default_rng(59)
    # (shape, taps along axis -2 and -1, their borders): n0 above, below and not a multiple of
    # the tall band; a constant border (no row-first pair: 13 taps at most) among them.
    cases = [
        ((300, 40), (17, 17), "reflect", "wrap"), ((37, 64), (17, 5), "mirror", "clamp"),
        ((4, 150, 64), (9, 9), "wrap", "reflect"), ((200, 48), (13, 3), "constant", "clamp"),
        ((130, 96), (5, 17), "clamp", "mirror"), ((260, 32), (17, 9), "clamp", "reflect"),
    ]  # fmt: skip
    walked, fused = [], 0
    plane_rows = ndpass._plane_rows
    monkeypatch.setattr(
        ndpass, "_plane_rows", lambda *a: walked.append(plane_rows(*a)) or walked[-1]
    )
    for k, (shape, (ta, tb), ma, mb) in enumerate(cases * 2):
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = -np.inf
        nd = len(shape)
        wa, wb = rng.normal(size=ta), rng.normal(size=tb)
        wa = [wa, wa + wa[::-1]][k % 2]
        lines = [Line(nd - 2, wa, MODES[ma][0], _origins(ta)[k % 3], cval=CVAL),
                 Line(nd - 1, wb, MODES[mb][0], _origins(tb)[k % 3], cval=-2.5)]  # fmt: skip
        if k >= len(cases):
            lines.reverse()
        got = []
        for tall in (ndpass.TALL_BANDS, 0):
            monkeypatch.setattr(ndpass, "TALL_BANDS", tall)
            monkeypatch.setattr(ndpass, "TALL_BANDS_GROUPS", 0)  # these arrays are small
            engine = NdPasses(ctx)
            got.append(correlate1d_chain(x, lines, precision="f32", passes_engine=engine))
        fused += any(key[0] == "nd_plane" for key in engine._pipelines)
        np.testing.assert_array_equal(got[0], got[1])
    assert fused == 2 * len(cases) and max(walked) == 128 and min(walked) == ndpass.PLANE_ROWS
    monkeypatch.setattr(ndpass, "_plane_rows", plane_rows)
    monkeypatch.setattr(ndpass, "TALL_BANDS", 8)
    monkeypatch.setattr(ndpass, "TALL_BANDS_GROUPS", 2)
    monkeypatch.setattr(ndpass.os, "cpu_count", lambda: 2)
    assert ndpass._plane_rows(1, 1080, 118, 17) == 128  # 9 bands x 118 strips >= 512
    assert ndpass._plane_rows(1, 1024, 62, 17) == 64  # 8 x 62 < 512: 16 x 62
    assert ndpass._plane_rows(1, 1080, 118, 5) == 32  # 8 x 4 lines: PLANE_ROWS
    assert ndpass._plane_rows(1, 64, 4, 17) == 32  # a small array: PLANE_ROWS
    monkeypatch.setattr(ndpass.os, "cpu_count", lambda: 16)
    assert ndpass._plane_rows(1, 1080, 118, 17) == 32  # 16 threads want 4096 invocations


def test_passes_write_in_place_only_where_the_texture_is_all_they_read(gpu, monkeypatch) -> None:
    """A pass whose dispatches all read the texture writes its output into the buffer the
    texture was copied from (ndpass.TEXTURE_IN_PLACE); where one of them reads the storage
    buffer (border dispatches without TEXTURE_BORDERS) it writes the other buffer, as before.
    Chains of fused pairs and line passes, split into interior and border dispatches, equal bit
    for bit to the same chains without textures, and to TEXTURE_IN_PLACE off."""
    ctx = _context_with(gpu, ndpass.WIDE_FEATURE)
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "WIDE_IO", True)
    rng = np.random.default_rng(53)
    cases = [((70, 96), [(0, 5), (1, 5)]), ((3, 40, 64), [(0, 3), (1, 9), (2, 33)]),
             ((90, 64), [(0, 33), (1, 33)]), ((37, 48), [(1, 3), (0, 3)])]  # fmt: skip
    modes = sorted(MODES)
    in_place = {True: 0, False: 0}
    for k, (shape, axes) in enumerate(cases):
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        lines = [Line(a, rng.normal(size=t), MODES[modes[(k + a) % 5]][0], t % 3 - 1, cval=CVAL)
                 for a, t in axes]  # fmt: skip
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", False)
        want = correlate1d_chain(x, lines, precision="f32", passes_engine=NdPasses(ctx))
        for borders, place in itertools.product((True, False), (True, False)):
            monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
            monkeypatch.setattr(ndpass, "TEXTURE_BORDERS", borders)
            monkeypatch.setattr(ndpass, "TEXTURE_IN_PLACE", place)
            engine = NdPasses(ctx)
            got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
            np.testing.assert_array_equal(got, want)
            assert place or engine.stats["in_place"] == 0
            in_place[borders] += engine.stats["in_place"]
    # Split passes whose borders read the storage buffer are not written in place.
    assert in_place[True] > in_place[False] >= 1


@pytest.mark.parametrize("mode", sorted(MODES))
def test_line_passes_reading_a_texture_equal_the_storage_ones(gpu, monkeypatch, mode) -> None:
    """Wide column-group passes (unrolled and rolled), chunked passes' interior blocks and
    rolled scalar or vec4 passes read their input as a texture (ndpass.TEXTURE_LINES), each
    after a copy of the previous pass's output into it, and chunked passes' border blocks the
    texture their interior's copy filled (ndpass.TEXTURE_BORDERS): the same values bit for bit
    as their storage loads, origins, NaN and Inf, texture rows filled or not."""
    ctx = _context_with(gpu, ndpass.WIDE_FEATURE)
    textured, plain = NdPasses(ctx), NdPasses(ctx)
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "WIDE_IO", True)
    monkeypatch.setattr(ndpass, "MAX_FUSED_TAPS_ROW_FIRST", 0)  # line passes, not fused pairs
    monkeypatch.setattr(ndpass, "MAX_FUSED_TAPS", 0)
    monkeypatch.setattr(ndpass, "TEXTURE_WIDTH", 16)
    border = MODES[mode][0]
    rng = np.random.default_rng(31 + len(mode))
    for k, (shape, taps) in enumerate([((40, 96), (9, 25)), ((70, 64), (25, 17)),
                                       ((3, 30, 48), (65, 5)), ((90, 32), (3, 33)),
                                       ((30, 37), (65, 21)), ((70, 12), (25, 3))]):  # fmt: skip
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = np.inf
        nd = len(shape)
        origins = [_origins(t)[k % 3] for t in taps]
        lines = [Line(nd - 2, rng.normal(size=taps[0]), border, origins[0], cval=CVAL),
                 Line(nd - 1, rng.normal(size=taps[1]), border, origins[1], cval=CVAL)]  # fmt: skip
        if k % 2:
            lines.reverse()
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=textured)
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", False)
        want = correlate1d_chain(x, lines, precision="f32", passes_engine=plain)
        np.testing.assert_array_equal(got, want)
    templates = [dict(key[1]) for key in textured._pipelines if key[0] == "nd_line"]
    assert any(t.get("texin") and t.get("groups") for t in templates)
    assert any(t.get("texin") and t.get("roll") for t in templates)
    assert any(t.get("texin") and t.get("edge") == "interior" for t in templates)
    assert any(t.get("texin") and t.get("edge") == "border" for t in templates)  # TEXTURE_BORDERS
    assert {t["vec"] for t in templates if t.get("texin") and not t.get("wide")} == {1, 4}
    assert textured.stats["in_place"] >= 1  # TEXTURE_IN_PLACE


@pytest.mark.parametrize("mode", sorted(MODES))
def test_df64_line_passes_reading_a_texture_equal_the_storage_ones(gpu, df64_ok, monkeypatch, mode):
    """float64 line passes read their (hi, lo) pairs from an rgba32float texture
    (ndpass.DF64_TEXTURES): two columns' pairs a texel across the axis (`vec` 2), half a texel
    a pair along the last axis or across an odd number of columns (`vec` 1). The same values
    bit for bit as their storage loads, for odd numbers of pairs (a partial last texel, which
    the texture's copy now includes), texture rows filled or not, origins, a constant border
    and NaN and Inf; within 1e-12 of scipy."""
    textured, plain = NdPasses(gpu), NdPasses(gpu)
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "TEXTURE_WIDTH", 16)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(61 + len(mode))
    cases = [((1,), 0, 3), ((7,), 0, 5), ((5, 9), 0, 3), ((6, 10), 0, 7), ((13, 11), 1, 5),
             ((3, 4, 6), 1, 9), ((2, 5, 3), 2, 4), ((33, 70), 0, 17), ((33, 70), 1, 2)]  # fmt: skip
    for k, (shape, axis, taps) in enumerate(cases):
        x = 1e8 + rng.normal(size=shape)
        if x.size > 4:
            x.flat[rng.integers(x.size)] = np.nan
            x.flat[rng.integers(x.size)] = -np.inf
        origins = _origins(taps)
        line = Line(axis, rng.normal(size=taps), border, origins[k % len(origins)], cval=1e8 + 0.5)
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
        got = correlate1d_chain(x, [line], precision="df64", passes_engine=textured)
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", False)
        want = correlate1d_chain(x, [line], precision="df64", passes_engine=plain)
        np.testing.assert_array_equal(got, want)
        scipy_want = ndi.correlate1d(x, line.weights, axis=axis, mode=scipy_mode,
                                     cval=1e8 + 0.5, origin=line.origin)  # fmt: skip
        np.testing.assert_array_equal(np.isnan(got), np.isnan(scipy_want))
        finite = np.isfinite(scipy_want)
        np.testing.assert_array_equal(got[~finite], scipy_want[~finite])
        scale = float(np.abs(line.weights).sum()) * 1e8
        if finite.any():
            assert _rel_err(got[finite], scipy_want[finite], scale) < 1e-12, shape
    templates = [dict(key[1]) for key in textured._pipelines if key[0] == "nd_line"]
    assert {t["vec"] for t in templates if t.get("texin") and t["precision"] == "df64"} == {1, 2}
    assert not any(t.get("texin") for key, t in
                   ((key, dict(key[1])) for key in plain._pipelines))  # fmt: skip


def test_df64_passes_over_more_than_the_texture_holds_read_storage(gpu, df64_ok, monkeypatch):
    """A float64 array whose pairs (two floats an element) exceed the texture's rows, though
    as many f32 elements would fit, runs its double-float passes from the storage buffer:
    within 1e-12 of scipy, and no textured df64 pipeline made."""
    monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
    monkeypatch.setattr(ndpass, "TEXTURE_WIDTH", 16)  # rows of 64 floats
    engine = NdPasses(gpu)
    rows = int(gpu.device.limits["max-texture-dimension-2d"])
    n = rows * 64 * 3 // 4  # elements: fits as f32, not as pairs
    assert engine.textures(n) and not engine.textures(2 * n)
    side = math.isqrt(n)
    x = 1e3 + np.random.default_rng(17).normal(size=(side, n // side))
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.WRAP))]  # fmt: skip
    got = correlate1d_chain(x, lines, precision="df64", passes_engine=engine)
    want = ndi.correlate1d(ndi.correlate1d(x, [0.25, 0.5, 0.25], axis=0, mode="reflect"),
                           [-1.0, 0.0, 1.0], axis=1, mode="wrap")  # fmt: skip
    assert _rel_err(got, want, 2.0 * 1e3) < 1e-12
    templates = [dict(key[1]) for key in engine._pipelines if key[0] == "nd_line"]
    assert templates and not any(t.get("texin") for t in templates if t["precision"] == "df64")


@pytest.mark.parametrize("mode", sorted(MODES))
def test_rolled_passes_unrolled_by_two_taps_equal_one_tap_an_iteration(gpu, monkeypatch, mode):
    """Rolled f32 passes (kernels longer than the unrolled pipelines) take ROLL_UNROLL taps an
    iteration, then the rest one at a time: the same sums in the same order, bit for bit, for
    odd and even lengths, column groups (vec4 columns across the axis), scalar lines along the
    last axis and scalar columns, axes shorter than a block or than the kernel, NaN and Inf."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "PAD_LINES", 0)  # the 90-long lines stay scalar
    border = MODES[mode][0]
    rng = np.random.default_rng(43 + len(mode))
    cases = [((70, 16), 0, 35), ((37, 32), 0, 40), ((5, 16), 0, 37), ((3, 50, 8), 1, 38),
             ((6, 90), 1, 35), ((4, 41), 1, 40), ((2, 20), 1, 67), ((45, 7), 0, 18)]  # fmt: skip
    used = set()
    for shape, axis, taps in cases:
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = np.inf
        lines = [Line(axis, rng.normal(size=taps), border, origin=taps % 3 - 1)]
        got = {}
        for unroll in (1, 2, 3):
            monkeypatch.setattr(ndpass, "ROLL_UNROLL", unroll)
            passes = NdPasses(gpu)
            got[unroll] = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
            templates = [dict(key[1]) for key in passes._pipelines if key[0] == "nd_line"]
            assert any(t.get("roll") for t in templates)
            used |= {(t.get("groups", 1), t.get("unroll", 1)) for t in templates}
        np.testing.assert_array_equal(got[2], got[1])
        np.testing.assert_array_equal(got[3], got[1])
    assert {(4, 2), (1, 2), (4, 3), (1, 3)} <= used


def _taps_case(rng, shape, wshape, k: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """An f32 array of ``shape`` with a NaN and an Inf, ``wshape`` weights whose first is zero
    (skipped, as scipy skips it: the NaN under it does not spread), and case ``k``'s origins."""
    x = rng.normal(size=shape).astype(np.float32)
    x.flat[rng.integers(x.size)] = np.nan
    x.flat[rng.integers(x.size)] = np.inf
    w = rng.normal(size=wshape)
    w.flat[0] = 0.0
    return x, w, [_origins(n)[k % len(_origins(n))] for n in wshape]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_nd_correlations_in_bands_of_lines_equal_one_line_an_invocation(gpu, monkeypatch, mode):
    """f32 kernels over the last two axes run TAPS_BAND output lines an invocation (nd_taps'
    `band`: each input line loaded once for the lines it enters): the same sums in the same
    order as one line an invocation, bit for bit, on awkward shapes (1 element, odd sizes,
    fewer lines than a band, a kernel larger than the array, planes, a 1-long axis), origins,
    zero taps over NaN, Inf and the constant border."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border = MODES[mode][0]
    rng = np.random.default_rng(41 + len(mode))
    cases = [((1, 1), (3, 3)), ((37, 45), (9, 9)), ((5, 7), (9, 11)), ((3, 40), (2, 5)),
             ((2, 1, 3, 8), (1, 1, 3, 3)), ((4, 9, 21), (1, 4, 5)), ((70, 64), (7, 1)),
             ((6, 33), (1, 7))]  # fmt: skip
    used = set()
    for k, (shape, wshape) in enumerate(cases):
        x, w, origins = _taps_case(rng, shape, wshape, k)
        got = {}
        for band in (0, 2, 4, 8):
            monkeypatch.setattr(ndpass, "TAPS_BAND", band)
            passes = NdPasses(gpu)
            got[band] = correlate_nd(
                x, w, border, origins, precision="f32", cval=CVAL, passes_engine=passes
            )
            used |= {
                dict(key[1]).get("band", 0) for key in passes._pipelines if key[0] == "nd_taps"
            }
        for band in (2, 4, 8):
            np.testing.assert_array_equal(got[band], got[0])
        want = ndreference.correlate_nd(x.astype(np.float64), w, border, origins, cval=CVAL)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got[4]), finite)
        np.testing.assert_allclose(got[4][finite], want[finite], rtol=1e-4, atol=1e-4)
    assert {0, 2, 4, 8} <= used


@pytest.mark.parametrize("precision", ["f32", "df64"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_nd_correlations_reading_a_texture_equal_the_storage_ones(
    gpu, df64_ok, monkeypatch, mode, precision
) -> None:
    """n-D correlations (nd_taps.wgsl) read their input from a texture (ndpass.TEXTURE_TAPS):
    f32 an r32float one, float64's pairs half an rgba32float texel each (DF64_TEXTURES). The
    same values bit for bit as their storage loads on awkward shapes (1 element, odd sizes, a
    kernel larger than the array, 1-D to 3-D), origins, zero taps over NaN, Inf; texture rows
    filled or not (TEXTURE_WIDTH 16: rows of 64 floats)."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "TEXTURE_WIDTH", 16)
    textured, plain = NdPasses(gpu), NdPasses(gpu)
    border = MODES[mode][0]
    rng = np.random.default_rng(37 + len(mode))
    cases = [((1, 1), (3, 3)), ((37, 45), (9, 9)), ((5, 7), (9, 11)), ((130,), (7,)),
             ((4, 9, 21), (3, 2, 5)), ((64, 64), (1, 17))]  # fmt: skip
    for k, (shape, wshape) in enumerate(cases):
        x, w, origins = _taps_case(rng, shape, wshape, k)
        if precision == "df64":
            x = x.astype(np.float64) * 1e3 + rng.normal(size=shape) * 1e-4
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", "always")
        got = correlate_nd(
            x, w, border, origins, precision=precision, cval=CVAL, passes_engine=textured
        )
        monkeypatch.setattr(ndpass, "TEXTURE_INPUT", False)
        want = correlate_nd(
            x, w, border, origins, precision=precision, cval=CVAL, passes_engine=plain
        )
        np.testing.assert_array_equal(got, want)
    assert any(
        dict(key[1]).get("texin") and dict(key[1])["precision"] == precision
        for key in textured._pipelines
        if key[0] == "nd_taps"
    )
    assert textured.stats["textures"] >= 1 and plain.stats["textures"] == 0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_last_axis_passes_split_at_the_borders(engine, monkeypatch, mode: str) -> None:
    """A chunked f32 pass along the last axis runs its interior blocks as a dispatch without
    border code and the others after it (ndpass.PLANE_SPLIT): the same values bit for bit as
    one dispatch, every origin, folded and plain weights, NaN and Inf, in a chain too."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(41 + len(mode))
    for shape in [(3, 200), (2, 5, 96), (1000,), (7, 68)]:
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = np.inf
        for size in (3, 9, 16, 17):
            w = rng.normal(size=size)
            w = w - w[::-1] if size == 9 else w
            for origin in _origins(size):
                lines = [Line(len(shape) - 1, w, border, origin, cval=CVAL)]
                if len(shape) > 1:  # after a pass along axis 0 (not fused: 17 taps)
                    lines.insert(0, Line(0, rng.normal(size=17), border, 0, cval=CVAL))
                monkeypatch.setattr(ndpass, "PLANE_SPLIT", True)
                got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
                monkeypatch.setattr(ndpass, "PLANE_SPLIT", False)
                one = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
                np.testing.assert_array_equal(got, one)
                want = ndi.correlate1d(
                    x.astype(np.float64), w, axis=-1, mode=scipy_mode, cval=CVAL, origin=origin
                ) if len(shape) == 1 else None  # fmt: skip
                if want is not None:
                    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    edges = {dict(key[1]).get("edge") for key in engine._pipelines if key[0] == "nd_line"}
    assert {"interior", "border"} <= edges


@pytest.mark.parametrize("mode", sorted(MODES))
def test_last_axis_chunked_passes_wide_and_long(engine, monkeypatch, mode: str) -> None:
    """Passes along the last axis read vec4 chunks of the line, unrolled up to
    ndpass.MAX_CHUNKED_TAPS taps (past the other passes' MAX_UNROLLED_TAPS), and on a device
    with ndpass.WIDE_FEATURE 8 elements an access where lines and blocks hold a multiple of 8
    (nd_line.wgsl's chunked `wide`): the same values bit for bit with either width, against
    scipy.ndimage.correlate1d in float64, every origin's extremes, NaN and Inf, in a chain after
    a pass along axis 0."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(53 + len(mode))
    for shape in [(3, 200), (2, 5, 96), (4, 36)]:
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = np.inf
        for size in (16, 25, ndpass.MAX_CHUNKED_TAPS):
            w = rng.normal(size=size)
            w = w + w[::-1] if size == 25 else w  # folded sums too
            origins = _origins(size)
            for origin in (origins[0], 0, origins[-1]):
                lines = [Line(len(shape) - 1, w, border, origin, cval=CVAL)]
                if len(shape) == 3:
                    lines.insert(0, Line(0, rng.normal(size=3), border, 0, cval=CVAL))
                monkeypatch.setattr(ndpass, "WIDE_IO", True)
                got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
                monkeypatch.setattr(ndpass, "WIDE_IO", False)
                narrow = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
                np.testing.assert_array_equal(got, narrow)
                want = x.astype(np.float64)
                for ln in lines:
                    want = ndi.correlate1d(want, ln.weights, axis=ln.axis, mode=scipy_mode,
                                           cval=CVAL, origin=ln.origin)  # fmt: skip
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                ok = np.isfinite(want)
                scale = np.abs(w).sum() * (3 if len(shape) == 3 else 1) * 4
                np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=1e-5 * scale)
    templates = [dict(key[1]) for key in engine._pipelines if key[0] == "nd_line"]
    unrolled = ndpass.MAX_UNROLLED_TAPS["f32"]
    long = [t for t in templates if t.get("chunked") and t["taps"] > unrolled]
    assert long and not any(t.get("roll") for t in long)
    if ndpass.WIDE_FEATURE in engine.context.device.features:
        assert any(t.get("wide") for t in long)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_column_groups_unrolled_up_to_max_group_taps(engine, monkeypatch, mode: str) -> None:
    """Passes across the last axis in groups of vec4 columns unroll up to MAX_GROUP_TAPS taps
    (past MAX_UNROLLED_TAPS; folded where the weights are symmetric), against scipy in float64
    for every origin's extremes, NaN and Inf, axes shorter than the kernel, a 3-D middle axis;
    rolled beyond it."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    border, scipy_mode = MODES[mode]
    rng = np.random.default_rng(59 + len(mode))
    for shape, axis in [((40, 16), 0), ((7, 24), 0), ((3, 37, 8), 1), ((50, 32), 0)]:
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        x.flat[rng.integers(x.size)] = np.inf
        for size in (25, ndpass.MAX_GROUP_TAPS, ndpass.MAX_GROUP_TAPS + 2):
            w = rng.normal(size=size)
            w = w + w[::-1] if size != 25 else w  # symmetric: folded
            origins = _origins(size)
            for origin in (origins[0], origins[-1]):
                lines = [Line(axis, w, border, origin, cval=CVAL)]
                got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
                want = ndi.correlate1d(x.astype(np.float64), w, axis=axis, mode=scipy_mode,
                                       cval=CVAL, origin=origin)  # fmt: skip
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                ok = np.isfinite(want)
                np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=4e-5 * np.abs(w).sum())
    templates = [dict(key[1]) for key in engine._pipelines if key[0] == "nd_line"]
    groups = [t for t in templates if t.get("groups", 1) > 1]
    long = [t for t in groups if not t.get("roll") and t["taps"] > ndpass.MAX_UNROLLED_TAPS["f32"]]
    assert {t["taps"] for t in long} == {25, ndpass.MAX_GROUP_TAPS}
    assert any(t.get("sym") for t in long) and any(t.get("roll") for t in groups)


def test_subgroup_shuffled_windows_equal_the_loaded_ones(gpu, monkeypatch) -> None:
    """On a device with "subgroup" (ndpass.SHUFFLE_FEATURE) the interior strips of a fused pair
    and the interior blocks of a chunked last-axis pass take the chunks of their window beyond
    their own from the next invocations of their subgroup (nd_plane.wgsl's and nd_line.wgsl's
    `shuffle`): the same values bit for bit as loading them, where a subgroup's lanes straddle
    two lines, two bands or two planes, where the last workgroup is partly empty, one and two
    and three neighbours away (13-tap strips of 8 columns, 33-tap blocks), both access widths,
    both orders, every border pair, origins, NaN and Inf. blurapp.gpu.device asks for the
    feature on software adapters that have it; elsewhere a device is made here with it.
    Storage loads only: passes that read a texture (ndpass.TEXTURE_INPUT) take no shuffles."""
    ctx = _context_with(gpu, ndpass.SHUFFLE_FEATURE)
    engine = NdPasses(ctx)
    monkeypatch.setattr(ndpass, "SMALL", 0)  # the unrolled, fused and split shaders
    monkeypatch.setattr(ndpass, "TEXTURE_INPUT", False)
    rng = np.random.default_rng(31)
    modes = sorted(MODES)
    # Strips or blocks per line that are no multiple of a subgroup, several bands and planes.
    fused_shapes = [(37, 200), (70, 48), (2, 9, 136), (33, 1000), (5, 64), (3, 2, 17, 96)]
    pairs = [(3, 3), (5, 5), (1, 9), (9, 5), (4, 6), (13, 2), (2, 13), (13, 13)]
    for k, shape in enumerate(fused_shapes * 4):
        ta, tb = pairs[k % len(pairs)]
        wa, wb = rng.normal(size=ta), rng.normal(size=tb)
        wb = [wb, wb + wb[::-1], wb - wb[::-1]][k % 3]
        oa = _origins(ta)[k % len(_origins(ta))]
        ob = _origins(tb)[(k // 2) % len(_origins(tb))]
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = [np.nan, np.inf, -np.inf][k % 3]
        nd = len(shape)
        lines = [Line(nd - 2, wa, MODES[modes[k % 5]][0], oa, cval=CVAL),
                 Line(nd - 1, wb, MODES[modes[(k // 5) % 5]][0], ob, cval=-2.5)]  # fmt: skip
        if k % 3 == 1:
            lines.reverse()
        monkeypatch.setattr(ndpass, "PLANE_COLS", (16, 8)[k % 2])
        monkeypatch.setattr(ndpass, "WIDE_IO", k % 4 < 2)
        monkeypatch.setattr(ndpass, "SHUFFLE", True)
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        monkeypatch.setattr(ndpass, "SHUFFLE", False)
        want = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        np.testing.assert_array_equal(got, want)
    for k, (shape, taps) in enumerate(
        itertools.product([(7, 1000), (40, 96), (3, 5, 200), (1, 4096)], (3, 9, 17, 25, 33))
    ):
        w = rng.normal(size=taps)
        w = w + w[::-1] if k % 2 else w
        origin = _origins(taps)[k % len(_origins(taps))]
        x = rng.normal(size=shape).astype(np.float32)
        x.flat[rng.integers(x.size)] = np.nan
        line = Line(len(shape) - 1, w, MODES[modes[k % 5]][0], origin, cval=CVAL)
        monkeypatch.setattr(ndpass, "WIDE_IO", k % 3 != 1)
        monkeypatch.setattr(ndpass, "SHUFFLE", True)
        got = correlate1d_chain(x, [line], precision="f32", passes_engine=engine)
        monkeypatch.setattr(ndpass, "SHUFFLE", False)
        want = correlate1d_chain(x, [line], precision="f32", passes_engine=engine)
        np.testing.assert_array_equal(got, want)
    shuffled = [(key[0], dict(key[1])) for key in engine._pipelines if dict(key[1]).get("shuffle")]
    assert {name for name, _ in shuffled} == {"nd_plane", "nd_line"}
    assert {t.get("wide", False) for _, t in shuffled} == {True, False}
    assert not any(dict(key[1]).get("shuffle") and dict(key[1]).get("edge") != "interior"
                   for key in engine._pipelines)  # fmt: skip


def test_transfers_split_between_threads_agree(gpu, monkeypatch) -> None:
    """The upload into a mapping and the read-back out of it (into a new array, into ``out=``,
    and the df64 join) split between threads above ndpass.PARALLEL_COPY_BYTES: the same values
    as one thread's copies, on sizes that split unevenly; and ``_parallel_copy`` itself on
    every split of a few sizes."""
    for size in (1, 2, 3, 7, 1001):
        for threads in (1, 2, 3, 4):
            monkeypatch.setattr(ndpass, "_COPY_THREADS", threads)
            monkeypatch.setattr(ndpass, "PARALLEL_COPY_BYTES", 0)
            src = np.arange(size, dtype=np.float32)
            dst = np.zeros_like(src)
            ndpass._parallel_copy(dst, src)
            np.testing.assert_array_equal(dst, src)
    monkeypatch.setattr(ndpass, "_COPY_THREADS", 3)
    monkeypatch.setattr(ndpass, "PARALLEL_COPY_BYTES", 64)
    rng = np.random.default_rng(5)
    for dtype, precision in ((np.float32, "f32"), (np.float64, "df64")):
        x = rng.normal(size=(37, 52)).astype(dtype)
        lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
                 Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.WRAP))]  # fmt: skip
        results = []
        for parallel in (True, False):
            monkeypatch.setattr(ndpass, "PARALLEL_IO", parallel)
            passes = NdPasses(gpu)
            correlate1d_chain(x, lines, precision=precision, passes_engine=passes)
            passes.wait_baked()  # both calls below on the unrolled pipelines (one arithmetic)
            plain = correlate1d_chain(x, lines, precision=precision, passes_engine=passes)
            out = np.full_like(x, np.nan)
            into = correlate1d_chain(x, lines, precision=precision, passes_engine=passes, out=out)
            assert into is out
            np.testing.assert_array_equal(plain, out)
            results.append(plain)
        np.testing.assert_array_equal(*results)
        want = ndreference.correlate1d_chain(x.astype(np.float64), lines)
        np.testing.assert_allclose(results[0], want, rtol=0, atol=1e-5)


def test_chain_dispatches_are_built_once_per_chain_and_setting(engine, monkeypatch) -> None:
    """A repeated chain reuses its dispatch list (ndpass._CHAINS: building a fused pair's took
    ~0.4 ms of Python); another shape, other weights, another cval (NaN too), border or origin,
    or a changed module setting (PLANE_COLS, WIDE_IO, SMALL ...) builds its own."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    built = []
    plane, line = ndpass._plane_dispatches, ndpass._line_dispatches
    monkeypatch.setattr(ndpass, "_plane_dispatches", lambda *a: built.append("p") or plane(*a))
    monkeypatch.setattr(ndpass, "_line_dispatches", lambda *a: built.append("l") or line(*a))
    rng = np.random.default_rng(8)
    x = rng.normal(size=(20, 48)).astype(np.float32)
    w = np.array([0.25, 0.5, 0.25])

    def chain(cval: float = 0.5, origin: int = 0, mode: str = "constant", y=x) -> np.ndarray:
        lines = [Line(0, w, MODES[mode][0], origin, cval=cval), Line(1, w, MODES[mode][0])]
        return correlate1d_chain(y, lines, precision="f32", passes_engine=engine)

    first = chain()
    assert built == ["p"]
    again = chain()
    assert built == ["p"]  # the cached list
    np.testing.assert_array_equal(first, again)
    variants = [
        lambda: chain(cval=np.nan), lambda: chain(cval=np.nan), lambda: chain(cval=-0.5),
        lambda: chain(origin=1), lambda: chain(mode="wrap"), lambda: chain(y=x[:, :40].copy()),
    ]  # fmt: skip
    for k, call in enumerate(variants):
        call()
        assert len(built) == 2 + k - (k >= 1), k  # the second NaN call: the first's list
    want = ndreference.correlate1d_chain(x, [Line(0, w, Border(BorderMode.CONSTANT), cval=np.nan),
                                             Line(1, w, Border(BorderMode.CONSTANT))])  # fmt: skip
    np.testing.assert_array_equal(np.isnan(chain(cval=np.nan)), np.isnan(want))
    count = len(built)
    monkeypatch.setattr(ndpass, "PLANE_COLS", 8)
    chain()
    assert len(built) == count + 1
    templates = {dict(key[1])["cols"] for key in engine._pipelines if key[0] == "nd_plane"}
    assert 8 in templates
    monkeypatch.setattr(ndpass, "MAX_FUSED_TAPS", 0)  # no fusion: two line passes
    chain()
    assert built[-2:] == ["l", "l"]


def test_lent_results_are_the_buffers_own_memory_and_come_back(gpu, monkeypatch) -> None:
    """On a software adapter a float32 chain's result taken as a new array (``lend=True``) is
    the mapped storage buffer it was computed in (ndpass.LEND_RESULTS): writable, equal to the
    copied result, never shared by two live results (each kept one keeps its own buffer), valid
    in a view that outlives its array, and back in the engine once the last array on it is gone
    (then reused: a steady stream of calls makes no new buffers). Elsewhere the result is
    copied."""
    import gc

    rng = np.random.default_rng(17)
    x = rng.normal(size=(48, 40)).astype(np.float32)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.WRAP))]  # fmt: skip
    passes = NdPasses(gpu)
    want = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    passes.wait_baked()
    want = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    lends = gpu.is_software and "mappable-primary-buffers" in gpu.device.features
    kept = [correlate1d_chain(x * (k + 1), lines, precision="f32", passes_engine=passes,
                              lend=True) for k in range(5)]  # fmt: skip
    assert passes.stats["lent"] == (5 if lends else 0)
    for k, got in enumerate(kept):
        np.testing.assert_allclose(got, want * (k + 1), rtol=1e-6, atol=1e-5 * (k + 1))
        assert got.flags.writeable and got.flags.c_contiguous and got.dtype == np.float32
        assert isinstance(_owner(got), ndpass._Lease if lends else np.ndarray)
        assert ndpass.is_lent(got) == lends
        assert not any(np.may_share_memory(got, other) for other in kept[k + 1 :])
    out = np.full_like(x, np.nan)  # lent in place of ``out`` too, which stays as it was
    instead = correlate1d_chain(x, lines, precision="f32", passes_engine=passes, out=out,
                                lend=True)  # fmt: skip
    assert (instead is not out and ndpass.is_lent(instead)) if lends else instead is out
    np.testing.assert_array_equal(instead, want)
    del instead
    view = kept[2][5:9, ::3]
    expected = view.copy()
    kept[0][...] = 7.0  # a lent result is the caller's to write
    del kept
    gc.collect()
    for _ in range(3):  # the buffers come back and serve the next results
        again = correlate1d_chain(x, lines, precision="f32", passes_engine=passes, lend=True)
        np.testing.assert_array_equal(again, want)
        del again
    np.testing.assert_array_equal(view, expected)  # its buffer is still its own
    if lends:
        assert passes.stats["returned"] >= 4
        made = passes.stats["buffers"]
        for _ in range(4):
            correlate1d_chain(x, lines, precision="f32", passes_engine=passes, lend=True)
        assert passes.stats["buffers"] == made
    del view
    gc.collect()
    passes.clear()  # buffers lent before a clear come back to nothing: let go
    correlate1d_chain(x, lines, precision="f32", passes_engine=passes, lend=True)
    passes.wait_baked()  # the pipelines the clear dropped, compiled again
    # Not lent where mapped memory may not be the host's (a hardware adapter's).
    monkeypatch.setattr(passes, "_ctx", dataclasses.replace(gpu, is_software=False))
    lent = passes.stats["lent"]
    copied = correlate1d_chain(x, lines, precision="f32", passes_engine=passes, lend=True)
    assert passes.stats["lent"] == lent and isinstance(_owner(copied), np.ndarray)
    np.testing.assert_array_equal(copied, want)
    assert not ndpass.is_lent(copied)
    out = np.full_like(x, np.nan)
    into = correlate1d_chain(x, lines, precision="f32", passes_engine=passes, out=out, lend=True)
    assert into is out
    np.testing.assert_array_equal(out, want)


def _owner(a: np.ndarray) -> object:
    """What holds an array's memory: the end of its chain of bases."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


# Chains over lines of a length that is not a multiple of ndpass.PAD_LINES: (chain's passes as
# (axis, taps, origin), whether the last axis' pass reads a constant border after another pass).
PADDED_CHAINS = {
    "last axis only": [(-1, 5, 1)],
    "pair, axis -2 first": [(-2, 3, 0), (-1, 7, -2)],
    "pair, last axis first": [(-1, 4, 0), (-2, 5, 0)],
    "other axes only": [(0, 3, 0), (-2, 2, 0)],
    "three axes": [(0, 3, 1), (-1, 9, 0), (-2, 3, -1)],
}


@pytest.mark.parametrize("chain", sorted(PADDED_CHAINS))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_odd_lines_padded_to_whole_chunks(engine, monkeypatch, chain: str, mode: str) -> None:
    """Lines along the last axis not a multiple of PAD_LINES long are extended on the host with
    the columns the last axis' pass reads beyond them (ndpass._padded_chain), so that they take
    the chunked, fused and texture paths: the result is the unpadded chain's, to f32 rounding,
    NaN and infinities where the float64 reference has them, in ``out`` too. A constant border
    along the last axis after another axis' pass is not padded (the intermediate's border is
    the constant, which an added column would not stay) and is as right. The added columns
    that no output kept reads are left unwritten: here they hold NaN, which reaches nothing."""
    monkeypatch.setattr(ndpass, "SMALL", 0)
    monkeypatch.setattr(ndpass, "BAKE_IN_BACKGROUND", False)
    write = ndpass._Padded.write

    def poisoned(self: ndpass._Padded, target: np.ndarray) -> None:
        target[...] = np.nan
        write(self, target)

    monkeypatch.setattr(ndpass._Padded, "write", poisoned)
    border, _ = MODES[mode]
    rng = np.random.default_rng(len(chain) * 7 + len(mode))
    for shape in [(3, 37, 203), (2, 70, 117)]:
        x = rng.normal(size=shape).astype(np.float32)
        x[0, :5, 0] = np.nan  # the first and last columns: what the added ones copy
        x[1, 7, -1] = np.inf
        x[-1, 3, -2] = -np.inf
        lines = [Line(a, rng.normal(size=t), border, o, cval=CVAL)
                 for a, t, o in PADDED_CHAINS[chain]]  # fmt: skip
        last = [k for k, ln in enumerate(lines) if ln.axis % 3 == 2]
        padded = not (mode == "constant" and last and last[0] != 0)
        assert (ndpass._line_padding(shape, lines, "f32") is not None) == padded
        before = engine.stats["padded"]
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        assert engine.stats["padded"] == before + padded
        assert got.shape == x.shape and got.dtype == np.float32 and got.flags.c_contiguous
        want = ndreference.correlate1d_chain(x, lines)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
        finite = np.isfinite(want)
        scale = math.prod(float(np.abs(ln.weights).sum()) for ln in lines) * max(
            float(np.abs(x[np.isfinite(x)]).max()), CVAL
        )
        assert _rel_err(got[finite], want[finite], scale) < 2.0**-18, shape
        out = np.full(shape, 9.0, np.float32)
        lent = engine.stats["lent"]
        into = correlate1d_chain(x, lines, precision="f32", passes_engine=engine, out=out,
                                 lend=True)  # fmt: skip
        assert into is out or ndpass.is_lent(into)
        np.testing.assert_array_equal(into, got)
        if padded and ndpass.is_lent(into):
            # The real columns' view in the lent padded buffer (LEND_PADDED): rows of the
            # padded width, each row's elements contiguous; the caller's to write.
            assert engine.stats["lent"] == lent + 1 and into.shape == shape
            assert not into.flags.c_contiguous and into.strides[-1] == 4
            row = into.strides[-2] // 4  # the padded line: whole chunks, no longer than 1.5 ×
            assert row % ndpass.PAD_LINES == 0 and shape[-1] < row <= shape[-1] * 3 // 2 + 8
            assert into.flags.writeable and into.dtype == np.float32
            into[...] = 1.0
            np.testing.assert_array_equal(np.asarray(out), 9.0)  # ``out`` untouched
        del into
        monkeypatch.setattr(ndpass, "LEND_PADDED", False)  # copied out of the mapped result
        lent = engine.stats["lent"]
        into = correlate1d_chain(x, lines, precision="f32", passes_engine=engine, out=out,
                                 lend=True)  # fmt: skip
        if padded:  # no buffer lent
            assert into is out and engine.stats["lent"] == lent
        np.testing.assert_array_equal(into, got)
        monkeypatch.setattr(ndpass, "LEND_PADDED", True)
        monkeypatch.setattr(ndpass, "PAD_INTERIOR", False)  # border strips run, bit for bit
        np.testing.assert_array_equal(
            correlate1d_chain(x, lines, precision="f32", passes_engine=engine), got
        )
        monkeypatch.setattr(ndpass, "PAD_INTERIOR", True)
        monkeypatch.setattr(ndpass, "PAD_LINES", 0)  # the unpadded paths
        plain = correlate1d_chain(x, lines, precision="f32", passes_engine=engine)
        monkeypatch.setattr(ndpass, "PAD_LINES", 8)
        np.testing.assert_array_equal(np.isnan(plain), np.isnan(got))
        assert _rel_err(got[finite], plain[finite].astype(np.float64), scale) < 2.0**-18


def test_line_padding_only_where_it_is_exact_and_pays(monkeypatch) -> None:
    """ndpass._line_padding: (before, after) columns covering the last axis' pass's reach on
    each side and making the lines a multiple of PAD_LINES; none for lines already so, short
    lines, small arrays, float64 (double-float), two passes along the last axis, a constant
    border there after another pass, or padding of more than half a line. With PAD_INTERIOR,
    where that pass is in a fused pair: the real columns in whole interior strips, which the
    pair's interior dispatch alone covers."""
    monkeypatch.setattr(ndpass, "SMALL", 1 << 15)
    monkeypatch.setattr(ndpass, "PAD_INTERIOR", False)  # below: with it
    reflect, constant = Border(BorderMode.REFLECT), Border(BorderMode.CONSTANT)
    w5, w3 = np.ones(5) / 5, np.ones(3) / 3
    plan = ndpass._line_padding
    for n in (1001, 1919, 203, 1025):
        for origin in (-2, 0, 2):
            before, after = plan((1080, n), [Line(0, w3, reflect), Line(1, w5, reflect, origin)],
                                 "f32")  # fmt: skip
            centre = 2 + origin
            assert before == centre and after >= 4 - centre
            assert (n + before + after) % ndpass.PAD_LINES == 0 and after - (4 - centre) < 8
    assert plan((1080, 1001), [Line(0, w3, reflect)], "f32") == (0, 7)  # no pass along it
    assert plan((1080, 1920), [Line(1, w5, reflect)], "f32") is None
    assert plan((1080, 1001), [Line(1, w5, reflect)], "df64") is None
    assert plan((1000, 31), [Line(1, w5, reflect)], "f32") is None  # short lines
    assert plan((100, 101), [Line(1, w5, reflect)], "f32") is None  # fewer than SMALL
    assert plan((1080, 1001), [Line(1, w5, reflect), Line(1, w3, reflect)], "f32") is None
    assert plan((1080, 1001), [Line(0, w3, reflect), Line(1, w5, constant)], "f32") is None
    assert plan((1080, 1001), [Line(1, w5, constant), Line(0, w3, reflect)], "f32") == (2, 5)
    assert plan((1000, 101), [Line(1, np.ones(65), reflect)], "f32") is None  # 64 of 101
    # PAD_INTERIOR: where the last axis' pass is in a fused pair, the real columns start a strip
    # and every strip holding them is an interior one (its window inside the padded line).
    monkeypatch.setattr(ndpass, "PAD_INTERIOR", True)
    cols = ndpass.PLANE_COLS
    for n in (1001, 1919, 203, 1025):
        for origin in (-2, 0, 2):
            for taps in (w5, np.ones(17) / 17):
                line = Line(1, taps, reflect, origin)
                chain = [Line(0, w3, reflect), line]
                assert ndpass._pair_along_last((1080, n), chain)
                before, after = plan((1080, n), chain, "f32")
                n1 = before + n + after
                reach = taps.size - 1 - line.centre
                assert n1 % ndpass.PAD_LINES == 0 and before % cols == 0
                assert 0 <= before - line.centre < cols
                last = (before + n - 1) // cols  # the strip of the last real column
                assert (last + 1) * cols + reach <= n1 < (last + 1) * cols + reach + 8
                lo, hi = before // cols, last + 1
                dispatches = ndpass._plane_dispatches((1080, n1), chain[0], line, keep=(before,
                                                      before + n))  # fmt: skip
                assert [dict(d.template)["edge"] for d in dispatches] == ["interior"]
                sel = struct.unpack("<II", dispatches[0].uniforms[48:56])
                assert sel == (lo, hi)
    assert plan((1080, 1001), [Line(1, w5, constant), Line(0, w3, reflect)], "f32") == (16, 15)
    assert plan((1080, 1001), [Line(1, w5, reflect)], "f32") == (2, 5)  # no pair: as before
    assert plan((1080, 1001), [Line(0, w3, reflect)], "f32") == (0, 7)
    # 16 columns before 65 would be over half the line: the plain padding (a border dispatch)
    assert plan((1000, 65), [Line(0, w3, reflect), Line(1, w5, reflect)], "f32") == (2, 5)
    monkeypatch.setattr(ndpass, "PAD_LINES", 0)
    assert plan((1080, 1001), [Line(1, w5, reflect)], "f32") is None


def test_nearby_array_sizes_share_buffers_of_their_size_class(gpu) -> None:
    """Arrays of more than SIZE_CLASS_BYTES run in buffers of their size class (at most 1/8
    larger, multiples of 16, within the largest binding): nearby sizes (a padded 1001-wide image
    under different kernels, 1 MP) share one set of buffers and its texture, each result as
    right as alone; small arrays keep their own size."""
    passes = NdPasses(gpu)
    size = passes.buffer_bytes
    for nbytes in (16, 4096, ndpass.SIZE_CLASS_BYTES, ndpass.SIZE_CLASS_BYTES + 16, 4_036_032,
                   4_194_304, 4_194_320, 8_294_400, 33_177_600):  # fmt: skip
        got = size(nbytes)
        assert got % 16 == 0 and nbytes <= got <= nbytes * 9 // 8, nbytes
        assert got == nbytes or nbytes > ndpass.SIZE_CLASS_BYTES, nbytes
    assert size(4_036_032) == size(4_194_304) == 4_194_304
    capped = NdPasses(gpu, max_binding=4_200_000)
    assert capped.buffer_bytes(4_194_320) == 4_200_000  # its class would pass the binding
    rng = np.random.default_rng(29)
    reflect = Border(BorderMode.REFLECT)
    for shape, taps in [((1001, 1001), 9), ((1001, 1001), 3), ((1024, 1024), 5), ((990, 1020), 7)]:
        x = rng.normal(size=shape).astype(np.float32)
        lines = [Line(0, rng.normal(size=3), reflect), Line(1, rng.normal(size=taps), reflect)]
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
        want = ndreference.correlate1d_chain(x, lines)
        scale = math.prod(float(np.abs(ln.weights).sum()) for ln in lines) * float(np.abs(x).max())
        assert _rel_err(got, want, scale) < 2.0**-18, shape
    assert len(passes._arrays) == 1 and passes.stats["arrays_evicted"] == 0
    assert passes.stats["textures"] <= 1


def test_pair_scaling_is_ldexp_bit_for_bit() -> None:
    """The df64 split's and join's scaling by 2**k (ndpass._times_pow2, a multiply where the
    power of two is an exact float64) equals numpy's ldexp bit for bit: normal, subnormal and
    overflowing results, signed zeros, inf and NaN, k from beyond -1074 to beyond 1023; and
    _split / _join equal the same code with ldexp."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(20000) * 10.0 ** rng.integers(-323, 308, 20000)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                2.2250738585072009e-308, 1.7976931348623157e308, 1.0, 0.75]  # fmt: skip
    x = np.concatenate([x, specials])
    ks = [*range(-1080, -1060), *range(-1030, -1015), *range(-70, 70), *range(1015, 1030),
          -5000, 5000]  # fmt: skip
    with np.errstate(all="ignore"):
        for k in ks:
            got = np.empty_like(x)
            ndpass._times_pow2(x, k, got)
            want = np.ldexp(x, k)
            assert np.array_equal(np.isnan(got), np.isnan(want)), k
            keep = ~np.isnan(want)
            np.testing.assert_array_equal(got[keep].view(np.uint64), want[keep].view(np.uint64))
            inplace = x.copy()
            ndpass._times_pow2(inplace, k, inplace)
            np.testing.assert_array_equal(inplace[keep].view(np.uint64), want[keep].view(np.uint64))
        finite = x[np.isfinite(x)]
        for exponent in (0, 1, -3, 700, -1030, 1024):
            pairs = ndpass._split(finite, exponent)
            scaled = np.ldexp(finite, -exponent)
            hi = scaled.astype(np.float32)
            lo = (scaled - hi).astype(np.float32)
            lo[~np.isfinite(hi) | ~np.isfinite(lo)] = 0.0  # a non-finite value's pair: (x, 0)
            np.testing.assert_array_equal(pairs[:, 0], hi)
            np.testing.assert_array_equal(pairs[:, 1], lo)
            joined = ndpass._join(pairs, exponent)
            want = np.ldexp(pairs[:, 0].astype(np.float64) + pairs[:, 1], exponent)
            np.testing.assert_array_equal(joined, want)


@pytest.mark.parametrize("dtype", [np.float64, np.uint8, np.int16])
def test_pairs_split_and_joined_on_threads_equal_one_thread(monkeypatch, dtype) -> None:
    """Large arrays' pairs are split straight into the upload buffer (ndpass._Pairs.write) and
    joined, both in parts on the copy pool's threads and this one (ndpass._in_parts): the same
    bits as on one thread, Fortran-ordered and non-contiguous inputs, specials and odd sizes
    included; the write touches nothing past the pairs."""
    rng = np.random.default_rng(9)
    if dtype == np.float64:
        x = rng.standard_normal((301, 217)) * 10.0 ** rng.integers(-300, 300, (301, 217))
        x.flat[[3, 77, 5000]] = [np.nan, np.inf, -np.inf]
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (301, 217), endpoint=True).astype(dtype)
    for view in (x, np.asfortranarray(x), x[::2, 1::3]):
        for exponent in (0, 9, -4):
            monkeypatch.setattr(ndpass, "PARALLEL_COPY_BYTES", 1 << 62)
            one = ndpass._split(view, exponent)
            joined_one = ndpass._join(one, exponent)
            monkeypatch.setattr(ndpass, "PARALLEL_COPY_BYTES", 4096)
            target = np.full(view.size * 2 + 8, 7.0, np.float32)
            ndpass._Pairs(view, exponent).write(target)
            np.testing.assert_array_equal(target[:-8], one.reshape(-1))
            assert (target[-8:] == 7.0).all()
            np.testing.assert_array_equal(ndpass._split(view, exponent), one)
            into = np.empty(view.shape, np.float64)
            assert ndpass._join(one, exponent, into) is not None
            np.testing.assert_array_equal(into, joined_one)
            np.testing.assert_array_equal(ndpass._join(one, exponent), joined_one)
            if dtype != np.float64:
                np.testing.assert_array_equal(joined_one, view * 1.0)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_df64_chains_take_small_integers_as_they_are(engine, df64_ok, dtype) -> None:
    """A df64 chain over int8 to uint16 values takes the array as it is (ndpass._SMALL_INTS:
    each pair is the value scaled and 0, made without float64): the same pairs as the float64
    split and the same float64 result, bit for bit, as over the values in float64; a constant
    border larger than the data too."""
    rng = np.random.default_rng(31)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(19, 45), endpoint=True).astype(dtype)
    x[0], x[1] = info.max, info.min
    for exponent in (0, 3, 17, -5):
        np.testing.assert_array_equal(
            ndpass._split(x, exponent), ndpass._split(x.astype(np.float64), exponent)
        )
    w = rng.normal(size=7)
    for border, cval in [(Border(BorderMode.REFLECT), 0.0), (Border(BorderMode.CONSTANT), 1e6)]:
        lines = [Line(0, w, border, cval=cval), Line(1, w[:5], border, 1, cval=cval)]
        ours = correlate1d_chain(x, lines, precision="df64", passes_engine=engine)
        theirs = correlate1d_chain(x.astype(np.float64), lines, precision="df64",
                                   passes_engine=engine)  # fmt: skip
        assert ours.dtype == np.float64
        np.testing.assert_array_equal(ours, theirs)
    assert correlate1d_chain(x[:0], lines, precision="df64").dtype == np.float64


@pytest.mark.parametrize("precision", ["f32", "df64"])
def test_chains_beyond_the_binding_run_in_parts_along_untouched_axes(gpu, df64_ok, precision):
    """An array larger than one binding whose chain leaves an axis alone (a colour image's
    channels, a stack's images) runs the whole chain part by part along it (one channel at a
    time, that axis dropped; blocks of images read back in place), equal to the float64
    reference; a chain along every axis still goes pass by pass over slabs."""
    small = NdPasses(gpu, max_binding=16000)  # 4000 f32 or 2000 df64 elements
    rng = np.random.default_rng(41)
    dtype = np.float32 if precision == "f32" else np.float64
    bound = 1e-12 if precision == "df64" else 2e-5
    rgb = rng.normal(size=(40, 50, 3)).astype(dtype)
    rgb[3, 4, 1] = np.nan
    stack = rng.normal(size=(5, 30, 40)).astype(dtype)
    cases = [
        (rgb, [Line(0, rng.normal(size=5), Border(BorderMode.REFLECT), 1),
               Line(1, rng.normal(size=7), Border(BorderMode.CONSTANT), cval=2.0)]),
        (stack, [Line(2, rng.normal(size=3), Border(BorderMode.WRAP)),
                 Line(1, rng.normal(size=4), Border(BorderMode.MIRROR), -1)]),
    ]  # fmt: skip
    for x, lines in cases:
        parts = small.stats["parts"]
        got = correlate1d_chain(x, lines, precision=precision, passes_engine=small)
        assert small.stats["parts"] == parts + 1
        want = ndreference.correlate1d_chain(x, lines)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        scale = float(np.nanmax(np.abs(want)))
        assert (
            got.dtype == dtype and _rel_err(np.nan_to_num(got), np.nan_to_num(want), scale) < bound
        )
        out = np.full(x.shape, 7.0, dtype)
        assert correlate1d_chain(x, lines, precision=precision, passes_engine=small, out=out) is out
        np.testing.assert_array_equal(out, got)
        # A channel's gather and scatter split between threads: the same bits.
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(ndpass, "PARALLEL_COPY_BYTES", 64)
            threaded = correlate1d_chain(x, lines, precision=precision, passes_engine=small)
        np.testing.assert_array_equal(threaded, got)
    # The axis with the fewest parts: a 12 MP colour image's pass along its rows is three
    # channel planes, not 4001 columns; along its columns, blocks of rows; none past MAX_PARTS.
    w3, reflect = np.ones(3), Border(BorderMode.REFLECT)
    part = ndpass._untouched_part
    assert part((3000, 4001, 3), [Line(0, w3, reflect)], 1 << 25) == (2, 1)
    assert part((3000, 4001, 3), [Line(1, w3, reflect)], 1 << 25) == (0, 2795)
    assert part((3000, 4001, 3), [Line(0, w3, reflect), Line(1, w3, reflect)], 1 << 25) == (2, 1)
    assert part((50, 4001, 3), [Line(1, w3, reflect), Line(2, w3, reflect)], 12003) == (0, 1)
    assert part((65, 4001, 3), [Line(1, w3, reflect), Line(2, w3, reflect)], 12003) is None
    assert part((100, 65, 3), [Line(0, w3, reflect), Line(2, w3, reflect)], 300) is None
    every = [*cases[1][1], Line(0, rng.normal(size=3), Border(BorderMode.REFLECT))]
    parts = small.stats["parts"]
    got = correlate1d_chain(stack, every, precision=precision, passes_engine=small)
    assert small.stats["parts"] == parts
    want = ndreference.correlate1d_chain(stack, every)
    assert _rel_err(got, want, float(np.abs(want).max())) < bound


@pytest.mark.parametrize("mode", list(BorderMode))
def test_colour_images_rows_filtered_channel_by_channel(gpu, mode) -> None:
    """An f32 chain with a pass along an interleaved colour image's rows (axis -2) runs one
    channel plane at a time (ndpass.CHANNEL_PARTS), equal to the float64 reference and to the
    interleaved passes within float32's rounding, NaN where the reference has it, into an
    ``out`` too; a pass along axis 0 alone, a pass along the channels, df64 and small images
    stay interleaved."""
    passes = NdPasses(gpu)
    rng = np.random.default_rng(59)
    border = Border(mode, 0.5 if mode is BorderMode.CONSTANT else 0.0)
    rows, cols = Line(1, rng.normal(size=7), border, 1), Line(0, rng.normal(size=4), border, -1)
    rows_4d = Line(2, rows.weights, border, 1)
    for shape, lines in [((300, 301, 3), [rows]), ((257, 290, 4), [cols, rows]),
                         ((2, 250, 333, 2), [rows_4d, cols])]:  # fmt: skip
        x = rng.normal(size=shape).astype(np.float32)
        x[..., 5, 7, 1] = np.nan
        parts = passes.stats["parts"]
        got = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
        assert passes.stats["parts"] == parts + 1, shape
        want = ndreference.correlate1d_chain(x, lines)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        scale = float(np.nanmax(np.abs(want)))
        assert _rel_err(np.nan_to_num(got), np.nan_to_num(want), scale) < 2e-5
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(ndpass, "CHANNEL_PARTS", 0)
            interleaved = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
        np.testing.assert_allclose(got, interleaved, rtol=0, atol=4e-6 * scale)
        out = np.full(shape, 7.0, np.float32)
        assert correlate1d_chain(x, lines, precision="f32", passes_engine=passes, out=out) is out
        np.testing.assert_array_equal(out, got)
    apart = ndpass._channels_apart
    assert not apart((300, 301, 3), [Line(0, np.ones(3), border)], "f32")
    assert not apart((300, 301, 3), [Line(1, np.ones(3), border), Line(2, np.ones(3), border)],
                     "f32")  # fmt: skip
    assert not apart((300, 301, 3), [rows], "df64")
    assert not apart((30, 31, 3), [rows], "f32")
    assert not apart((300, 301, 5), [rows], "f32")
    assert not apart((300, 301), [rows], "f32")


def test_buffers_mapped_on_the_calling_thread_as_wgpu_maps_them(gpu, monkeypatch) -> None:
    """NdPasses.run maps its buffers on the calling thread (ndpass.MAP_HERE): no poll token, so
    wgpu-py's poll thread is not woken for a call; the buffer's wgpu-py state is what its own
    map_async leaves (write_mapped, read_mapped, unmap and a later map_async work), and the
    values are those of the poll thread's mapping, for float32 and double-float."""
    import wgpu

    device = gpu.device
    usage = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
    src = device.create_buffer(size=64, usage=usage)
    dst = device.create_buffer(size=64, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    data = np.arange(16, dtype=np.float32)
    ndpass._map_here(device, src, "WRITE")
    assert src.map_state == "mapped"
    src.write_mapped(data)
    src.unmap()
    encoder = device.create_command_encoder()
    encoder.copy_buffer_to_buffer(src, 0, dst, 0, 64)
    device.queue.submit([encoder.finish()])
    ndpass._map_here(device, dst, "READ")  # waits for the copy
    assert dst.map_state == "mapped"
    np.testing.assert_array_equal(np.frombuffer(dst.read_mapped(), np.float32), data)
    with pytest.raises(RuntimeError, match="write"):
        dst.write_mapped(data)  # mapped for reading only, as wgpu-py's own mapping would be
    dst.unmap()
    dst.map_async("READ").sync_wait()  # wgpu-py's own mapping after ours
    np.testing.assert_array_equal(np.frombuffer(dst.read_mapped(), np.float32), data)
    dst.unmap()
    with pytest.raises(wgpu.GPUValidationError, match="MAP_READ"):
        ndpass._map_here(device, src, "READ")  # a MAP_WRITE buffer: wgpu refuses, we raise
    assert src.map_state == "unmapped"
    ndpass._map_here(device, src, "WRITE")  # and it still maps as it may
    src.unmap()

    rng = np.random.default_rng(31)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.array([-1.0, 0.0, 1.0]), Border(BorderMode.WRAP))]  # fmt: skip
    poller = device._poller
    for dtype, precision in ((np.float32, "f32"), (np.float64, "df64")):
        x = rng.normal(size=(300, 200)).astype(dtype)
        results = {}
        for here in (False, True):
            monkeypatch.setattr(ndpass, "MAP_HERE", here)
            passes = NdPasses(gpu)
            correlate1d_chain(x, lines, precision=precision, passes_engine=passes)
            passes.wait_baked()
            tokens = poller._token_count
            results[here] = correlate1d_chain(x, lines, precision=precision, passes_engine=passes)
            assert (poller._token_count == tokens) == here
        np.testing.assert_array_equal(results[True], results[False])


def test_padded_columns_copied_in_runs_equal_a_gather() -> None:
    """ndpass._Padded fills the added columns within the target, after the array, by runs of
    columns whose sources go by one step: the same array as gathering each added column's
    source (or the constant), for every border, lines shorter than the padding (several
    reflections), no columns before or after, and no pass along the axis (all constant)."""
    rng = np.random.default_rng(41)
    for n in (1, 5, 64, 65, 1001):
        for before, after in [(0, 7), (2, 5), (16, 15), (3, 0), (20, 20), (0, 0)]:
            for mode in BorderMode:
                x = rng.normal(size=(4, n)).astype(np.float32)
                at = np.r_[np.arange(-before, 0), np.arange(n, n + after)]
                sources = Border(mode).map_indices(at, n)
                runs = ndpass._column_runs(sources, before)
                got = ndpass._Padded(x, before, after, runs, 2.5).array()
                gathered = np.where(sources < 0, np.float32(2.5), x[:, np.maximum(sources, 0)])
                want = np.concatenate([gathered[:, :before], x, gathered[:, before:]], axis=1)
                np.testing.assert_array_equal(got, want, err_msg=f"{n} {before} {after} {mode}")
                assert sum(count for _, count, _, _ in runs) == before + after
                # _padded_chain's cached runs are these
                assert ndpass._pad_runs(n, before, after, mode) == tuple(runs)
                if mode in (BorderMode.REFLECT, BorderMode.CONSTANT) and n >= before + after:
                    assert len(runs) == (before > 0) + (after > 0)  # one run a side
    # Only the columns a kept output reads (`reach`: lo before the line, hi after it): the
    # others keep what the target held.
    cases = [(64, 16, 15, (1, 1)), (5, 20, 20, (2, 7)), (9, 3, 4, (0, 0))]
    for n, before, after, (lo, hi) in cases:
        for mode in [*BorderMode, None]:
            x = rng.normal(size=(3, n)).astype(np.float32)
            runs = ndpass._pad_runs(n, before, after, mode, (lo, hi))
            full = ndpass._Padded(x, before, after, ndpass._pad_runs(n, before, after, mode), 2.5)
            target = np.full((3, before + n + after), 7.0, np.float32)
            ndpass._Padded(x, before, after, runs, 2.5).write(target.reshape(-1))
            read = np.r_[before - lo : before + n + hi]
            np.testing.assert_array_equal(target[:, read], full.array()[:, read])
            np.testing.assert_array_equal(np.delete(target, read, axis=1), 7.0)
            assert sum(count for _, count, _, _ in runs) == lo + hi
    none = ndpass._Padded(np.ones((2, 9), np.float32), 3, 4, ndpass._pad_runs(9, 3, 4, None), 0.0)
    none = none.array()
    np.testing.assert_array_equal(none[:, :3], 0)
    np.testing.assert_array_equal(none[:, -4:], 0)
    assert ndpass._pad_runs(9, 3, 4, None) == tuple(ndpass._column_runs(np.full(7, -1), 3))


def test_the_dispatch_cache_key_follows_every_setting(monkeypatch) -> None:
    """ndpass._knobs(), part of the dispatch cache's key, changes with any module setting:
    a flag, a number, a dict replaced or changed in place, and a value that cannot be hashed
    (keyed by its repr)."""
    base = ndpass._knobs()
    assert ndpass._knobs() == base
    hash(base)
    monkeypatch.setattr(ndpass, "PLANE_SPLIT", not ndpass.PLANE_SPLIT)
    flag = ndpass._knobs()
    assert flag != base
    monkeypatch.setattr(ndpass, "PLANE_ROWS", ndpass.PLANE_ROWS + 1)
    assert ndpass._knobs() not in (base, flag)
    monkeypatch.undo()
    assert ndpass._knobs() == base
    monkeypatch.setitem(ndpass.MAX_TAPS_ROW, "f32", ndpass.MAX_TAPS_ROW["f32"] + 1)
    assert ndpass._knobs() != base
    monkeypatch.undo()
    monkeypatch.setattr(ndpass, "MAX_TAPS_ROW", {**ndpass.MAX_TAPS_ROW, "df64": 1})
    assert ndpass._knobs() != base
    monkeypatch.setattr(ndpass, "PLANE_ROWS", [32])
    listed = ndpass._knobs()
    hash(listed)
    monkeypatch.setattr(ndpass, "PLANE_ROWS", [64])
    assert ndpass._knobs() != listed


def test_a_read_back_waits_for_its_own_submission_not_later_ones(gpu) -> None:
    """ndpass._map_here maps a read-back once the submission that wrote it (ndpass._submit's
    index) is done, not after work submitted after it (another thread's filter on the same
    device, say); without an index it waits for the whole queue. (wgpu's OpenGL backend runs a
    submission's work before the submission returns: there nothing is left to wait for, and
    the mapping must return at once either way.)"""
    import time

    import wgpu

    device = gpu.device
    size = 32 << 20  # the later work: 16 copies of 32 MiB (~60 ms on lavapipe)
    copies = [device.create_buffer(size=size, usage=wgpu.BufferUsage.COPY_SRC
                                   | wgpu.BufferUsage.COPY_DST) for _ in range(2)]  # fmt: skip
    src = device.create_buffer(
        size=64, usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
    )
    dst = device.create_buffer(size=64, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    data = np.arange(16, dtype=np.float32)
    waited, whole, submitting = {}, {}, {}
    for own in (True, False, True):
        ndpass._map_here(device, src, "WRITE")
        src.write_mapped(data * own)
        src.unmap()
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, 0, dst, 0, 64)
        index = ndpass._submit(device, encoder.finish())
        assert isinstance(index, int)
        encoder = device.create_command_encoder()
        for k in range(16):
            encoder.copy_buffer_to_buffer(copies[k % 2], 0, copies[1 - k % 2], 0, size)
        start = time.perf_counter()
        later = ndpass._submit(device, encoder.finish())
        submitting[own] = time.perf_counter() - start
        assert later is not None and later > index
        start = time.perf_counter()
        ndpass._map_here(device, dst, "READ", index if own else None)
        waited[own] = time.perf_counter() - start
        np.testing.assert_array_equal(np.frombuffer(dst.read_mapped(), np.float32), data * own)
        dst.unmap()
        device._poll(True)
        whole[own] = time.perf_counter() - start
    # (the last round: the copies' first run zeroes the buffers, slower than the rest)
    if submitting[True] > whole[True]:  # the copies ran inside the submission (OpenGL)
        assert max(waited.values()) < min(submitting.values()) / 4, (waited, submitting)
        return
    assert waited[True] < whole[True] / 4, (waited, whole)  # the copies ran on after it
    assert waited[False] > whole[False] / 2, (waited, whole)


def test_chains_from_several_threads_beside_the_engine_filter(gpu) -> None:
    """The process's NdPasses called from four threads at once (a Dask worker pool), while a
    thread runs blurapp.filter_image, whose GpuFilter read-backs go through wgpu-py's poll
    thread, on the same device: every chain's result equals the one it gives alone, and so does
    the image's (each call maps on its own thread, ndpass._map_here, and waits for its own
    submission)."""
    from concurrent.futures import ThreadPoolExecutor

    import blurapp

    rng = np.random.default_rng(43)
    reflect = Border(BorderMode.REFLECT)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), reflect), Line(1, np.ones(5) / 5, reflect)]
    arrays = [rng.normal(size=shape).astype(np.float32)
              for shape in [(300, 301), (64, 64), (513, 260), (2, 90, 117)] * 3]  # fmt: skip
    image = rng.random((480, 640, 3)).astype(np.float32)
    alone = [correlate1d_chain(x, lines, precision="f32") for x in arrays]
    image_alone = blurapp.filter_image(image, "gaussian:sigma=3").image

    def chain(k: int) -> np.ndarray:
        return correlate1d_chain(arrays[k], lines, precision="f32", lend=True)

    with ThreadPoolExecutor(5) as pool:
        images = [pool.submit(lambda: blurapp.filter_image(image, "gaussian:sigma=3").image)
                  for _ in range(3)]  # fmt: skip
        for _ in range(3):
            for got, want in zip(pool.map(chain, range(len(arrays))), alone, strict=True):
                np.testing.assert_array_equal(got, want)
        for done in images:
            np.testing.assert_array_equal(done.result(), image_alone)


def test_a_mapping_called_back_late_on_another_thread_is_waited_for(gpu, monkeypatch) -> None:
    """wgpu calls a mapping back in whichever thread's poll finds it done. Where that is another
    thread (wgpu-py's poll thread, another call's _map_here), which runs the callback later, once
    it holds the GIL, the call waits for it rather than give up when its own polls find nothing
    left to do; its result is right and its buffers stay usable. (Before: "Could not map buffer
    (status [])", the buffer mapped after all, then "Buffer is already mapped" on every later
    call, then an abort in a submission: CI's run of stop 46.)"""
    from wgpu.backends.wgpu_native import _api

    rng = np.random.default_rng(53)
    x = rng.normal(size=(120, 70)).astype(np.float32)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.ones(5) / 5, Border(BorderMode.REFLECT))]  # fmt: skip
    passes = NdPasses(gpu)
    want = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    passes.wait_baked()
    map_async = _api.libf.wgpuBufferMapAsync
    relays: list = []  # alive until called
    late: list[threading.Thread] = []

    def called_back_late(buffer, mode, offset, size, info):
        callback = info.callback

        @_api.ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def relay(code, _message, userdata1, userdata2):
            empty = _api.ffi.new("WGPUStringView *")[0]
            thread = threading.Timer(0.05, callback, (code, empty, userdata1, userdata2))
            late.append(thread)
            thread.start()

        relays.append(relay)
        relayed = _api.new_struct("WGPUBufferMapCallbackInfo", mode=info.mode, callback=relay,
                                  userdata1=info.userdata1, userdata2=info.userdata2)  # fmt: skip
        return map_async(buffer, mode, offset, size, relayed)

    monkeypatch.setattr(_api.libf, "wgpuBufferMapAsync", called_back_late)
    for _ in range(2):
        np.testing.assert_array_equal(
            correlate1d_chain(x, lines, precision="f32", passes_engine=passes), want
        )
    monkeypatch.setattr(_api.libf, "wgpuBufferMapAsync", map_async)
    assert late  # the mappings were called back late, on other threads
    for thread in late:
        thread.join()
    for buffers in passes._arrays.values():
        for buffer in (buffers.a, buffers.b):
            assert buffer.map_state == "unmapped"
    np.testing.assert_array_equal(
        correlate1d_chain(x, lines, precision="f32", passes_engine=passes), want
    )


def test_an_interrupted_mapping_leaves_the_engine_usable(gpu, monkeypatch) -> None:
    """Ctrl-C while a call waits for its result (in ndpass._map_here's poll) reaches the caller,
    and the buffer is left unmapped in wgpu as in wgpu-py: the next calls on the same engine
    and buffers give the right result."""
    from wgpu.backends.wgpu_native import _api

    rng = np.random.default_rng(47)
    x = rng.normal(size=(200, 96)).astype(np.float32)
    lines = [Line(0, np.array([0.25, 0.5, 0.25]), Border(BorderMode.REFLECT)),
             Line(1, np.ones(5) / 5, Border(BorderMode.REFLECT))]  # fmt: skip
    passes = NdPasses(gpu)
    correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    passes.wait_baked()
    want = correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    poll = _api.libf.wgpuDevicePoll
    # The calls' polls: the upload's mapping's, then the read-back's (on an adapter whose
    # storage buffers do not map, as wgpu's OpenGL backend, the read-back's only).
    counted: list[int] = []

    def counting(*args):
        counted.append(1)
        return poll(*args)

    monkeypatch.setattr(_api.libf, "wgpuDevicePoll", counting)
    correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
    monkeypatch.setattr(_api.libf, "wgpuDevicePoll", poll)
    assert len(counted) == (2 if "mappable-primary-buffers" in gpu.device.features else 1)
    for nth in range(1, len(counted) + 1):
        calls = []

        def interrupted(*args, nth=nth, calls=calls):
            done = poll(*args)
            calls.append(1)
            if len(calls) == nth:
                raise KeyboardInterrupt
            return done

        monkeypatch.setattr(_api.libf, "wgpuDevicePoll", interrupted)
        with pytest.raises(KeyboardInterrupt):
            correlate1d_chain(x, lines, precision="f32", passes_engine=passes)
        monkeypatch.setattr(_api.libf, "wgpuDevicePoll", poll)
        for buffers in passes._arrays.values():
            for buffer in (buffers.a, buffers.b):
                assert buffer.map_state == "unmapped"
        for _ in range(2):
            np.testing.assert_array_equal(
                correlate1d_chain(x, lines, precision="f32", passes_engine=passes), want
            )
