"""Argument handling as scipy.ndimage does it: sequences per axis, axes, origins, modes, the
output argument and the dtypes the filters take, with scipy's exception types."""

from __future__ import annotations

import operator
import warnings
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from blurapp.ndimage._gpu import MODES

try:  # numpy >= 2
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # numpy 1.26
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]

__all__ = [
    "check_axes",
    "check_dtype",
    "check_mode",
    "expand_mode",
    "expand_origin",
    "get_output",
    "invalid_origin",
    "normalize_axis_index",
    "normalize_sequence",
]

# The real dtypes the filters read and write: scipy's (bool, every integer, float32/64) and,
# as cupyx.scipy.ndimage takes it, float16 (scipy raises RuntimeError for float16).
_REAL_KINDS = "biuf"


def check_mode(mode: Any) -> str:
    """A mode name scipy accepts for filters, or RuntimeError as scipy raises it."""
    if not isinstance(mode, str) or mode not in MODES:
        raise RuntimeError(f"boundary mode not supported: {mode!r}; valid: {', '.join(MODES)}")
    return mode


def check_dtype(dtype: np.dtype, what: str = "array") -> None:
    """RuntimeError (scipy's type) for a dtype the filters do not compute on."""
    if dtype.kind not in _REAL_KINDS or dtype.itemsize > 8 or dtype.byteorder not in "=|<>":
        raise RuntimeError(f"{what} type {dtype!r} not supported")


def normalize_sequence(value: Any, rank: int) -> list[Any]:
    """``value`` once per axis: a scalar (or string) repeated, a sequence checked for length."""
    if not isinstance(value, str) and np.iterable(value):
        normalized = list(value)
        if len(normalized) != rank:
            raise RuntimeError(
                f"sequence argument must have length equal to input rank ({rank}), "
                f"got {len(normalized)}"
            )
        return normalized
    return [value] * rank


def check_axes(axes: Any, ndim: int) -> tuple[int, ...]:
    """The axes a filter runs along, as scipy checks them (ValueError for bad ones)."""
    if axes is None:
        return tuple(range(ndim))
    if np.isscalar(axes):
        axes = (operator.index(axes),)
    elif isinstance(axes, Iterable):
        axes = tuple(operator.index(ax) for ax in axes)
        for ax in axes:
            if ax < -ndim or ax > ndim - 1:
                raise ValueError(f"specified axis: {ax} is out of range")
        axes = tuple(ax % ndim if ax < 0 else ax for ax in axes)
    else:
        raise ValueError("axes must be an integer, iterable of integers, or None")
    if len(set(axes)) != len(axes):
        raise ValueError("axes must be unique")
    return axes


def expand_origin(ndim: int, axes: tuple[int, ...], origin: Any) -> list[Any]:
    """One origin per array axis: those given for ``axes``, 0 for the others."""
    origins = normalize_sequence(origin, len(axes))
    if len(axes) < ndim:
        full = [0] * ndim
        for o, ax in zip(origins, axes, strict=True):
            full[ax] = o
        origins = full
    return origins


def expand_mode(ndim: int, axes: tuple[int, ...], mode: Any) -> Any:
    """A sequence of modes for ``axes`` spread over every array axis (the others get
    'constant', which a size-1 kernel axis never reads); a single mode stays as it is."""
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        modes = normalize_sequence(mode, len(axes))
        full = ["constant"] * ndim
        for m, ax in zip(modes, axes, strict=True):
            full[ax] = m
        return full
    return mode


def invalid_origin(origin: Any, size: int) -> bool:
    """Whether ``origin`` puts the kernel's anchor outside its ``size`` taps."""
    return origin < -(size // 2) or origin > (size - 1) // 2


def _is_dtype_like(output: Any) -> bool:
    return isinstance(output, (type, np.dtype))


#: The outputs get_output made (for ``None`` or a dtype), by id: a filter may return another
#: new array of the same shape and dtype in their place (is_fresh), none of the caller's.
_FRESH: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _fresh(array: np.ndarray) -> np.ndarray:
    _FRESH[id(array)] = array
    return array


def is_fresh(output: np.ndarray) -> bool:
    """Whether ``output`` is a new array get_output made, which no caller holds yet."""
    return _FRESH.get(id(output)) is output


def get_output(
    output: Any, input: np.ndarray, shape: tuple[int, ...] | None = None, complex_output=False
) -> np.ndarray:
    """The array a filter writes into: a new one (``None``, a dtype, a type or a dtype's name)
    or the caller's, checked as scipy checks it (RuntimeError for a wrong shape or type)."""
    if shape is None:
        shape = input.shape
    if output is None:
        # Every filter writes every element of a new output: np.empty, not scipy's zeros.
        if complex_output:
            return np.empty(shape, dtype=np.promote_types(input.dtype, np.complex64))
        return _fresh(np.empty(shape, dtype=input.dtype.name))
    if _is_dtype_like(output):
        if complex_output and np.dtype(output).kind != "c":
            warnings.warn("promoting specified output dtype to complex", stacklevel=3)
            output = np.promote_types(output, np.complex64)
        return _fresh(np.zeros(shape, dtype=output))
    if isinstance(output, str):
        dtype = np.dtype(output)
        if complex_output and dtype.kind != "c":
            raise RuntimeError("output must have complex dtype")
        if not issubclass(dtype.type, np.number):
            raise RuntimeError("output must have numeric dtype")
        return _fresh(np.zeros(shape, dtype=dtype))
    output = np.asarray(output)
    # Handed on as an explicit output (a filter's inner call): it must be written into.
    _FRESH.pop(id(output), None)
    if output.shape != shape:
        raise RuntimeError(f"output shape not correct: {output.shape}, expected {shape}")
    if complex_output and output.dtype.kind != "c":
        raise RuntimeError("output must have complex dtype")
    return output
