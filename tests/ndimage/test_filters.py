"""blurapp.ndimage against scipy.ndimage: every function × mode × dtype × origin on awkward
shapes (1 element, odd sides, a kernel longer than the axis, 1-D to 4-D), array layouts,
output arguments and casting, exceptions, and how the passes reach the GPU."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage as sn

import blurapp.ndimage as bn

MODES = ("reflect", "grid-mirror", "mirror", "nearest", "wrap", "grid-wrap", "constant",
         "grid-constant")  # fmt: skip
SHAPES = ((1,), (7,), (1, 1), (3, 5), (4, 1, 6), (2, 3, 4, 5))
RNG = np.random.default_rng(23)


def _data(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return (RNG.standard_normal(shape) * 10).astype(dtype)


def _close(ours: np.ndarray, theirs: np.ndarray, scale: float, *, int_slack=0) -> None:
    """ours equals scipy's: exactly for integers and bools, within the arithmetic's error
    for floats (float64: double-float's 1e-12 of scale; float32/float16: their own steps)."""
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    if theirs.dtype.kind in "biu":
        if not int_slack:
            np.testing.assert_array_equal(ours, theirs)
        else:
            # Weights that are not integers (a Gaussian's): scipy's double sum and ours differ
            # in their last bits, so a result within ~1e-13 of an integer (all of them along
            # an axis of length 1, where the sum is x times 0.9999999999999999) may truncate
            # to the other side of it: at most 1 apart a pass (docs/NDIMAGE.md). The same
            # filters into float64 are compared to 1e-12 in the float64 cases.
            diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
            assert diff.max(initial=0) <= int_slack
        return
    eps = {8: 1e-12, 4: 2e-6, 2: 2e-3}[theirs.real.dtype.itemsize]
    np.testing.assert_allclose(ours, theirs, rtol=eps, atol=eps * max(scale, 1.0))


def _scale(x: np.ndarray, *weights) -> float:
    total = float(np.max(np.abs(x), initial=0)) if x.size else 0.0
    for w in weights:
        total *= float(np.sum(np.abs(w)))
    return total


# --------------------------------------------------------------------------- families


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int64", "float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_correlate1d_and_convolve1d(mode, dtype):
    for shape in SHAPES:
        x = _data(shape, dtype)
        for weights, origin in (([1, 2, -1], 0), ([3, -1, 2, 5], -2), ([1, 0, 2, 1, -1], 2)):
            for axis in (-1, 0):
                kw = dict(axis=axis, mode=mode, cval=2.5, origin=origin)
                s = _scale(x, weights)
                _close(bn.correlate1d(x, weights, **kw), sn.correlate1d(x, weights, **kw), s)
                kw["origin"] = -origin - (1 - len(weights) % 2) if origin else 0
                _close(bn.convolve1d(x, weights, **kw), sn.convolve1d(x, weights, **kw), s)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_correlate_and_convolve(mode, dtype):
    for shape in SHAPES:
        x = _data(shape, dtype)
        ndim = x.ndim
        w = RNG.integers(-3, 4, size=(3, 2, 4, 2)[:ndim]).astype(np.float64)
        w.flat[0] = 1.0  # never all zeros
        origins = [(-1, 0, 1, 0)[i] if w.shape[i] > 1 else 0 for i in range(ndim)]
        for origin in (0, origins):
            kw = dict(mode=mode, cval=-1.0, origin=origin)
            s = _scale(x, w)
            _close(bn.correlate(x, w, **kw), sn.correlate(x, w, **kw), s)
            _close(bn.convolve(x, w, **kw), sn.convolve(x, w, **kw), s)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_gaussian_filter(mode, dtype):
    for shape in SHAPES:
        x = _data(shape, dtype)
        s = _scale(x)
        for sigma, order in ((1.0, 0), (0.7, 1), (1.5, 2), (2.0, 3)):
            kw = dict(mode=mode, cval=0.5)
            ours = bn.gaussian_filter(x, sigma, order, **kw)
            # derivatives of order k grow as sigma^-k: their scale is the weights' sum
            w = sn._filters._gaussian_kernel1d(sigma, order, int(4 * sigma + 0.5))
            scale = s * float(np.sum(np.abs(w))) ** x.ndim
            theirs = sn.gaussian_filter(x, sigma, order, **kw)
            # a unit that one pass truncates the other way is amplified by the passes after it
            slack = sum((1 + float(np.sum(np.abs(w)))) ** k for k in range(x.ndim))
            _close(ours, theirs, scale, int_slack=slack)
            ours1 = bn.gaussian_filter1d(x, sigma, 0, order, **kw)
            theirs1 = sn.gaussian_filter1d(x, sigma, 0, order, **kw)
            _close(ours1, theirs1, s * float(np.sum(np.abs(w))), int_slack=1)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_uniform_filter(mode, dtype):
    for shape in SHAPES:
        x = _data(shape, dtype)
        s = _scale(x)
        for size, origin in ((3, 0), (4, -1), (2, 0), (9, 3)):
            kw = dict(mode=mode, cval=1.5, origin=origin)
            _close(bn.uniform_filter(x, size, **kw), sn.uniform_filter(x, size, **kw), s)
            _close(bn.uniform_filter1d(x, size, **kw), sn.uniform_filter1d(x, size, **kw), s)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_derivatives(mode, dtype):
    for shape in SHAPES:
        x = _data(shape, dtype)
        s = _scale(x) * 4**x.ndim
        for f in ("sobel", "prewitt"):
            for axis in range(-x.ndim, x.ndim):
                kw = dict(axis=axis, mode=mode, cval=3.0)
                _close(getattr(bn, f)(x, **kw), getattr(sn, f)(x, **kw), s)
        _close(bn.laplace(x, mode=mode, cval=3.0), sn.laplace(x, mode=mode, cval=3.0), s)


@pytest.mark.parametrize("dtype", ["int16", "float32", "float64"])
@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
def test_gaussian_laplace_and_gradient_magnitude(mode, dtype):
    for shape in SHAPES:
        x = _data(shape, dtype)
        s = _scale(x) * 4
        # integer outputs: each term's passes truncate, and a unit flipped in one is amplified
        # by the second-derivative pass after it (sum |w| at sigma 0.8), in every term
        w2 = float(np.sum(np.abs(sn._filters._gaussian_kernel1d(0.8, 2, 3))))
        slack = x.ndim * (1 + w2) ** x.ndim
        for sigma in (1.0, [0.8, 1.3, 1.0, 2.0][: x.ndim]):
            kw = dict(mode=mode, cval=1.0)
            _close(
                bn.gaussian_laplace(x, sigma, **kw), sn.gaussian_laplace(x, sigma, **kw), s,
                int_slack=slack,
            )  # fmt: skip
            _close(
                bn.gaussian_gradient_magnitude(x, sigma, **kw),
                sn.gaussian_gradient_magnitude(x, sigma, **kw), s, int_slack=slack,
            )  # fmt: skip


def test_generic_laplace_and_gradient_magnitude_take_our_derivatives():
    x = _data((6, 7, 5), "float64")

    def d2(input, axis, output, mode, cval):
        return bn.correlate1d(input, [1, -2, 1], axis, output, mode, cval)

    def d1(input, axis, output, mode, cval):
        return bn.correlate1d(input, [-1, 0, 1], axis, output, mode, cval)

    s = _scale(x) * 4
    _close(bn.generic_laplace(x, d2, mode="wrap"), sn.laplace(x, mode="wrap"), s)
    expected = np.sqrt(sum(sn.correlate1d(x, [-1, 0, 1], a, mode="mirror") ** 2 for a in range(3)))
    _close(bn.generic_gradient_magnitude(x, d1, mode="mirror"), expected, s * s)
    _close(bn.generic_laplace(x, d2, axes=(0, 2)), sn.laplace(x, axes=(0, 2)), s)


# --------------------------------------------------------------------------- per-axis arguments


def test_per_axis_sequences_and_axes():
    x = _data((5, 6, 7), "float64")
    s = _scale(x) * 8
    kw = dict(sigma=[1.0, 0.5, 2.0], order=[0, 1, 2], mode=["reflect", "nearest", "wrap"],
              radius=[3, 2, 5])  # fmt: skip
    _close(bn.gaussian_filter(x, **kw), sn.gaussian_filter(x, **kw), s)
    kw = dict(sigma=[1.5, 0.7], order=[1, 0], mode=["mirror", "constant"], axes=(2, 0), cval=2.0)
    _close(bn.gaussian_filter(x, **kw), sn.gaussian_filter(x, **kw), s)
    kw = dict(size=[3, 4], origin=[1, -2], mode=["wrap", "constant"], axes=(-1, 1), cval=-1.0)
    _close(bn.uniform_filter(x, **kw), sn.uniform_filter(x, **kw), s)
    w = np.arange(6.0).reshape(2, 3) - 2
    kw = dict(axes=(0, 2), origin=(-1, 1), mode="nearest")
    _close(bn.correlate(x, w, **kw), sn.correlate(x, w, **kw), s)
    _close(bn.convolve(x, w, **kw), sn.convolve(x, w, **kw), s)
    kw = dict(mode=["reflect", "wrap", "constant"], cval=4.0)
    _close(bn.sobel(x, 1, **kw), sn.sobel(x, 1, **kw), s)
    _close(bn.laplace(x, **kw), sn.laplace(x, **kw), s)
    _close(bn.gaussian_laplace(x, 1.0, axes=(1,)), sn.gaussian_laplace(x, 1.0, axes=(1,)), s)


def test_truncate_and_radius_and_sigma_zero():
    x = _data((40,), "float64")
    s = _scale(x)
    for kw in (dict(truncate=2.0), dict(radius=7), dict(radius=0), dict(truncate=0.1)):
        _close(bn.gaussian_filter1d(x, 2.0, **kw), sn.gaussian_filter1d(x, 2.0, **kw), s)
        _close(bn.gaussian_filter(x, 2.0, **kw), sn.gaussian_filter(x, 2.0, **kw), s)
    # sigma 0 on every axis is a copy, as in scipy
    y = _data((4, 5), "int16")
    np.testing.assert_array_equal(bn.gaussian_filter(y, 0), y)
    np.testing.assert_array_equal(bn.uniform_filter(y, 1), y)


def test_kernel_longer_than_the_axis_repeats_its_reflections():
    x = _data((3, 2), "float64")
    w = np.linspace(-1.0, 2.0, 11)
    for mode in MODES:
        for axis in (0, 1):
            kw = dict(axis=axis, mode=mode)
            _close(bn.correlate1d(x, w, **kw), sn.correlate1d(x, w, **kw), _scale(x, w))
        _close(bn.gaussian_filter(x, 4.0, mode=mode), sn.gaussian_filter(x, 4.0, mode=mode), 1)


# --------------------------------------------------------------------------- non-finite values


@pytest.mark.parametrize("cval", [np.nan, np.inf, -np.inf, 1e39, -1e300, 1e20])
def test_constant_cval_beyond_float32(cval):
    # float32 data is computed in float32, where a cval beyond its range is ±inf (as cupyx);
    # float64 data takes any cval, however far it is from the data's values.
    for dtype in ("float32", "float64") if not 3e38 < abs(cval) < np.inf else ("float64",):
        x = _data((5, 6), dtype)
        kw = dict(mode="constant", cval=cval)
        w3 = np.full(3, 1 / 3)
        with np.errstate(all="ignore"):
            cases = [
                (bn.correlate1d(x, [1.0, 0, 2], **kw), sn.correlate1d(x, [1.0, 0, 2], **kw)),
                (bn.correlate(x, np.ones((3, 2)), **kw), sn.correlate(x, np.ones((3, 2)), **kw)),
                (bn.gaussian_filter(x, 1.0, **kw), sn.gaussian_filter(x, 1.0, **kw)),
                # scipy's uniform filter is a running sum, along which one Inf makes NaN of
                # the rest of the line (inf - inf); ours reads each window: the reference is
                # the same mean as correlations (docs/NDIMAGE.md)
                (bn.uniform_filter(x, 3, **kw),
                 sn.correlate1d(sn.correlate1d(x, w3, 0, **kw), w3, 1, **kw)),
            ]  # fmt: skip
        for ours, theirs in cases:
            assert np.array_equal(np.isnan(ours), np.isnan(theirs))
            assert np.array_equal(np.isinf(ours), np.isinf(theirs))
            finite = np.isfinite(theirs)
            scale = float(np.max(np.abs(x))) * 6
            np.testing.assert_allclose(ours[finite], theirs[finite], rtol=2e-6, atol=2e-6 * scale)


def test_nan_and_inf_inputs_as_scipy():
    x = _data((6, 7), "float64")
    x[2, 3] = np.nan
    x[4, 1] = np.inf
    # correlate1d multiplies every tap (a NaN under a zero weight spreads); correlate skips
    # zero weights (it does not).
    for f, args in (("correlate1d", ([1.0, 0.0, 2.0],)), ("correlate", (np.eye(3),)),
                    ("gaussian_filter", (1.0,)), ("sobel", ()), ("laplace", ())):  # fmt: skip
        with np.errstate(all="ignore"):
            ours, theirs = getattr(bn, f)(x, *args), getattr(sn, f)(x, *args)
        assert np.array_equal(np.isnan(ours), np.isnan(theirs)), f
        assert np.array_equal(np.isposinf(ours), np.isposinf(theirs)), f
        finite = np.isfinite(theirs)
        np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-12, atol=1e-9)


