"""Conversion between stored pixel types and the normalised floats every filter works in.

Normalised units: uint8 / 255, uint16 / 65535, float32 and float64 as they are. A border
``constant=V`` is in these units too (0.5 is mid grey for integer images).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from blurapp.core.errors import ImageError, UsageError

__all__ = [
    "INTEGER_DTYPES",
    "MAX_CHANNELS",
    "RANGE_MODES",
    "SUPPORTED_DTYPES",
    "RangeMode",
    "check_image",
    "copy_pixels",
    "finite_bounds",
    "from_float",
    "put_pixels",
    "to_float",
]

RangeMode = Literal["clamp", "abs", "offset", "normalize"]
RANGE_MODES: tuple[str, ...] = ("clamp", "abs", "offset", "normalize")

SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t) for t in (np.uint8, np.uint16, np.float32, np.float64)
)
INTEGER_DTYPES: tuple[np.dtype, ...] = (np.dtype(np.uint8), np.dtype(np.uint16))
MAX_CHANNELS = 4

_SUPPORTED_TEXT = ", ".join(d.name for d in SUPPORTED_DTYPES)


def _supported_dtype(dtype: object) -> np.dtype:
    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        raise UsageError(
            f"unsupported pixel type {dtype!r}; supported: {_SUPPORTED_TEXT}"
        ) from None
    if dt not in SUPPORTED_DTYPES:
        raise UsageError(f"unsupported pixel type {dt.name}; supported: {_SUPPORTED_TEXT}")
    return dt


def check_image(image: np.ndarray) -> None:
    """Check that ``image`` is something the filters accept.

    Arguments:
        image: H×W or H×W×C array, C in 1..4, dtype uint8, uint16, float32 or float64.

    Raises:
        ImageError: with one line naming the problem (not an array, empty, wrong number of
            dimensions, too many channels, unsupported dtype).
    """
    if not isinstance(image, np.ndarray):
        raise ImageError(f"expected a numpy array as image, got {type(image).__name__}")
    if isinstance(image, np.ma.MaskedArray):
        # Filtering its data would ignore the mask without a word (issue 18).
        raise ImageError(
            "a masked array's mask would be ignored: pass image.filled(value) for the pixels "
            "to use under the mask, or image.data to filter them as they are"
        )
    if image.ndim not in (2, 3):
        raise ImageError(
            f"image must be H×W or H×W×C, got {image.ndim} dimension(s) with shape {image.shape}"
        )
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ImageError(f"image is empty (shape {image.shape})")
    if image.ndim == 3 and not 1 <= image.shape[2] <= MAX_CHANNELS:
        raise ImageError(
            f"image has {image.shape[2]} channels; 1 to {MAX_CHANNELS} are supported "
            f"(shape {image.shape})"
        )
    if image.dtype not in SUPPORTED_DTYPES:
        native = image.dtype.newbyteorder("=")
        if native in SUPPORTED_DTYPES and image.dtype.byteorder not in ("=", "|"):
            raise ImageError(
                f"pixel type {image.dtype.name} in non-native byte order ({image.dtype.str}): "
                f"convert it first, e.g. image.astype('{native.str}')"
            )
        raise ImageError(f"unsupported pixel type {image.dtype.name}; supported: {_SUPPORTED_TEXT}")


def beyond_float32(x: np.ndarray) -> bool:
    """Whether float64 ``x`` holds finite values float32 cannot (|v| > 3.4e38)."""
    if x.dtype != np.float64 or x.size == 0:
        return False
    # Runs on every float64 image under auto: one boolean mask, no float64 temporaries.
    finite = np.isfinite(x)
    limit = float(np.finfo(np.float32).max)
    high = np.max(x, where=finite, initial=-np.inf)
    return bool(high > limit or np.min(x, where=finite, initial=np.inf) < -limit)


def to_float(image: np.ndarray, dtype: type[np.floating] | np.dtype = np.float64) -> np.ndarray:
    """Convert an image to normalised floats, always H×W×C.

    Arguments:
        image: an image that passes :func:`check_image`.
        dtype: float32 or float64.

    Returns:
        A C-contiguous H×W×C array of ``dtype``. When ``image`` already is C-contiguous
        ``dtype`` it may be returned as a view: do not write into the result.

    Raises:
        ImageError: float64 pixels that ``dtype`` cannot hold (beyond ±3.4e38 for float32):
            they would become infinities where the float64 reference is finite.
    """
    check_image(image)
    out_dtype = np.dtype(dtype)
    if out_dtype.kind != "f":
        raise UsageError(f"to_float needs a float dtype, got {out_dtype.name}")
    x = image if image.ndim == 3 else image[:, :, np.newaxis]
    if x.dtype in INTEGER_DTYPES:
        # Divide (not multiply by 1/max) so that from_float's rint(x * max) gives back the input
        # exactly, also in float32.
        scale = out_dtype.type(np.iinfo(x.dtype).max)
        return np.ascontiguousarray(x.astype(out_dtype) / scale)
    if x.dtype.itemsize <= out_dtype.itemsize:
        return np.ascontiguousarray(x, dtype=out_dtype)
    with np.errstate(over="ignore"):
        out = np.ascontiguousarray(x, dtype=out_dtype)
    if not np.isfinite(out).all():
        overflowed = np.isinf(out) & np.isfinite(x)
        if overflowed.any():  # inf where the image holds a number: refused, never computed
            peak = float(np.max(np.abs(x[overflowed])))
            raise ImageError(
                f"pixel values up to {peak:.3g} are beyond {out_dtype.name} "
                f"(±{float(np.finfo(out_dtype).max):.3g}), which the GPU computes in; "
                "use --strategy cpu (float64)"
            )
    return out


def finite_bounds(x: np.ndarray) -> tuple[float, float] | None:
    """The finite minimum and maximum of ``x`` (``normalize``'s range), or ``None``."""
    finite = x[np.isfinite(x)]
    return (float(finite.min()), float(finite.max())) if finite.size else None


def _apply_range(
    x: np.ndarray, range_mode: str, bounds: tuple[float, float] | None = None
) -> np.ndarray:
    """Map filtered values into [0, 1] as ``range_mode`` says (float64 work array)."""
    if range_mode == "clamp":
        y = np.array(x, dtype=np.float64)
    elif range_mode == "abs":
        y = np.abs(x, dtype=np.float64)
    elif range_mode == "offset":
        y = np.add(x, 0.5, dtype=np.float64)
    else:  # normalize: stretch the finite min..max to 0..1 over all channels together
        y = np.array(x, dtype=np.float64)
        lo, hi = bounds if bounds is not None else (finite_bounds(y) or (0.0, 0.0))
        if hi > lo:
            y -= lo
            y /= hi - lo
        else:  # a constant result has no range to stretch: it maps to 0
            y[np.isfinite(y)] = 0.0
    # NaN has no integer value; make it 0 rather than undefined-behaviour garbage.
    np.nan_to_num(y, copy=False, nan=0.0, posinf=1.0, neginf=0.0)
    np.clip(y, 0.0, 1.0, out=y)
    return y


def from_float(
    x: np.ndarray,
    dtype: type[np.generic] | np.dtype | str,
    *,
    range_mode: RangeMode | str = "clamp",
    squeeze: bool,
    bounds: tuple[float, float] | None = None,
) -> np.ndarray:
    """Convert normalised filter output back to a stored pixel type.

    For uint8/uint16 the values first go through ``range_mode``:
    ``clamp`` clips to [0, 1]; ``abs`` takes |x| then clips; ``offset`` adds 0.5 then clips
    (mid grey is zero, for signed results such as Sobel); ``normalize`` stretches the image's
    min..max (all channels together) linearly to [0, 1], a constant image becoming 0. Then they
    are multiplied by the type's maximum, rounded to nearest (``np.rint``, ties to even) and
    clipped to its range; NaN becomes 0. Float outputs are neither clamped nor range-mapped
    (``range_mode`` is still validated but otherwise ignored): a float file keeps signed values.

    Arguments:
        x: H×W×C (or H×W) float array in normalised units.
        dtype: the output dtype: uint8, uint16, float32 or float64.
        range_mode: one of :data:`RANGE_MODES`.
        squeeze: drop the channel axis (C must be 1), to give back an H×W image for an H×W input.
        bounds: ``normalize``'s (min, max) when ``x`` is a part of the image (a tile):
            the whole image's :func:`finite_bounds`. ``None``: ``x``'s own.

    Returns:
        A new array of ``dtype``.
    """
    dt = _supported_dtype(dtype)
    if range_mode not in RANGE_MODES:
        raise UsageError(f"unknown range mode {range_mode!r}; valid: {', '.join(RANGE_MODES)}")
    x = np.asarray(x)
    if x.dtype.kind not in "fiu":
        raise UsageError(f"from_float needs a numeric array, got dtype {x.dtype.name}")
    if squeeze and x.ndim == 3:
        if x.shape[2] != 1:
            raise ValueError(f"cannot squeeze the channel axis of shape {x.shape}: C is not 1")
        x = x[:, :, 0]
    if dt.kind == "f":
        # A float64 result beyond float32 is ±inf in a float32 output, as on the GPU (DESIGN.md
        # "Numbers": float output is not clamped); numpy's overflow warning says nothing more.
        with np.errstate(over="ignore"):
            return x.astype(dt, copy=True)
    top = float(np.iinfo(dt).max)
    y = _apply_range(x, range_mode, bounds)
    y *= top
    np.rint(y, out=y)
    np.clip(y, 0.0, top, out=y)
    return y.astype(dt)


def _as_items(a: np.ndarray) -> np.ndarray | None:
    """The H×W×C array ``a`` as H×W×1 items of C values each (a void type), viewing the same
    memory; ``None`` where numpy cannot (a last axis that is not contiguous)."""
    try:
        return a.view(f"V{a.shape[2] * a.itemsize}")
    except (ValueError, TypeError):
        return None


def copy_pixels(y: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of the H×W×C array ``y`` (``np.array(y)``).

    For pixels further apart than their channels (3 channels in a 4-channel buffer: a GPU
    readback) numpy copies one value at a time; copied as one C-value item per pixel it is
    about twice as fast (a 784×784 RGB tile of an RGBA buffer: 2.1 instead of 4.8 ms).
    """
    if y.ndim == 3 and not y.flags.c_contiguous and y.size:
        items = _as_items(y)
        if items is not None:
            return items.copy().view(y.dtype).reshape(y.shape)
    return np.array(y)


def put_pixels(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[:, :, :C] = src`` for H×W×C ``src`` and an H×W×K ``dst`` of the same type (C ≤ K:
    an upload's RGBA layout), a pixel's C values moved as one item (see :func:`copy_pixels`)."""
    channels = src.shape[2]
    if channels < dst.shape[2] and src.size and src.dtype == dst.dtype:
        to, of = _as_items(dst[:, :, :channels]), _as_items(src)
        if to is not None and of is not None:
            to[...] = of
            return
    dst[:, :, :channels] = src
