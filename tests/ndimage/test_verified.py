"""Integer passes that float32 cannot do exactly (a Gaussian over uint8), run in float32 with
the elements near an integer summed again in float64 as scipy sums them (blurapp.ndimage.
_filters' _verified_f32_pass): every result equals scipy's, byte for byte, where the
double-float passes' may be one off (their snap to whole numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as sn
from PIL import Image

import blurapp.ndimage as bn
from blurapp.ndimage import _filters, _gpu

MODES = ("reflect", "grid-mirror", "mirror", "nearest", "wrap", "grid-wrap", "constant",
         "grid-constant")  # fmt: skip
SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "samples"
RNG = np.random.default_rng(61)


def _photo() -> np.ndarray:
    """A grey photo with flat (saturated) regions: the bundled camera sample."""
    return np.asarray(Image.open(SAMPLES / "camera.png").convert("L"))


def _patchy(shape, dtype) -> np.ndarray:
    """Random values with flat patches (whole-number sums), and the dtype's extremes for 8-bit
    integers (16-bit ones stay within ±3000: the float32 pass's error bound grows with the
    values, and at 32767 it sends the pass to double-float)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.3
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -3000), min(info.max, 3000)
    x = RNG.integers(lo, hi, size=shape, endpoint=True)
    flat = RNG.random(shape) < 0.5
    x[flat] = x.flat[0]
    if dtype.itemsize == 1:
        x.flat[::7] = info.max
        x.flat[3::11] = info.min
    return x.astype(dtype)


@pytest.fixture
def ran(monkeypatch):
    """What _verified_f32_pass answered, call by call (True: it stored the pass)."""
    answers: list[bool] = []
    real = _filters._verified_f32_pass

    def spy(*args, **kwargs):
        answers.append(real(*args, **kwargs))
        return answers[-1]

    monkeypatch.setattr(_filters, "_verified_f32_pass", spy)
    return answers


def _bytes(a: np.ndarray) -> np.ndarray:
    """A bool array's bytes (scipy's bools can hold 255), any other array as it is."""
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def _as_scipy(f, *args, **kwargs):
    """bn.f(*args, **kwargs) equals sn.f's, dtype and bytes; returns blurapp's and the
    double-float passes' alone (VERIFIED_F32 off), which are within 1 a pass of it."""
    got = getattr(bn, f)(*args, **kwargs)
    want = getattr(sn, f)(*args, **kwargs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bytes(got), _bytes(want))
    _filters.VERIFIED_F32 = False
    try:
        return got, getattr(bn, f)(*args, **kwargs)
    finally:
        _filters.VERIFIED_F32 = True


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "dtype", ["uint8", "int8", "int16", "uint16", "bool", "int32", "uint32", "int64"]
)
def test_verified_passes_equal_scipy(ran, mode, dtype) -> None:
    """Gaussians, their derivatives (symmetric and antisymmetric weights) and skewed float
    kernels, origins, every axis of a 3-D array, a kernel longer than an axis, into the
    input's dtype (wider integers holding values within ±3000, as numpy's default int64 holds
    an image's): scipy's bytes."""
    x = _patchy((5, 37, 23), dtype)
    w = np.array([0.1, 0.35, 0.3, 0.2, 0.05])
    _as_scipy("gaussian_filter", x, 1.3, mode=mode, cval=2.5)
    _as_scipy("gaussian_filter1d", x, 4.0, axis=0, mode=mode, cval=-1.0)
    _as_scipy("correlate1d", x, w, axis=1, mode=mode, origin=-2)
    _as_scipy("convolve1d", x, w[:4] * 3, axis=-1, mode=mode, origin=1, cval=0.25)
    _as_scipy("gaussian_filter1d", x, 0.7, axis=2, order=1, mode=mode)
    _as_scipy("gaussian_filter1d", x, 1.1, axis=1, order=2, mode=mode)
    # The float32 passes ran, not only the fallback (bools' sums are whole wherever a window
    # is all ones: about a fifth of them here, beyond VERIFY_MAX_SHARE).
    assert any(ran) or dtype == "bool", ran


def test_a_photo_equals_scipy_and_is_mostly_float32(monkeypatch, ran) -> None:
    """The bundled photo (its flat regions too), σ 1 to 4 and a derivative into uint8 (values
    that wrap): scipy's values exactly, through the float32 passes, where double-float's
    differ from scipy's by one at 3 % of the pixels at σ = 2.5."""
    x = _photo()
    for sigma, order in ((1, 0), (2.5, 0), (4, 0), (1.5, 1)):
        ran.clear()
        got, double = _as_scipy("gaussian_filter", x, sigma, order=order)
        # (the derivative's uint8 result, wrapped, is mostly zeros: its smoothing along axis
        # 1 has whole-number sums beyond VERIFY_MAX_SHARE and goes to double-float)
        assert ran[:2] == [True, order == 0], (sigma, order)
        if sigma == 2.5:  # double-float's snap is one above scipy's at 3 % of them
            assert 0.01 < np.mean(double != got) < 0.05
            assert np.abs(double.astype(int) - got).max() == 1