# --------------------------------------------------------------------------- arrays and outputs


def test_layouts_views_read_only_and_memmaps(tmp_path):
    base = _data((9, 8, 7), "float32")
    views = {
        "fortran": np.asfortranarray(base),
        "reversed": base[::-1, :, ::-2],
        "transposed": base.transpose(2, 0, 1),
        "strided": base[1::2, ::3],
    }
    ro = base.copy()
    ro.setflags(write=False)
    views["read-only"] = ro
    path = tmp_path / "a.dat"
    mm = np.memmap(path, dtype=np.float32, mode="w+", shape=base.shape)
    mm[...] = base
    mm.flush()
    views["memmap"] = np.memmap(path, dtype=np.float32, mode="r", shape=base.shape)
    for name, v in views.items():
        s = _scale(v) * 8
        _close(bn.gaussian_filter(v, 1.2), sn.gaussian_filter(v, 1.2), s)
        _close(bn.sobel(v, 0), sn.sobel(v, 0), s)
        w = np.ones((2, 3, 1)[: v.ndim])
        _close(bn.correlate(v, w), sn.correlate(v, w), s), name


def test_output_as_dtype_array_and_the_input_itself():
    x = _data((6, 9), "float64")
    for out in (np.float32, "float32", np.dtype(np.int16), "uint8", np.float64):
        ours = bn.gaussian_filter(x, 1.0, output=out)
        theirs = sn.gaussian_filter(x, 1.0, output=out)
        _close(ours, theirs, _scale(x), int_slack=x.ndim)
    for dtype in (np.int32, np.float32):
        o1, o2 = np.zeros(x.shape, dtype), np.zeros(x.shape, dtype)
        r = bn.sobel(x, 0, output=o1)
        sn.sobel(x, 0, output=o2)
        assert r is o1
        _close(o1, o2, _scale(x) * 8)
    # the input itself as the output, as scipy allows
    cases = (("correlate", (np.ones((3, 3)),)), ("correlate1d", ([1, 2, 3],)),
             ("gaussian_filter", (1.5,)), ("uniform_filter", (4,)), ("prewitt", ()))  # fmt: skip
    for f, args in cases:
        a, b = x.copy(), x.copy()
        getattr(bn, f)(a, *args, output=a)
        getattr(sn, f)(b, *args, output=b)
        _close(a, b, _scale(x) * 16)
    # a multi-axis filter into integers truncates after each pass, as scipy's does
    y = _data((7, 8), "float64") * 3
    for out in (np.uint8, np.int16):
        _close(bn.uniform_filter(y, 3, output=out), sn.uniform_filter(y, 3, output=out), 1)
        _close(bn.sobel(y, output=out), sn.sobel(y, output=out), 1)


