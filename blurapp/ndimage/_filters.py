"""scipy.ndimage's linear filters with scipy's signatures, defaults, dtypes and casting, their
correlations run on the GPU by :mod:`blurapp.ndimage._gpu`.

The arithmetic contract is scipy's: every pass computes in floating point from the input's
values and casts the result to the output's type as C casts it (integers truncated towards
zero), after each 1-D pass of a multi-axis filter too. float64, integer and bool inputs are
computed in double precision (double-float on the GPU when blurapp.gpu.ndpass is there),
float32 and float16 inputs in float32, as cupyx.scipy.ndimage does.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from blurapp.core.borders import Border, BorderMode
from blurapp.core.ndreference import DBL_EPSILON, finite_max
from blurapp.ndimage import _gpu
from blurapp.ndimage._plans import planned
from blurapp.ndimage._support import (
    check_axes,
    check_dtype,
    check_mode,
    expand_origin,
    get_output,
    invalid_origin,
    is_fresh,
    normalize_axis_index,
    normalize_sequence,
)

__all__ = [
    "convolve",
    "convolve1d",
    "correlate",
    "correlate1d",
    "gaussian_filter",
    "gaussian_filter1d",
    "gaussian_gradient_magnitude",
    "gaussian_laplace",
    "generic_gradient_magnitude",
    "generic_laplace",
    "laplace",
    "prewitt",
    "sobel",
    "uniform_filter",
    "uniform_filter1d",
]


# --------------------------------------------------------------------------- the core passes


def _strategy(strategy: str | None) -> str | None:
    """None (the default: exact GPU passes) or a strategy name of blurapp's registry."""
    if strategy is None:
        return None
    from blurapp.core import strategies

    if strategy not in strategies.STRATEGIES:
        names = ", ".join(strategies.STRATEGIES)
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {names}")
    return strategy


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for float32 and float16 values, float64 for everything else (scipy computes in
    double; integers and bools need it for their casts to truncate as scipy's do)."""
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _cval(cval: Any) -> float:
    if isinstance(cval, (str, bytes)):
        raise TypeError(f"cval must be a real number, not {type(cval).__name__}")
    if np.iscomplexobj(cval):
        raise TypeError("cval must be a real number for a real input, not complex")
    return float(cval)


def _origin(origin: Any) -> int:
    if isinstance(origin, (bool, np.bool_)):
        return int(origin)
    try:
        return operator.index(origin)
    except TypeError:
        raise TypeError(f"origin must be an integer, got {origin!r}") from None


def _store(result: np.ndarray, output: np.ndarray) -> None:
    """Write a float result into ``output`` as scipy's C code casts (truncating towards zero
    for integers, NaN to whatever the cast gives: scipy's behaviour is the C cast's)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if output.dtype.kind == "u" and output.dtype.itemsize == 4:
            # C's (x86-64) cast of a double into uint32 converts through int64 and keeps the
            # low 32 bits (5e9 is 705032704, -1e10 2884901888, NaN 0), as numpy's own scalar
            # loop does; its SIMD loop, which arrays of more than a few elements take, gives 0
            # or 2**31 beyond the range instead.
            output[...] = result.astype(np.int64, casting="unsafe").astype(output.dtype)
        elif output.dtype.kind in "iu":
            # numpy's float-to-integer cast truncates as C's does (its SIMD and scalar loops
            # agree for these types, in range and out of it).
            output[...] = result.astype(output.dtype, casting="unsafe")
        elif output.dtype.kind == "b":
            # scipy's bool is a C byte: the value truncated into it (0.7 is False, -1 a 255
            # byte, which numpy reads as True), not "non-zero is True".
            output.view(np.uint8)[...] = result.astype(np.uint8, casting="unsafe")
        else:
            output[...] = result


#: Elements per step of :func:`_snap_store`: its temporaries stay in the CPU's cache (whole
#: arrays at a time made five 16 MB temporaries of a 1080p pass: 18 ms of a 107 ms uint8
#: gaussian_filter).
_CHUNK = 1 << 16


def _snap_store(
    result: np.ndarray,
    values: np.ndarray,
    weights: Sequence[np.ndarray],
    cval: float,
    output: np.ndarray,
) -> None:
    """Store a double-float result into ``output`` as :func:`_store` does; bound for an integer
    (or bool) output, the values that lie within double-float's error of an integer are put on
    it first, so that they truncate to it.

    scipy truncates its double sum; double-float's differs from it in the last ~10 bits, so an
    exact integer (a Gaussian of a ramp or of a flat region, a mean of equal values) comes out
    a hair above or below it, and truncating below would give one less (scipy's own example,
    ``gaussian_filter(np.arange(50, step=2).reshape((5, 5)), sigma=1)``, had 13 for 14). The
    error bound is about 1e-13 of max|x|·Σ|w| (``values``: the pass's input, any real dtype):
    values that close to an integer are taken as it. In steps of _CHUNK elements into a
    C-contiguous output.
    """
    if output.dtype.kind not in "biu" or result.dtype != np.float64 or result.size == 0:
        _store(result, output)
        return
    if values.dtype == np.bool_:  # read as its bytes (see _values)
        values = values.view(np.uint8)
    scale = max(finite_max(values), abs(cval) if math.isfinite(cval) else 0.0)
    for w in weights:
        scale *= float(np.sum(np.abs(w)))
    tolerance = scale * 2.0**-40
    flat = np.ascontiguousarray(result).reshape(-1)
    if not output.flags.c_contiguous:
        snapped = flat.copy()
        _snap(snapped, np.empty_like(snapped), tolerance)
        _store(snapped.reshape(output.shape), output)
        return
    target = output.reshape(-1)
    nearest = np.empty(min(flat.size, _CHUNK))
    gap = np.empty_like(nearest)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start : start + _CHUNK]
        d = gap[: part.size]
        np.copyto(d, part)
        _snap(d, nearest[: part.size], tolerance)
        _store(d, target[start : start + part.size])


def _store_quotient(total: np.ndarray, size: int, output: np.ndarray) -> None:
    """:func:`_store` of ``total / size`` divided in float64 (an exact integer sum in float32
    or float64: the correctly rounded double quotient, which truncates as scipy's), in steps
    of _CHUNK elements into a C-contiguous output."""
    if not output.flags.c_contiguous:
        _store(total.astype(np.float64) / size, output)
        return
    flat = np.ascontiguousarray(total).reshape(-1)
    target = output.reshape(-1)
    quotient = np.empty(min(flat.size, _CHUNK))
    for start in range(0, flat.size, _CHUNK):
        part = flat[start : start + _CHUNK]
        q = quotient[: part.size]
        np.divide(part, float(size), out=q, dtype=np.float64)  # in double, not float32
        _store(q, target[start : start + part.size])


def _snap(values: np.ndarray, nearest: np.ndarray, tolerance: float) -> None:
    """Put the elements of ``values`` (float64) within ``tolerance`` of an integer on it, in
    place (NaN and ±inf stay: their gap is NaN); ``nearest``: scratch of the same size."""
    with np.errstate(invalid="ignore"):
        np.rint(values, out=nearest)
        close = np.abs(values - nearest) <= tolerance
        np.copyto(values, nearest, where=close)


def _values(input: np.ndarray) -> np.ndarray:
    """``input``'s values in its compute type, C-contiguous. A bool is read as its byte, as
    scipy's C code reads it: a multi-pass filter's bool intermediate can hold 255 (see
    :func:`_store`), which the next pass reads as 255, not as True."""
    if input.dtype == np.bool_:
        input = input.view(np.uint8)
    return np.ascontiguousarray(input, dtype=_compute_dtype(input.dtype))


def _pass_values(input: np.ndarray, strategy: str | None) -> np.ndarray:
    """What the GPU passes read of ``input``: its values as :func:`_values` gives them, except
    that int8 to uint16 arrays (and bools, as bytes) go to blurapp.gpu.ndpass as they are
    (exact in f32, they make their double-float pairs without a float64 copy)."""
    if strategy is None:
        if input.dtype == np.bool_:
            input = input.view(np.uint8)
        if input.dtype.kind in "iu" and input.dtype.itemsize <= 2:
            return np.ascontiguousarray(input)
    return _values(input)


def _exact_in_f32(input: np.ndarray, p: _gpu.Pass) -> bool:
    """Whether pass ``p`` over ``input`` is exact in float32: integer weights (sobel, prewitt,
    laplace, a uniform filter's sum) over integers (bools as bytes), every partial sum within
    2**24 (an int8 to uint16 dtype's largest magnitude, a wider one's largest value, times
    Σ|w|, a constant border's value included). Then every sum float32 forms is the exact
    integer that scipy's double forms, and the float32 pass (several times cheaper than
    double-float) gives scipy's values bit for bit (on blurapp.gpu.ndpass: a ``strategy=``
    may be an FFT's or a low-rank approximation)."""
    dtype = np.dtype(np.uint8) if input.dtype == np.bool_ else input.dtype
    if dtype.kind not in "iu":
        return False
    w = np.asarray(p.weights, dtype=np.float64)
    if not np.all(np.isfinite(w)) or not np.array_equal(w, np.round(w)):
        return False
    if dtype.itemsize <= 2:
        largest = float(max(-int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)))
    else:  # wider integers by their values (numpy's default int64 holding small ones)
        largest = finite_max(input)
    if _gpu.MODES[p.mode] is BorderMode.CONSTANT:
        if not (math.isfinite(p.cval) and p.cval == round(p.cval)):
            return False
        largest = max(largest, abs(p.cval))
    return float(np.abs(w).sum()) * largest < 2.0**24


def _f32_values(input: np.ndarray) -> np.ndarray:
    """An integer array's values in float32 (bools as bytes): exact for int8 to uint16, and
    for wider integers within 2^24."""
    return (input.view(np.uint8) if input.dtype == np.bool_ else input).astype(np.float32)


#: Whether an integer pass that float32 cannot do exactly (a Gaussian over uint8) runs in float32
#: first, with only the elements whose float32 sum may lie on the wrong side of an integer summed
#: again in double on the host (:func:`_verified_f32_pass`), instead of in double-float.
VERIFIED_F32 = True
#: The share of a pass's elements to sum again above which it goes back to double-float (a
#: flat image, a label map: most sums are whole numbers, that float32 cannot place).
VERIFY_MAX_SHARE = 0.3
#: However large their share, this many elements are summed again on the host (a small
#: array's whole-number sums cost less than its double-float pass).
VERIFY_ALWAYS = 4096
#: Taps a step of the host's sums gathers (K x F of them: 2 MB as float64).
_VERIFY_STEP = 1 << 18


def _verified_f32_pass(values: np.ndarray, p: _gpu.Pass, output: np.ndarray) -> bool:
    """Pass ``p`` over integer ``values`` (bools as bytes; wider than 16 bits where they are
    all within 2^24, exact in float32: numpy's default int64 holding an image's or a count's
    values) into an integer or bool ``output``, with scipy's values, from a float32 pass.

    The float32 sum of each element is within a bound E of the exact one: float32's weights
    differ from the float64 ones by Σ|Δw|·M, and K rounded products and sums add at most
    (K + 2)·2^-24·Σ|w|·M (M: the largest magnitude read, the constant border's value included;
    small integers and their sums are exact in float32), taken twice over; scipy's double sum
    is as close to the exact one, at 2^-53. Where no integer lies within E of the float32 sum,
    scipy's truncates as it does. The other elements (the whole numbers of flat regions among
    them) are summed again on the host in float64 as scipy's C code sums them
    (:func:`_as_scipy_sums`): the same bits, so the same truncation, where double-float's snap
    to a whole number (:func:`_snap_store`) can be one above scipy's a hair below it. Returns
    False, having written nothing, where that does not apply, or where more than
    VERIFY_MAX_SHARE of the elements would be summed again: the caller runs the double-float
    pass.
    """
    if not VERIFIED_F32 or output.dtype.kind not in "biu" or values.size == 0:
        return False
    x = values.view(np.uint8) if values.dtype == np.bool_ else values
    if x.dtype.kind not in "iu":
        return False
    w = np.asarray(p.weights, dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.array_equal(w, np.round(w)):
        return False  # (integer weights' sums are whole numbers: _exact_in_f32's, or too large)
    constant = _gpu.MODES[p.mode] is BorderMode.CONSTANT
    cval = p.cval if constant else 0.0
    if not (math.isfinite(cval) and float(np.float32(cval)) == cval):
        return False  # float32's border value would differ from the double one
    data_max = finite_max(x)
    if x.dtype.itemsize > 2 and data_max > 2**24:
        return False  # wider integers whose values float32 does not hold exactly
    largest = max(data_max, abs(cval))
    w32 = _gpu.f32_weights(w)
    taps = w.size
    total = float(np.sum(np.abs(w)))
    margin = float(np.sum(np.abs(w32 - w))) * largest
    margin += 2 * (taps + 2) * 2.0**-24 * float(np.sum(np.abs(w32))) * largest
    margin += 2 * (taps + 2) * 2.0**-53 * total * largest  # scipy's own rounding
    margin += taps * 2.0**-100 * largest  # products that a GPU flushes to zero
    if not (2 * margin < VERIFY_MAX_SHARE or values.size <= VERIFY_ALWAYS) or margin >= 0.25:
        return False  # as many fractions as that lie within the margin of an integer
    v = _gpu.run_passes(_f32_values(values), [p], strategy=None)
    flat = v.reshape(-1)
    near = _near_integers(flat, np.nextafter(np.float32(margin), np.float32(np.inf)))
    if near.size > max(VERIFY_MAX_SHARE * flat.size, VERIFY_ALWAYS):
        return False
    exact = _sums_at(x, p, near)  # before the store: output may be values
    _store_float32(v, output)
    patch = np.empty(near.size, output.dtype)
    _store(exact, patch)
    target = output.view(np.uint8) if output.dtype == np.bool_ else output
    patch = patch.view(np.uint8) if output.dtype == np.bool_ else patch
    if target.flags.c_contiguous:
        target.reshape(-1)[near] = patch
    else:
        target[np.unravel_index(near, target.shape)] = patch
    return True


def _store_float32(result: np.ndarray, output: np.ndarray) -> None:
    """:func:`_store` of a float32 result as scipy casts its double: straight where every value
    truncates into an integer ``output``'s range (float32's truncation is then float64's), else
    through float64, the type scipy's C cast converts from (numpy's casts of out-of-range
    float32 and float64 values are separate loops, not held to agree)."""
    if output.dtype.kind in "biu" and result.size:
        info = np.iinfo(np.uint8 if output.dtype == np.bool_ else output.dtype)
        if not (info.min - 1 < float(result.min()) and float(result.max()) < info.max + 1):
            result = result.astype(np.float64)
    _store(result, output)


def _near_integers(flat: np.ndarray, limit: np.float32) -> np.ndarray:
    """The indices of the float32 elements of ``flat`` within ``limit`` of an integer (in steps
    of _CHUNK elements: the temporaries stay in the CPU's cache)."""
    found = []
    gap = np.empty(min(flat.size, _CHUNK), dtype=np.float32)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start : start + _CHUNK]
        d = gap[: part.size]
        np.rint(part, out=d)
        np.subtract(part, d, out=d)  # exact: |part| < 2**24 here or the margin is moot
        np.abs(d, out=d)
        hits = np.flatnonzero(d <= limit)
        if hits.size:
            found.append(hits + start)
    return np.concatenate(found) if found else np.empty(0, dtype=np.intp)


def _sums_at(x: np.ndarray, p: _gpu.Pass, at: np.ndarray) -> np.ndarray:
    """Pass ``p``'s float64 sums (scipy's correlate1d) over ``x`` at its flat (C-order)
    indices ``at``: the elements whose taps all lie inside the axis read them straight, the
    others through the border's mapping."""
    w = np.asarray(p.weights, dtype=np.float64)
    axis = p.axis % x.ndim
    n = x.shape[axis]
    stride = math.prod(x.shape[axis + 1 :])
    before = w.size // 2 + p.origin
    offsets = (np.arange(w.size) - before)[:, None]
    src = np.ascontiguousarray(x).reshape(-1)
    pos = (at // stride) % n
    inside = (pos >= before) & (pos < n - (w.size - 1 - before))
    out = np.empty(at.size, dtype=np.float64)
    step = max(1, _VERIFY_STEP // w.size)
    border = Border(_gpu.MODES[p.mode])
    for mapped in (False, True):
        where = np.flatnonzero(~inside if mapped else inside)
        for start in range(0, where.size, step):
            k = where[start : start + step]
            i = at[k]
            if not mapped:  # taps by rows: one row a tap, one column an element
                taps = src[offsets * stride + i].astype(np.float64)
            else:
                q = pos[k]
                read = border.map_indices(offsets + q, n)
                taps = src[(np.maximum(read, 0) - q) * stride + i].astype(np.float64)
                if border.mode is BorderMode.CONSTANT:
                    taps[read < 0] = p.cval
            out[k] = _as_scipy_sums(taps, w)
    return out


def _as_scipy_sums(taps: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each column of ``taps`` (float64, one element's taps from the first) times ``w``, summed
    as scipy's C code sums them (NI_Correlate1D): an odd kernel whose mirrored weights are
    equal (opposite) within DBL_EPSILON adds the centre's product, then each pair's sum
    (difference) times its left weight from the outermost pair in; any other kernel adds its
    last tap's product, then the others' from the first. numpy's separate multiply and add
    round as the C code's do on x86-64 (no fused multiply-add): the same bits."""
    n = w.size
    half = n // 2
    symmetric = 0
    if n % 2:
        left, right = w[:half], w[half + 1 :][::-1]
        if np.all(np.abs(left - right) <= DBL_EPSILON):
            symmetric = 1
        elif np.all(np.abs(left + right) <= DBL_EPSILON):
            symmetric = -1
    scratch = np.empty_like(taps[0])
    if symmetric:
        combine = np.add if symmetric > 0 else np.subtract
        acc = taps[half] * w[half]
        for j in range(half):
            combine(taps[j], taps[n - 1 - j], out=scratch)
            scratch *= w[j]
            acc += scratch
        return acc
    acc = taps[n - 1] * w[n - 1]
    for j in range(n - 1):
        np.multiply(taps[j], w[j], out=scratch)
        acc += scratch
    return acc


def _run_passes(
    input: np.ndarray, passes: Sequence[_gpu.Pass], output: np.ndarray, strategy: str | None
) -> np.ndarray:
    """Run 1-D ``passes`` from ``input`` into ``output``: chained on the GPU while the values
    stay in the arithmetic's own type, else one pass at a time with scipy's cast after each."""
    check_dtype(input.dtype)
    check_dtype(output.dtype, "output")
    if input.size == 0:
        return output
    cur = input
    k = 0
    while k < len(passes):
        ct = _compute_dtype(cur.dtype)
        if ct == output.dtype:  # no cast between the rest: one chain without round trips
            # A new output the caller never saw: the GPU's own buffer may stand in for it.
            fresh = k == 0 and is_fresh(output)
            # The read-back straight into the output where it can take it (no new array).
            into = output if output.flags.c_contiguous else None
            result = _gpu.run_passes(
                _pass_values(cur, strategy), passes[k:], strategy=strategy, out=into, lend=fresh
            )
            if result is output:
                return output
            if fresh:
                return result
            _store(result, output)
            return output
        if strategy is None and _exact_in_f32(cur, passes[k]):
            # Integer sums within 2**24: float32's are exact (nothing to snap).
            result = _gpu.run_passes(_f32_values(cur), passes[k : k + 1], strategy=strategy)
            _store_float32(result, output)
            cur = output
            k += 1
            continue
        if strategy is None and _verified_f32_pass(cur, passes[k], output):
            cur = output
            k += 1
            continue
        result = _gpu.run_passes(_pass_values(cur, strategy), passes[k : k + 1], strategy=strategy)
        _snap_store(result, cur, [passes[k].weights], passes[k].cval, output)
        cur = output
        k += 1
    return output


def _correlate1d_real(
    input: np.ndarray,
    weights: np.ndarray,
    axis: int,
    output: np.ndarray,
    mode: str,
    cval: float,
    origin: int,
    strategy: str | None,
) -> np.ndarray:
    if input.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    return _run_passes(input, [_gpu.Pass(axis, weights, mode, cval, origin)], output, strategy)


# --------------------------------------------------------------------------- complex values


def _complex_via_real_components(func, input, weights, output, cval, **kwargs):
    """A complex correlation as real ones (scipy's way): real and imaginary parts apart."""
    complex_input = input.dtype.kind == "c"
    complex_weights = weights.dtype.kind == "c"
    if complex_input and complex_weights:
        func(input.real, weights.real, output=output.real, cval=np.real(cval), **kwargs)
        output.real -= func(input.imag, weights.imag, output=None, cval=np.imag(cval), **kwargs)
        func(input.real, weights.imag, output=output.imag, cval=np.real(cval), **kwargs)
        output.imag += func(input.imag, weights.real, output=None, cval=np.imag(cval), **kwargs)
    elif complex_input:
        func(input.real, weights, output=output.real, cval=np.real(cval), **kwargs)
        func(input.imag, weights, output=output.imag, cval=np.imag(cval), **kwargs)
    else:
        if np.iscomplexobj(cval):
            raise ValueError("Cannot provide a complex-valued cval when the input is real.")
        func(input, weights.real, output=output.real, cval=cval, **kwargs)
        func(input, weights.imag, output=output.imag, cval=cval, **kwargs)
    return output


# --------------------------------------------------------------------------- 1-D filters


@planned
def correlate1d(
    input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, strategy=None
):
    """Calculate a 1-D correlation along the given axis (scipy.ndimage.correlate1d).

    The lines of the array along ``axis`` are correlated with ``weights`` on the GPU.
    ``strategy`` (keyword-only, blurapp's extension) names an engine strategy; the default
    runs the exact GPU passes.

    Example:
        >>> from blurapp.ndimage import correlate1d
        >>> correlate1d([2, 8, 0, 4, 1, 9, 9, 0], weights=[1, 3])
        array([ 8, 26,  8, 12,  7, 28, 36,  9])
    """
    input = np.asarray(input)
    weights = np.asarray(weights)
    if input.dtype.kind == "c" or weights.dtype.kind == "c":
        if weights.dtype.kind == "c":
            weights = weights.conj().astype(np.complex128, copy=False)
        output = get_output(output, input, complex_output=True)
        return _complex_via_real_components(
            correlate1d, input, weights, output, cval,
            axis=axis, mode=mode, origin=origin, strategy=strategy,
        )  # fmt: skip
    output = get_output(output, input)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 1 or weights.shape[0] < 1:
        raise RuntimeError("no filter weights given")
    check_dtype(input.dtype)
    axis = normalize_axis_index(operator.index(axis), input.ndim)
    if invalid_origin(origin, len(weights)):
        raise ValueError(
            "Invalid origin; origin must satisfy -(len(weights) // 2) <= origin <= "
            f"(len(weights)-1) // 2, got {origin} for {len(weights)} weights"
        )
    mode = check_mode(mode)
    return _correlate1d_real(
        input, weights, axis, output, mode, _cval(cval), _origin(origin), _strategy(strategy)
    )


@planned
def convolve1d(
    input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, strategy=None
):
    """Calculate a 1-D convolution along the given axis (scipy.ndimage.convolve1d).

    Example:
        >>> from blurapp.ndimage import convolve1d
        >>> convolve1d([2, 8, 0, 4, 1, 9, 9, 0], weights=[1, 3])
        array([14, 24,  4, 13, 12, 36, 27,  0])
    """
    weights = np.asarray(weights)
    weights = weights[::-1]
    origin = -origin
    if not weights.shape[0] & 1:
        origin -= 1
    if weights.dtype.kind == "c":
        weights = weights.conj()  # undone by correlate1d's conjugation
    return correlate1d(input, weights, axis, output, mode, cval, origin, strategy=strategy)


def _gaussian_kernel1d(sigma, order, radius):
    """The 1-D Gaussian kernel of ``sigma`` (or its ``order``-th derivative, any order) over
    ``[-radius, radius]``, as a convolution kernel: exp(-x²/2σ²) normalised to sum 1, times the
    polynomial q(x) that the derivatives of exp(p(x)) make (q' + q·p', p' = -x/σ²)."""
    if order < 0:
        raise ValueError(f"order must be non-negative, got {order}")
    sigma2 = sigma * sigma
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / sigma2 * x**2)
    phi = phi / phi.sum()
    if order == 0:
        return phi
    powers = np.arange(order + 1)
    q = np.zeros(order + 1)
    q[0] = 1
    derive = np.diag(powers[1:], 1) + np.diag(np.ones(order) / -sigma2, -1)
    for _ in range(order):
        q = derive.dot(q)
    return (x[:, None] ** powers).dot(q) * phi


@planned
def gaussian_filter1d(
    input,
    sigma,
    axis=-1,
    order=0,
    output=None,
    mode="reflect",
    cval=0.0,
    truncate=4.0,
    *,
    radius=None,
    strategy=None,
):
    """1-D Gaussian filter (scipy.ndimage.gaussian_filter1d): ``order`` 0 smooths, 1 to 3
    take derivatives; the kernel reaches ``int(truncate * sigma + 0.5)`` taps, or ``radius``.

    Example:
        >>> from blurapp.ndimage import gaussian_filter1d
        >>> gaussian_filter1d([1.0, 2.0, 3.0, 4.0, 5.0], 1)
        array([1.42704095, 2.06782203, 3.        , 3.93217797, 4.57295905])
    """
    sd = float(sigma)
    lw = int(truncate * sd + 0.5)
    if radius is not None:
        lw = radius
    if not isinstance(lw, numbers.Integral) or lw < 0:
        raise ValueError(f"Radius must be a nonnegative integer, got {lw!r}")
    # A correlation: the convolution kernel reversed.
    weights = _gaussian_kernel1d(sigma, order, lw)[::-1]
    return correlate1d(input, weights, axis, output, mode, cval, 0, strategy=strategy)


@planned
def uniform_filter1d(
    input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, strategy=None
):
    """1-D uniform (mean) filter of ``size`` taps (scipy.ndimage.uniform_filter1d).

    The mean is the window's sum divided by ``size`` (sums of integers are exact): a NaN or
    Inf makes the outputs whose window reads it NaN/Inf, not the rest of the line as scipy's
    running sum does (docs/NDIMAGE.md).

    Example:
        >>> from blurapp.ndimage import uniform_filter1d
        >>> uniform_filter1d([2, 8, 0, 4, 1, 9, 9, 0], size=3)
        array([4, 3, 4, 1, 4, 6, 6, 3])
    """
    input = np.asarray(input)
    axis = normalize_axis_index(operator.index(axis), input.ndim)
    if size < 1:
        raise RuntimeError(f"incorrect filter size: {size}")
    complex_output = input.dtype.kind == "c"
    output = get_output(output, input, complex_output=complex_output)
    if (size // 2 + origin < 0) or (size // 2 + origin >= size):
        raise ValueError(f"invalid origin {origin} for a filter of size {size}")
    mode = check_mode(mode)
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"size must be an integer, got {size!r}") from None
    strategy = _strategy(strategy)
    if complex_output:
        _uniform1d_real(input.real, size, axis, output.real, mode, np.real(cval), origin, strategy)
        _uniform1d_real(input.imag, size, axis, output.imag, mode, np.imag(cval), origin, strategy)
        return output
    return _uniform1d_real(input, size, axis, output, mode, cval, origin, strategy)


def _uniform1d_real(input, size, axis, output, mode, cval, origin, strategy):
    check_dtype(input.dtype)
    check_dtype(output.dtype, "output")
    size = int(size)
    if input.size == 0:
        return output
    if output.dtype.kind in "biu":
        # Sum, then divide: the mean of integers is then the correctly rounded quotient, so
        # that it truncates as scipy's does (a window of 3s is 3, not 2.9999998).
        p = _gpu.Pass(axis, np.ones(size), mode, _cval(cval), _origin(origin))
        if strategy is None and _exact_in_f32(input, p):  # the exact integer in float32 too
            total = _gpu.run_passes(_f32_values(input), [p], strategy=strategy)
        else:
            total = _gpu.run_passes(_values(input), [p], strategy=strategy)
        _store_quotient(total, size, output)
        return output
    p = _gpu.Pass(axis, np.full(size, 1.0 / size), mode, _cval(cval), _origin(origin))
    return _run_passes(input, [p], output, strategy)


# --------------------------------------------------------------------------- n-D separable


@planned
def gaussian_filter(
    input,
    sigma,
    order=0,
    output=None,
    mode="reflect",
    cval=0.0,
    truncate=4.0,
    *,
    radius=None,
    axes=None,
    strategy=None,
):
    """Multidimensional Gaussian filter (scipy.ndimage.gaussian_filter): 1-D Gaussian passes
    along each of ``axes``, with a ``sigma``, ``order``, ``mode`` and ``radius`` per axis.

    Passes whose values need no cast between them run one after another on the GPU without a
    round trip to the host (float32 data, and float64 data).

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import gaussian_filter
        >>> gaussian_filter(np.arange(50, step=2).reshape((5, 5)), sigma=1)
        array([[ 4,  6,  8,  9, 11],
               [10, 12, 14, 15, 17],
               [20, 22, 24, 25, 27],
               [29, 31, 33, 34, 36],
               [35, 37, 39, 40, 42]])
    """
    input = np.asarray(input)
    output = get_output(output, input)
    axes = check_axes(axes, input.ndim)
    n = len(axes)
    orders = normalize_sequence(order, n)
    sigmas = normalize_sequence(sigma, n)
    modes = normalize_sequence(mode, n)
    radii = normalize_sequence(radius, n)
    todo = [
        (axes[i], sigmas[i], orders[i], modes[i], radii[i]) for i in range(n) if sigmas[i] > 1e-15
    ]
    strategy = _strategy(strategy)
    if not todo:
        output[...] = input[...]
        return output
    if input.dtype.kind == "c" or output.dtype.kind == "c":
        # Complex values: scipy's way, one gaussian_filter1d after another on the output.
        for axis, sd, order_, mode_, radius_ in todo:
            gaussian_filter1d(
                input, sd, axis, order_, output, mode_, cval, truncate, radius=radius_,
                strategy=strategy,
            )  # fmt: skip
            input = output
        return output
    passes = []
    c = _cval(cval)
    for axis, sd, order_, mode_, radius_ in todo:
        sd = float(sd)
        lw = int(truncate * sd + 0.5) if radius_ is None else radius_
        if not isinstance(lw, numbers.Integral) or lw < 0:
            raise ValueError(f"Radius must be a nonnegative integer, got {lw!r}")
        weights = _gaussian_kernel1d(sd, order_, lw)[::-1]
        passes.append(_gpu.Pass(axis, np.ascontiguousarray(weights), check_mode(mode_), c, 0))
    return _run_passes(input, passes, output, strategy)


@planned
def uniform_filter(
    input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None, strategy=None
):
    """Multidimensional uniform (mean) filter (scipy.ndimage.uniform_filter): 1-D means along
    each of ``axes``, with a ``size``, ``origin`` and ``mode`` per axis.

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import uniform_filter
        >>> uniform_filter(np.arange(9.0).reshape(3, 3), size=3)[1]
        array([3.33333333, 4.        , 4.66666667])
    """
    input = np.asarray(input)
    output = get_output(output, input, complex_output=input.dtype.kind == "c")
    axes = check_axes(axes, input.ndim)
    n = len(axes)
    sizes = normalize_sequence(size, n)
    origins = normalize_sequence(origin, n)
    modes = normalize_sequence(mode, n)
    todo = [(axes[i], sizes[i], origins[i], modes[i]) for i in range(n) if sizes[i] > 1]
    strategy = _strategy(strategy)
    if not todo:
        output[...] = input[...]
        return output
    floats_through = input.dtype.kind != "c" and output.dtype.kind == "f"
    if not floats_through:
        # Integer outputs (each pass's sum divided, then cast) and complex: pass by pass.
        for axis, size_, origin_, mode_ in todo:
            uniform_filter1d(input, int(size_), axis, output, mode_, cval, origin_,
                             strategy=strategy)  # fmt: skip
            input = output
        return output
    passes = []
    c = _cval(cval)
    for axis, size_, origin_, mode_ in todo:
        size_ = int(size_)
        if (size_ // 2 + origin_ < 0) or (size_ // 2 + origin_ >= size_):
            raise ValueError(f"invalid origin {origin_} for a filter of size {size_}")
        passes.append(
            _gpu.Pass(axis, np.full(size_, 1.0 / size_), check_mode(mode_), c, _origin(origin_))
        )
    return _run_passes(input, passes, output, strategy)


def _derivative_with_smoothing(input, axis, output, mode, cval, derivative, smoothing, strategy):
    input = np.asarray(input)
    axis = normalize_axis_index(operator.index(axis), input.ndim)
    output = get_output(output, input)
    modes = normalize_sequence(mode, input.ndim)
    if input.dtype.kind == "c" or output.dtype.kind == "c":
        correlate1d(input, derivative, axis, output, modes[axis], cval, 0, strategy=strategy)
        for ii in range(input.ndim):
            if ii != axis:
                correlate1d(output, smoothing, ii, output, modes[ii], cval, 0, strategy=strategy)
        return output
    c = _cval(cval)
    passes = [_gpu.Pass(axis, np.asarray(derivative, float), check_mode(modes[axis]), c, 0)]
    for ii in range(input.ndim):
        if ii != axis:
            passes.append(_gpu.Pass(ii, np.asarray(smoothing, float), check_mode(modes[ii]), c, 0))
    return _run_passes(input, passes, output, _strategy(strategy))


@planned
def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0, *, strategy=None):
    """Prewitt filter (scipy.ndimage.prewitt): [-1, 0, 1] along ``axis``, [1, 1, 1] along the
    others.

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import prewitt
        >>> prewitt(np.array([[0, 0, 1, 1]] * 3))
        array([[0, 3, 3, 0],
               [0, 3, 3, 0],
               [0, 3, 3, 0]])
    """
    return _derivative_with_smoothing(
        input, axis, output, mode, cval, [-1, 0, 1], [1, 1, 1], strategy
    )


@planned
def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0, *, strategy=None):
    """Sobel filter (scipy.ndimage.sobel): [-1, 0, 1] along ``axis``, [1, 2, 1] along the
    others.

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import sobel
        >>> sobel(np.array([[0, 0, 1, 1]] * 3))
        array([[0, 4, 4, 0],
               [0, 4, 4, 0],
               [0, 4, 4, 0]])
    """
    return _derivative_with_smoothing(
        input, axis, output, mode, cval, [-1, 0, 1], [1, 2, 1], strategy
    )


# --------------------------------------------------------------------------- Laplace, gradients


def generic_laplace(
    input,
    derivative2: Callable[..., Any],
    output=None,
    mode="reflect",
    cval=0.0,
    extra_arguments=(),
    extra_keywords=None,
    *,
    axes=None,
):
    """N-D Laplace filter from a second-derivative function (scipy.ndimage.generic_laplace):
    the sum over ``axes`` of ``derivative2(input, axis, output, mode, cval, *extra_arguments,
    **extra_keywords)``."""
    if extra_keywords is None:
        extra_keywords = {}
    input = np.asarray(input)
    output = get_output(output, input)
    axes = check_axes(axes, input.ndim)
    if len(axes) > 0:
        modes = normalize_sequence(mode, len(axes))
        derivative2(input, axes[0], output, modes[0], cval, *extra_arguments, **extra_keywords)
        for ii in range(1, len(axes)):
            tmp = derivative2(
                input, axes[ii], output.dtype, modes[ii], cval, *extra_arguments,
                **extra_keywords,
            )  # fmt: skip
            output += tmp
    else:
        output[...] = input[...]
    return output


def laplace(input, output=None, mode="reflect", cval=0.0, *, axes=None, strategy=None):
    """N-D Laplace filter with second differences [1, -2, 1] (scipy.ndimage.laplace).

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import laplace
        >>> laplace(np.array([0.0, 0.0, 1.0, 0.0, 0.0]))
        array([ 0.,  1., -2.,  1.,  0.])
    """

    def derivative2(input, axis, output, mode, cval):
        return correlate1d(input, [1, -2, 1], axis, output, mode, cval, 0, strategy=strategy)

    _strategy(strategy)
    return generic_laplace(input, derivative2, output, mode, cval, axes=axes)


def _gaussian_derivative(order: int, strategy: str | None) -> Callable[..., Any]:
    """The derivative function gaussian_laplace (order 2) and gaussian_gradient_magnitude
    (order 1) hand to generic_laplace and generic_gradient_magnitude, as scipy's: a
    gaussian_filter of that order along ``axis`` and of order 0 along the others."""

    def derivative(input, axis, output, mode, cval, sigma, **kwargs):
        orders = [0] * input.ndim
        orders[axis] = order
        return gaussian_filter(
            input, sigma, orders, output, mode, cval, strategy=strategy, **kwargs
        )

    return derivative


def gaussian_laplace(
    input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None, strategy=None, **kwargs
):
    """Laplace filter with Gaussian second derivatives (scipy.ndimage.gaussian_laplace);
    ``kwargs`` go to :func:`gaussian_filter` (``truncate``, ``radius``)."""
    input = np.asarray(input)
    derivative2 = _gaussian_derivative(2, _strategy(strategy))
    axes = check_axes(axes, input.ndim)
    sigma = normalize_sequence(sigma, len(axes))
    if len(axes) < input.ndim:
        full = [0] * input.ndim
        for s, ax in zip(sigma, axes, strict=True):
            full[ax] = s
        sigma = full
    return generic_laplace(
        input, derivative2, output, mode, cval, extra_arguments=(sigma,), extra_keywords=kwargs,
        axes=axes,
    )  # fmt: skip


def generic_gradient_magnitude(
    input,
    derivative: Callable[..., Any],
    output=None,
    mode="reflect",
    cval=0.0,
    extra_arguments=(),
    extra_keywords=None,
    *,
    axes=None,
):
    """Gradient magnitude from a first-derivative function
    (scipy.ndimage.generic_gradient_magnitude): the square root of the sum over ``axes`` of
    each ``derivative(input, axis, output, mode, cval, ...)`` squared."""
    if extra_keywords is None:
        extra_keywords = {}
    input = np.asarray(input)
    output = get_output(output, input)
    axes = check_axes(axes, input.ndim)
    if len(axes) > 0:
        modes = normalize_sequence(mode, len(axes))
        derivative(input, axes[0], output, modes[0], cval, *extra_arguments, **extra_keywords)
        np.multiply(output, output, output)
        for ii in range(1, len(axes)):
            tmp = derivative(
                input, axes[ii], output.dtype, modes[ii], cval, *extra_arguments,
                **extra_keywords,
            )  # fmt: skip
            np.multiply(tmp, tmp, tmp)
            output += tmp
        # The square root written back into output whatever its type (integers truncated).
        np.sqrt(output, output, casting="unsafe")
    else:
        output[...] = input[...]
    return output


def gaussian_gradient_magnitude(
    input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None, strategy=None, **kwargs
):
    """Gradient magnitude with Gaussian first derivatives
    (scipy.ndimage.gaussian_gradient_magnitude); ``kwargs`` go to :func:`gaussian_filter`."""
    input = np.asarray(input)
    derivative = _gaussian_derivative(1, _strategy(strategy))
    return generic_gradient_magnitude(
        input, derivative, output, mode, cval, extra_arguments=(sigma,), extra_keywords=kwargs,
        axes=axes,
    )  # fmt: skip


# --------------------------------------------------------------------------- n-D correlation


def _correlate_or_convolve(input, weights, output, mode, cval, origin, convolution, axes, strategy):
    input = np.asarray(input)
    weights = np.asarray(weights)
    complex_input = input.dtype.kind == "c"
    complex_weights = weights.dtype.kind == "c"
    if complex_input or complex_weights:
        if complex_weights and not convolution:
            weights = weights.conj()  # as np.correlate: the weights conjugated, not the input
        output = get_output(output, input, complex_output=True)
        return _complex_via_real_components(
            _correlate_or_convolve_kw, input, weights, output, cval,
            mode=mode, origin=origin, convolution=convolution, axes=axes, strategy=strategy,
        )  # fmt: skip
    axes = check_axes(axes, input.ndim)
    weights = np.asarray(weights, dtype=np.float64)
    if len(axes) < input.ndim:
        if weights.ndim != len(axes):
            raise RuntimeError(f"weights.ndim ({weights.ndim}) must match len(axes) ({len(axes)})")
        weights = np.expand_dims(weights, tuple(ax for ax in range(input.ndim) if ax not in axes))
    origins = expand_origin(input.ndim, axes, origin)
    wshape = [s for s in weights.shape if s > 0]
    if len(wshape) != input.ndim:
        raise RuntimeError(f"weights.ndim ({len(wshape)}) must match len(axes) ({len(axes)})")
    if convolution:
        weights = weights[tuple([slice(None, None, -1)] * weights.ndim)]
        for ii in range(len(origins)):
            origins[ii] = -origins[ii]
            if not weights.shape[ii] & 1:
                origins[ii] -= 1
    for o, size in zip(origins, wshape, strict=True):
        if invalid_origin(o, size):
            raise ValueError(
                "Invalid origin; origin must satisfy -(weights.shape[k] // 2) <= origin[k] <= "
                f"(weights.shape[k]-1) // 2, got {o} for {size} weights"
            )
    output = get_output(output, input)
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        raise RuntimeError("A sequence of modes is not supported")
    mode = check_mode(mode)
    check_dtype(input.dtype)
    check_dtype(output.dtype, "output")
    c = _cval(cval)
    origins = [_origin(o) for o in origins]
    strategy = _strategy(strategy)
    if input.size == 0:
        return output
    if input.ndim == 0:
        _store(_values(input) * weights.reshape(()), output)
        return output
    values = _values(input)
    fresh = is_fresh(output) and output.dtype == values.dtype  # no cast: the result stands in
    result = _gpu.run_nd(values, weights, mode, c, origins, strategy=strategy, lend=fresh)
    if fresh:
        return result
    _snap_store(result, input, [weights], c, output)
    return output


def _correlate_or_convolve_kw(
    input, weights, output=None, cval=0.0, *, mode, origin, convolution, axes, strategy
):
    return _correlate_or_convolve(
        input, weights, output, mode, cval, origin, convolution, axes, strategy
    )


def correlate(
    input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None, strategy=None
):
    """Multidimensional correlation (scipy.ndimage.correlate): each output is the sum of the
    weights times the input values under them; zero weights read nothing.

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import correlate
        >>> correlate(np.arange(25).reshape(5, 5), np.ones((3, 3)) / 9)[2]
        array([10, 11, 12, 13, 13])
    """
    return _correlate_or_convolve(input, weights, output, mode, cval, origin, False, axes, strategy)


def convolve(
    input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None, strategy=None
):
    """Multidimensional convolution (scipy.ndimage.convolve): correlation with the weights
    reversed along every axis.

    Example:
        >>> import numpy as np
        >>> from blurapp.ndimage import convolve
        >>> convolve(np.array([[1, 2, 0, 0], [5, 3, 0, 4]]), np.array([[1, 1], [1, 0]]))
        array([[10,  3,  4,  8],
               [11,  3,  8, 12]])
    """
    return _correlate_or_convolve(input, weights, output, mode, cval, origin, True, axes, strategy)