def test_whole_numbers_everywhere_go_back_to_double_float(monkeypatch, ran) -> None:
    """A flat image (every sum a whole number, which float32 cannot place) and a label map
    give the pass back to double-float, with scipy's values."""
    flat = np.full((80, 100), 7, np.uint8)
    labels = np.repeat(np.repeat(RNG.integers(0, 5, (4, 5)), 20, 0), 20, 1).astype(np.uint8)
    for x in (flat, labels):
        ran.clear()
        _as_scipy("gaussian_filter", x, 1.5)
        assert ran == [False, False, False, False]  # then again with VERIFIED_F32 off


def test_outputs_in_place_strided_and_of_another_dtype(ran) -> None:
    """The input as its own output (the sums read it before the store overwrites it), a
    strided output, int8 into uint16 (negative values wrap) and uint8 into bool: scipy's
    bytes."""
    x = _patchy((31, 45), np.uint8)
    signed = _patchy((31, 45), np.int8)
    ours, theirs = x.copy(), x.copy()
    bn.gaussian_filter(ours, 2.0, output=ours)
    sn.gaussian_filter(theirs, 2.0, output=theirs)
    np.testing.assert_array_equal(ours, theirs)
    assert ran == [True, True]
    ours, theirs = (np.zeros((31, 90), np.int16)[:, ::2] for _ in range(2))
    bn.gaussian_filter(x, 1.0, output=ours, mode="wrap")
    sn.gaussian_filter(x, 1.0, output=theirs, mode="wrap")
    np.testing.assert_array_equal(ours, theirs)
    ran.clear()
    _as_scipy("gaussian_filter", signed, 1.2, output=np.uint16)
    _as_scipy("gaussian_filter", x, 0.8, output=bool)
    assert ran.count(True) == 4, ran


def test_where_float32_cannot_be_trusted_double_float_runs(ran) -> None:
    """A border value float32 does not hold (0.1), non-finite weights, int32 values beyond
    2^24, a float output and uint16 values whose error bound spans a fifth of a unit: not
    taken."""
    x = _patchy((9, 12), np.uint8)
    ran.clear()
    np.testing.assert_array_equal(
        bn.correlate1d(x, [0.2, 0.5, 0.3], mode="constant", cval=0.1),
        sn.correlate1d(x, [0.2, 0.5, 0.3], mode="constant", cval=0.1),
    )
    assert ran == [False]
    wide = np.full((90, 120), 65535, np.uint16)
    wide[::2] = 60001
    ran.clear()
    np.testing.assert_array_equal(bn.gaussian_filter1d(wide, 3.0), sn.gaussian_filter1d(wide, 3.0))
    assert ran == [False]
    ran.clear()
    big = x.astype(np.int32)
    big[0, 0] = 2**24 + 1  # beyond what float32 holds exactly
    np.testing.assert_array_equal(bn.gaussian_filter1d(big, 1.0), sn.gaussian_filter1d(big, 1.0))
    bn.gaussian_filter1d(x, 1.0, output=np.float32)
    assert ran == [False, False]
    p = _gpu.Pass(0, np.array([0.5, np.inf, 0.5]), "reflect", 0.0, 0)
    assert not _filters._verified_f32_pass(x, p, np.empty_like(x))


@pytest.mark.parametrize("shape", [(1,), (1, 1), (3, 1), (2, 3), (3, 40)])
def test_tiny_arrays_and_kernels_longer_than_them(ran, shape) -> None:
    """Arrays so small that their whole-number sums are summed again on the host however many
    they are (VERIFY_ALWAYS), under kernels longer than their axes: scipy's bytes."""
    x = _patchy(shape, np.uint8)
    for mode in MODES:
        ran.clear()
        _as_scipy("gaussian_filter", x, 3.0, mode=mode, cval=9.0)
        assert ran[: x.ndim] == [True] * x.ndim


def test_the_error_bound_holds_where_float32_strays_most() -> None:
    """The float32 sums' distance from the float64 ones stays within the bound the pass uses,
    on values that maximise it (the dtype's extremes under long, skewed kernels)."""
    for dtype in (np.uint8, np.int16):
        x = _patchy((64, 300), dtype)
        info = np.iinfo(dtype)
        x[:, ::2] = info.max
        x[:, 1::2] = info.min
        w = RNG.random(41) ** 3
        w /= w.sum()
        p = _gpu.Pass(1, w, "reflect", 0.0, 0)
        v = _gpu.run_passes(x.astype(np.float32), [p], strategy=None).astype(np.float64)
        exact = sn.correlate1d(x.astype(np.float64), w, axis=1, mode="reflect")
        w32 = _gpu.f32_weights(w)
        largest = float(np.abs(x.astype(np.float64)).max())
        bound = float(np.sum(np.abs(w32 - w))) * largest
        bound += 2 * (w.size + 2) * 2.0**-24 * float(np.sum(np.abs(w32))) * largest
        assert np.abs(v - exact).max() <= bound / 2  # the pass doubles it