def test_integer_truncation_on_exact_values():
    # sums that are integers in exact arithmetic truncate to themselves, as in scipy (float32
    # arithmetic would give 2.9999998 -> 2)
    x = np.repeat([0, 1, 0], [9, 9, 9])
    for size in range(3, 10):
        assert bn.uniform_filter1d(x, size).sum() == 10 - size
    x = (np.arange(60) % 7).astype(np.uint8).reshape(6, 10)
    _close(bn.uniform_filter(x, 3), sn.uniform_filter(x, 3), 1)
    _close(bn.correlate(x, np.ones((3, 3))), sn.correlate(x, np.ones((3, 3))), 1)


def test_big_integers_are_computed_in_double():
    x = np.array([2**40 + 1, 2**40 + 3, 2**40 + 5, 7], dtype=np.int64)
    np.testing.assert_array_equal(bn.correlate1d(x, [1, 1]), sn.correlate1d(x, [1, 1]))


def test_complex_inputs_and_weights():
    x = _data((5, 6), "float64") + 1j * _data((5, 6), "float64")
    w = np.array([[1 + 2j, 0.5], [-1j, 2]])
    for f in ("correlate", "convolve"):
        _close(getattr(bn, f)(x, w), getattr(sn, f)(x, w), _scale(x, w))
        _close(getattr(bn, f)(x.real, w), getattr(sn, f)(x.real, w), _scale(x, w))
        _close(getattr(bn, f)(x, w.real), getattr(sn, f)(x, w.real), _scale(x, w))
    w1 = np.array([1 - 1j, 2, 0.5j])
    for f in ("correlate1d", "convolve1d"):
        _close(getattr(bn, f)(x, w1), getattr(sn, f)(x, w1), _scale(x, w1))
    c64 = x.astype(np.complex64)
    _close(bn.uniform_filter(c64, 3), sn.uniform_filter(c64, 3), _scale(x))
    _close(bn.gaussian_filter(x, 1.0), sn.gaussian_filter(x, 1.0), _scale(x))
    with pytest.warns(UserWarning, match="promoting specified output dtype to complex"):
        bn.correlate(x, w, output=np.float64)


def test_float16_is_filtered_in_float32():
    # scipy refuses float16 (RuntimeError); blurapp.ndimage filters it in float32, as cupyx
    x = _data((6, 7), "float16")
    ours = bn.gaussian_filter(x, 1.0)
    assert ours.dtype == np.float16
    expected = sn.gaussian_filter(x.astype(np.float32), 1.0).astype(np.float16)
    np.testing.assert_allclose(ours.astype(np.float32), expected.astype(np.float32), rtol=2e-3,
                               atol=1e-2)  # fmt: skip


def test_empty_and_zero_d():
    for shape in ((0,), (3, 0)):
        x = np.zeros(shape, np.float32)
        assert bn.gaussian_filter(x, 1).shape == shape
        assert bn.correlate1d(x, [1, 2]).shape == shape
        assert bn.correlate(x, np.ones((1,) * x.ndim)).shape == shape


# --------------------------------------------------------------------------- bad arguments


def _same_exception(name, *args, **kwargs):
    with pytest.raises(Exception) as theirs:
        getattr(sn, name)(*args, **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(bn, name)(*args, **kwargs)
    assert str(ours.value).strip(), "the message names the problem"


def test_exceptions_are_scipys():
    x = np.zeros((4, 5))
    _same_exception("correlate1d", x, [1, 2], mode="bogus")
    _same_exception("correlate1d", x, [1, 2, 3], origin=2)
    _same_exception("correlate1d", x, [])
    _same_exception("correlate1d", x, [[1, 2]])
    _same_exception("correlate1d", x, [1, 2], axis=2)
    _same_exception("correlate1d", x, [1, 2], cval=1j)
    _same_exception("correlate1d", x, [1, 2], output=np.zeros((3, 3)))
    _same_exception("correlate", x, np.ones((3,)))
    _same_exception("correlate", x, np.ones((3, 3)), origin=(0, 2))
    _same_exception("correlate", x, np.ones((3, 3)), mode=["reflect", "wrap"])
    _same_exception("correlate", x, np.ones((3, 3)), origin=(0, 0, 0))
    _same_exception("convolve", x, np.ones((3, 3)), axes=(0, 0))
    _same_exception("convolve", x, np.ones((3,)), axes=(2,))
    _same_exception("gaussian_filter", x, [1, 2, 3])
    _same_exception("gaussian_filter", x, 1, order=-1)
    _same_exception("gaussian_filter1d", x, 1, radius=-1)
    _same_exception("gaussian_filter1d", x, 1, radius=1.5)
    _same_exception("gaussian_filter", x, 1, axes=(0, 0))
    _same_exception("uniform_filter1d", x, 0)
    _same_exception("uniform_filter1d", x, 3, origin=2)
    _same_exception("uniform_filter", x, (3, 3, 3))
    _same_exception("sobel", x, axis=3)
    _same_exception("prewitt", x, mode=["reflect"])
    _same_exception("laplace", x, mode="nope")
    _same_exception("correlate1d", np.zeros(3, dtype=object), [1])
    _same_exception("correlate", x + 0j, np.ones((2, 2)), output=np.zeros((4, 5)))
    _same_exception("correlate1d", x, [1, 2, 3], axis=1.5)
    _same_exception("correlate1d", x, [1, 2, 3], cval="a")
    _same_exception("correlate", x, np.ones((3, 3)), origin=0.5)
    _same_exception("correlate", x, np.ones((3, 3)), cval=[1, 2])
    _same_exception("uniform_filter", x, 3, origin=0.5)
    _same_exception("uniform_filter1d", x, 2.5)
    _same_exception("gaussian_filter", x, "a")
    _same_exception("sobel", x, axis=0.5)
    _same_exception("laplace", x, cval=None)
    _same_exception("correlate1d", x, [1, 2], output="U3")
    _same_exception("correlate1d", x, [1, 2], mode=3)
    with pytest.raises(ValueError, match="unknown strategy"):
        bn.gaussian_filter(x, 1, strategy="nonsense")


# --------------------------------------------------------------------------- the GPU side


def test_import_brings_no_scipy():
    code = (
        "import sys, blurapp.ndimage\n"
        "bad = [m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_multi_axis_passes_run_as_one_chain(monkeypatch):
    """A float32 or float64 multi-axis filter is one correlate1d_chain call (its passes run
    on the GPU one after another, no host round trip); integer outputs pass by pass."""
    from blurapp.gpu import ndpass
    from blurapp.ndimage import _filters

    calls = []
    real = ndpass.correlate1d_chain

    def counting(x, passes, *, precision, **kw):
        calls.append((x.dtype, len(passes), precision))
        return real(x, passes, precision=precision, **kw)

    monkeypatch.setattr(ndpass, "correlate1d_chain", counting)
    x = _data((5, 6, 7), "float32")
    bn.gaussian_filter(x, 1.0)
    assert calls == [(np.float32, 3, "f32")]
    calls.clear()
    bn.sobel(x.astype(np.float64), 1)
    assert calls == [(np.float64, 3, "df64")]
    calls.clear()
    bn.uniform_filter(x.astype(np.uint8), 3)
    # Integer sums within 2**24, exact in float32: pass by pass (scipy casts after each).
    assert calls == [(np.float32, 1, "f32")] * 3
    calls.clear()
    bn.gaussian_filter(x.astype(np.uint8), 1.0)
    # Other weights in float32, the sums near an integer again on the host (test_verified).
    assert calls == [(np.float32, 1, "f32")] * 3
    calls.clear()
    monkeypatch.setattr(_filters, "VERIFIED_F32", False)
    bn.gaussian_filter(x.astype(np.uint8), 1.0)
    # Or in double-float, the uint8 values as they are (no float64 copy).
    assert calls == [(np.uint8, 1, "df64")] * 3


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "bool"])
def test_integer_sums_run_in_float32_bit_for_bit(monkeypatch, dtype):
    """Passes of integer weights (sobel, prewitt, laplace, a uniform filter's sum, any integer
    correlate1d) over int8 to uint16 values whose partial sums stay within 2**24 run in
    float32, exact: scipy's values bit for bit, for every mode, the dtype's extremes and
    constant borders of integer values; a fractional or too large constant, or sums beyond
    2**24, run in double-float as before."""
    from blurapp.gpu import ndpass
    from blurapp.ndimage import _filters

    precisions = []
    real = ndpass.correlate1d_chain

    def counting(x, passes, *, precision, **kw):
        precisions.append(precision)
        return real(x, passes, precision=precision, **kw)

    monkeypatch.setattr(ndpass, "correlate1d_chain", counting)
    # Which passes are exact in float32 (not the verified float32 passes of test_verified.py,
    # which would take the fractional constants' passes too).
    monkeypatch.setattr(_filters, "VERIFIED_F32", False)
    x = _data((23, 61), dtype)
    if dtype != "bool":
        info = np.iinfo(dtype)
        x[:3], x[3:6] = info.max, info.min
    calls = {
        "sobel": lambda m, **kw: m.sobel(x, 1, **kw),
        "prewitt": lambda m, **kw: m.prewitt(x, 0, **kw),
        "laplace": lambda m, **kw: m.laplace(x, **kw),
        "uniform": lambda m, **kw: m.uniform_filter(x, (3, 5), **kw),
        "correlate1d": lambda m, **kw: m.correlate1d(x, [3, -7, 2, 100], 1, origin=1, **kw),
    }
    for mode in ["reflect", "mirror", "nearest", "wrap", "constant", "grid-constant"]:
        for cval, exact in [(0.0, True), (-300.0, True), (0.5, False), (2.0**24, False)]:
            for name, call in calls.items():
                precisions.clear()
                with np.errstate(all="ignore"):
                    theirs = call(sn, mode=mode, cval=cval)
                    ours = call(bn, mode=mode, cval=cval)
                np.testing.assert_array_equal(ours, theirs, err_msg=f"{name} {mode} {cval}")
                assert ours.dtype == theirs.dtype
                f32 = exact or "constant" not in mode
                assert set(precisions) == {"f32" if f32 else "df64"}, (name, mode, cval)
    wide = x.astype(np.uint16) * 0 + 65535  # a 300-tap sum of 65535s passes 2**24
    precisions.clear()
    np.testing.assert_array_equal(
        bn.uniform_filter1d(wide, 300, 1), sn.uniform_filter1d(wide, 300, 1)
    )
    assert precisions == ["df64"]