def test_inputs_strided_reversed_and_big_endian(ran) -> None:
    """Inputs in any layout (a reversed, strided view; Fortran order; big-endian uint16):
    the float32 pass and the host's sums read the same elements, scipy's bytes."""
    x = _patchy((60, 90), np.uint8)
    _as_scipy("gaussian_filter", x[::2, ::-1], 1.4)
    _as_scipy("gaussian_filter", np.asfortranarray(x), 2.2, mode="mirror")
    _as_scipy("gaussian_filter1d", _patchy((60, 90), np.uint16).astype(">u2"), 1.0, axis=0)
    assert ran.count(True) == 5, ran


def test_random_calls_equal_scipy() -> None:
    """150 random calls (1-D to 3-D, every integer dtype the pass takes and bool, flat patches,
    every mode, constants, origins, derivatives, symmetric, skewed and negative kernels,
    correlate1d and convolve1d, outputs of other dtypes): wherever the float32 passes ran,
    scipy's bytes."""
    rng = np.random.default_rng(67)
    verified = 0
    for _ in range(150):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 50, nd))
        dtype = str(rng.choice(["uint8", "int8", "uint16", "int16", "bool", "int32", "int64"]))
        if dtype == "bool":
            x = rng.random(shape) > rng.random()
        else:
            info = np.iinfo(dtype)
            hi = min(info.max, int(rng.choice([10, 255, 3000, info.max])))
            x = rng.integers(max(info.min, -hi), hi, shape, endpoint=True).astype(dtype)
            if rng.random() < 0.5:
                x[rng.random(shape) < 0.6] = x.flat[0]
        kw = {"mode": str(rng.choice(MODES)), "cval": float(rng.choice([0.0, 2.5, -3.0, 0.1])),
              "output": rng.choice([None, "uint8", "int16", "int32", bool])}  # fmt: skip
        axis = int(rng.integers(0, nd))
        size = int(rng.integers(1, 12))
        w = rng.random(size) * float(rng.choice([1, 3, -1]))
        if rng.random() < 0.3:
            w = (w + w[::-1]) / 2
        origin = int(rng.integers(-(size // 2), (size - 1) // 2 + 1))
        name, args = str(rng.choice(["gaussian_filter1d", "gaussian_filter", "correlate1d",
                                     "convolve1d"])), (x,)  # fmt: skip
        if name == "gaussian_filter1d":
            args += (float(rng.choice([0.5, 1, 2.5, 4])),)
            kw |= {"axis": axis, "order": int(rng.integers(0, 3))}
        elif name == "gaussian_filter":
            args += (float(rng.choice([0.7, 1, 2])),)
        else:
            args += (w,)
            kw |= {"axis": axis, "origin": origin}
        answers = []
        real = _filters._verified_f32_pass

        def spy(*a, answers=answers, real=real):
            answers.append(real(*a))
            return answers[-1]

        with pytest.MonkeyPatch.context() as mp, np.errstate(all="ignore"):
            mp.setattr(_filters, "_verified_f32_pass", spy)
            got = getattr(bn, name)(*args, **kw)
            want = getattr(sn, name)(*args, **kw)
        assert got.dtype == want.dtype
        # (where a pass fell back to double-float, its values are test_filters.py's to check
        # against scipy, with that file's slack of one for integer outputs)
        if answers and all(answers):
            verified += 1
            np.testing.assert_array_equal(_bytes(got), _bytes(want), err_msg=f"{name} {kw}")
    assert verified > 60, verified


def test_wide_integers_of_small_values_take_the_float32_passes(monkeypatch) -> None:
    """int32 and int64 arrays whose values float32 holds: integer weights (sobel, the uniform
    filter's sums) run exact in float32, Gaussians verified, none of them wasting a float32
    pass before double-float; a value beyond 2^24 sends them to double-float. scipy's bytes."""
    from blurapp.gpu import ndpass

    precisions: list[str] = []
    real = ndpass.correlate1d_chain

    def counting(x, passes, *, precision, **kw):
        precisions.append(precision)
        return real(x, passes, precision=precision, **kw)

    monkeypatch.setattr(ndpass, "correlate1d_chain", counting)
    for dtype in (np.int32, np.int64, np.uint32):
        x = _patchy((40, 70), dtype)
        # (not sobel into uint32: its negative first pass wraps to ~2^32, beyond float32's
        # integers, so its second pass runs in double-float; test_filters.py's
        # test_uint32_outputs_wrap_as_scipy_casts_on_arrays_of_any_size checks its values)
        calls = [("uniform_filter", (5,)), ("gaussian_filter", (1.5,))]
        for name, args in calls + [("sobel", (0,))] * (dtype != np.uint32):
            precisions.clear()
            _as_scipy(name, x, *args)
            assert precisions[:2] == ["f32", "f32"], (dtype, name, precisions)
        big = x.copy()
        big[0, 0] = 2**24 + 3
        for name, args in [("gaussian_filter", (1.5,))] + [("sobel", (0,))] * (dtype != np.uint32):
            precisions.clear()
            got = getattr(bn, name)(big, *args)
            assert precisions == ["df64", "df64"], (dtype, name, precisions)
            want = getattr(sn, name)(big, *args)
            assert np.abs(got.astype(np.float64) - want).max() <= 2  # double-float's slack