def test_strategy_runs_the_engine_and_agrees():
    x = _data((33, 40), "float32")
    s = _scale(x) * 8
    for strategy in ("direct", "tiled", "separable", "transpose"):
        _close(bn.gaussian_filter(x, 1.5, strategy=strategy), sn.gaussian_filter(x, 1.5), s)
        _close(bn.correlate(x, np.ones((3, 4)), strategy=strategy, mode="wrap"),
               sn.correlate(x, np.ones((3, 4)), mode="wrap"), s)  # fmt: skip
    with pytest.raises(ValueError, match="unknown strategy"):
        bn.correlate(x, np.ones((2, 2)), strategy="magic")


@pytest.mark.parametrize("name", bn.__all__)
def test_signature_is_scipys(name):
    """Every parameter's name, kind and default as scipy's; ``strategy`` is ours, keyword-only
    with None (the default GPU passes), where the function takes it."""
    import inspect

    theirs = inspect.signature(getattr(sn, name)).parameters.values()
    ours = inspect.signature(getattr(bn, name)).parameters
    assert [(p.name, p.kind, p.default) for p in theirs] == [
        (p.name, p.kind, p.default) for p in ours.values() if p.name != "strategy"
    ]
    if "strategy" in ours:
        assert ours["strategy"].kind is inspect.Parameter.KEYWORD_ONLY
        assert ours["strategy"].default is None


def test_docstring_examples():
    """The examples in the docstrings (scipy's outputs, also for integer results that exact
    arithmetic puts on an integer: the Gaussian of a ramp)."""
    import doctest

    from blurapp.ndimage import _filters

    result = doctest.testmod(_filters, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10
    assert result.failed == 0
    x = np.arange(50, step=2).reshape((5, 5))
    np.testing.assert_array_equal(bn.gaussian_filter(x, sigma=1), sn.gaussian_filter(x, sigma=1))


def test_multiple_modes_equal_the_1d_passes_in_turn():
    """The linear part of scipy's test_multiple_modes_sequentially (whose last part needs
    maximum_filter1d): a per-axis mode sequence equals the 1-D filters one after another.
    Equal to double-float's last bits, not bit for bit: the chain keeps its pairs between
    passes, the 1-D calls round each pass to float64."""
    arr = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    modes = ["reflect", "wrap"]
    expected = bn.gaussian_filter1d(arr, 1, axis=0, mode=modes[0])
    expected = bn.gaussian_filter1d(expected, 1, axis=1, mode=modes[1])
    np.testing.assert_allclose(bn.gaussian_filter(arr, 1, mode=modes), expected, atol=1e-14)
    expected = bn.uniform_filter1d(arr, 5, axis=0, mode=modes[0])
    expected = bn.uniform_filter1d(expected, 5, axis=1, mode=modes[1])
    np.testing.assert_allclose(bn.uniform_filter(arr, 5, mode=modes), expected, atol=1e-14)
    np.testing.assert_allclose(expected, sn.uniform_filter(arr, 5, mode=modes), atol=1e-14)


def test_bool_through_several_passes_as_scipy():
    """A bool output holds scipy's C cast (a byte: -1 is 255) between passes, and the next
    pass reads that byte, as scipy's does (found by a random comparison with scipy)."""
    for shape in ((4, 3), (5, 4, 3), (2, 5, 2, 6)):
        x = _data(shape, "bool")
        for axis in range(x.ndim):
            for mode in ("nearest", "wrap", "constant"):
                for f in ("sobel", "prewitt"):
                    kw = dict(axis=axis, mode=mode, cval=1.5)
                    _close(getattr(bn, f)(x, **kw), getattr(sn, f)(x, **kw), 1)
        _close(bn.uniform_filter(x, 3), sn.uniform_filter(x, 3), 1)


def test_new_float32_results_are_the_gpu_buffers_and_outputs_are_written():
    """``output=None`` (or a dtype): a float32 result may be the GPU buffer's own memory on a
    software adapter (ndpass.LEND_RESULTS), equal to scipy and the caller's to keep and write;
    an output array, a filter's inner calls (complex values, integer outputs, generic_laplace's
    derivative writing into its output) and the input as its own output are written into."""
    from blurapp.gpu import ndpass

    engine = ndpass.get_passes()
    x = (RNG.standard_normal((40, 64)) * 10).astype(np.float32)
    lent = engine.stats["lent"]
    results = [bn.gaussian_filter(x, s) for s in (1.0, 2.0, 3.0)]
    results.append(bn.uniform_filter(x, 5, output=np.float32))
    w = RNG.standard_normal((5, 4))
    results += [bn.sobel(x), bn.correlate(x, w)]
    wants = [sn.gaussian_filter(x, s) for s in (1.0, 2.0, 3.0)]
    wants += [sn.uniform_filter(x, 5, output=np.float32), sn.sobel(x), sn.correlate(x, w)]
    for ours, theirs in zip(results, wants, strict=True):
        _close(ours, theirs, float(np.abs(x).max()) * 4)
        assert ours.flags.writeable
    info = engine.context
    if info.is_software and "mappable-primary-buffers" in info.device.features:
        assert engine.stats["lent"] == lent + len(results)
    results[0][...] = 0.0  # the caller's: neither the other results nor the next calls see it
    _close(results[1], wants[1], float(np.abs(x).max()))
    _close(bn.gaussian_filter(x, 1.0), wants[0], float(np.abs(x).max()))
    out = np.full_like(x, np.nan)
    assert bn.gaussian_filter(x, 2.0, output=out) is out
    _close(out, wants[1], float(np.abs(x).max()))
    same = x.copy()
    assert bn.uniform_filter(same, 5, output=same) is same
    _close(same, wants[3], float(np.abs(x).max()))
    z = (x + 1j * x[::-1]).astype(np.complex64)
    _close(bn.gaussian_filter(z, 2.0), sn.gaussian_filter(z, 2.0), float(np.abs(z).max()))
    ints = (x * 10).astype(np.int16)
    _close(bn.uniform_filter(ints, 3), sn.uniform_filter(ints, 3), 0, int_slack=1)
    _close(bn.laplace(x), sn.laplace(x), float(np.abs(x).max()) * 4)
    _close(bn.gaussian_laplace(x, 1.5), sn.gaussian_laplace(x, 1.5), float(np.abs(x).max()))
    x64 = x.astype(np.float64)
    _close(bn.correlate(x64, w), sn.correlate(x64, w), float(np.abs(x).max() * np.abs(w).sum()))
    _close(bn.correlate(x, w, output=np.int32), sn.correlate(x, w, output=np.int32), 0,
           int_slack=1)  # fmt: skip


def test_new_float32_results_of_odd_widths_are_views_of_the_padded_buffers():
    """A large float32 array whose lines are not a whole number of chunks long runs padded
    (ndpass._padded_chain); with ``output=None`` its result is the real columns' view in the
    lent padded buffer (ndpass.LEND_PADDED): equal to scipy's, rows contiguous but longer than
    the line, the caller's to keep, write and copy, and its own (the next calls neither see nor
    change it). An output array is written in full, and a strided result goes back in as an
    input (and as its own output) as any view does."""
    from blurapp.gpu import ndpass

    engine = ndpass.get_passes()
    x = (RNG.standard_normal((301, 203)) * 10).astype(np.float32)
    scale = float(np.abs(x).max())
    info = engine.context
    lends = info.is_software and "mappable-primary-buffers" in info.device.features
    padded = engine.stats["padded"]
    calls = [
        lambda m, a: m.gaussian_filter(a, 1.5),
        lambda m, a: m.uniform_filter(a, 5),
        lambda m, a: m.sobel(a, 1),
        lambda m, a: m.gaussian_filter1d(a, 2.0, axis=-1),
    ]
    results = [f(bn, x) for f in calls]
    assert engine.stats["padded"] == padded + len(calls)
    for f, ours in zip(calls, results, strict=True):
        _close(ours, f(sn, x), scale * 4)
        assert ours.shape == x.shape and ours.dtype == np.float32 and ours.flags.writeable
        assert ours.flags.c_contiguous != lends and ours.strides[-1] == 4
        assert ndpass.is_lent(ours) == lends
        np.testing.assert_array_equal(np.ascontiguousarray(ours), ours)
    kept = results[0].copy()
    results[1][...] = 0.0  # the caller's: the other results and the next calls do not see it
    np.testing.assert_array_equal(results[0], kept)
    _close(bn.uniform_filter(x, 5), sn.uniform_filter(x, 5), scale)
    again = bn.gaussian_filter(results[0], 1.5)  # a strided input, as any view
    _close(again, sn.gaussian_filter(kept, 1.5), scale * 4)
    assert bn.uniform_filter(results[2], 3, output=results[2]) is results[2]
    _close(results[2], sn.uniform_filter(sn.sobel(x, 1), 3), scale * 16)
    out = np.full_like(x, np.nan)
    assert bn.gaussian_filter(x, 1.5, output=out) is out
    np.testing.assert_array_equal(out, kept)


@pytest.mark.parametrize("sigma", [0.5, 0.7, 1.0, 1.5, 2.0, 3.3, 4.0, 8.0])
def test_float32_weights_keep_the_sum_and_a_symmetric_kernel_symmetric(sigma: float) -> None:
    """The float32 weights of a symmetric kernel stay symmetric (ndpass folds their pairs)
    where pairs of nudges can bring the sum back as close as one weight at a time would, and
    the sum stays within the rounding of its smallest weights either way."""
    from scipy.ndimage._filters import _gaussian_kernel1d

    from blurapp.gpu.ndpass import _sym
    from blurapp.ndimage._gpu import _f32_weights, _nudged

    box = int(2 * sigma) + 2
    for w in (_gaussian_kernel1d(sigma, 0, int(4 * sigma + 0.5)), np.full(box, 1 / box)):
        got = _f32_weights(w)
        assert got.dtype == np.float64 and np.array_equal(got, got.astype(np.float32))
        assert np.max(np.abs(got - w) / w) < 1e-6  # within a few float32 steps of each
        one_at_a_time = abs(_nudged(w.astype(np.float32), float(np.sum(w)), mirrored=False))
        left = abs(float(np.sum(got)) - float(np.sum(w)))
        assert left <= max(one_at_a_time, 2.0**-32 * float(np.sum(w))) * (1 + 1e-9)
        if sigma >= 1.0:
            assert _sym(got) == 1
    derivative = _gaussian_kernel1d(2.0, 1, 8)
    assert _sym(_f32_weights(derivative)) == -1
    assert float(np.sum(_f32_weights(derivative), dtype=np.float64)) == 0.0


def test_uint32_outputs_wrap_as_scipy_casts_on_arrays_of_any_size() -> None:
    """Results beyond uint32's range (a uint32 sobel whose first pass wraps to ~2^32, so that
    the second sums beyond 2^32; negative and huge values) are cast as scipy's C code casts
    them (through int64, the low 32 bits), on a few elements and on arrays that numpy's SIMD
    cast loop takes (which gives 0 there)."""
    from blurapp.ndimage._filters import _store

    values = np.array([-1e10, -3.5, 300.7, 3e9, 5e9, 1.7e10, 1e19, np.nan, -np.inf])
    want = np.array([2884901888, 4294967293, 300, 3000000000, 705032704, 4115098112, 0, 0, 0],
                    np.uint32)  # fmt: skip
    for n in (1, 10_000):
        out = np.empty(values.size * n, np.uint32)
        _store(np.repeat(values, n), out)
        np.testing.assert_array_equal(out[::n], want)
    x = np.tile(np.array([5, 3, 1, 0, 7, 2], np.uint32), (300, 200))
    for axis in (0, 1):
        np.testing.assert_array_equal(bn.sobel(x, axis), sn.sobel(x, axis))
