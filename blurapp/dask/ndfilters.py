"""dask_image.ndfilters' linear filters, each chunk through :mod:`blurapp.ndimage` on the GPU.

The functions, signatures and chunking are dask-image's (``dask_image.ndfilters``): every chunk
is extended with its neighbours' values by ``map_overlap`` (depth half the kernel plus
``|origin|``, dask's ``boundary="none"``, so that the filter's own ``mode`` applies at the true
array edges), filtered with the scipy.ndimage function of the same name, here
:mod:`blurapp.ndimage`'s, and cut back. ``mode="wrap"`` in ``correlate`` and ``convolve`` takes
dask's periodic boundary, as dask-image does. The results equal dask_image.ndfilters' (scipy's)
to the arithmetic blurapp.ndimage promises. A keyword-only ``strategy=`` goes to
blurapp.ndimage (a strategy of blurapp's registry; the default runs its exact GPU passes).

Example:
    >>> import dask.array as da, numpy as np
    >>> from blurapp.dask import ndfilters
    >>> image = da.from_array(np.arange(36.0).reshape(6, 6), chunks=3)
    >>> ndfilters.uniform_filter(image, 3).compute()[1, :3]
    array([6.33333333, 7.        , 8.        ])
"""

from __future__ import annotations

import numbers
from typing import Any

import dask.array as da
import numpy as np

from blurapp import ndimage

__all__ = [
    "convolve",
    "correlate",
    "gaussian",
    "gaussian_filter",
    "gaussian_gradient_magnitude",
    "gaussian_laplace",
    "laplace",
    "prewitt",
    "sobel",
    "uniform_filter",
]


def _as_dask(image: Any) -> da.Array:
    return image if isinstance(image, da.Array) else da.asarray(image)


def _origins(shape: tuple[int, ...], origin: Any) -> tuple[int, ...]:
    """One integral origin per axis inside the kernel, as dask-image checks them."""
    size = np.array(shape)
    o = np.array((origin,) * len(shape) if isinstance(origin, numbers.Number) else origin)
    if not issubclass(o.dtype.type, numbers.Integral):
        raise TypeError(f"The origin must be of integral type, got {origin!r}")
    if o.ndim != 1 or len(o) != len(shape):
        raise RuntimeError(
            f"The origin must have one value per dimension of the array ({len(shape)}), "
            f"got {origin!r}"
        )
    if not (o < (size + 1) // 2).all():
        raise ValueError(f"The origin {origin!r} must be within the footprint {shape}")
    return tuple(int(v) for v in o)


def _depth(shape: tuple[int, ...], origin: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(s) // 2 + abs(int(o)) for s, o in zip(shape, origin, strict=True))


def _sizes(ndim: int, size: Any) -> tuple[int, ...]:
    sizes = np.array((size,) * ndim if isinstance(size, numbers.Number) else size)
    if sizes.ndim != 1 or len(sizes) != ndim:
        raise RuntimeError(f"The size must have one value per dimension ({ndim}), got {size!r}")
    if not issubclass(sizes.dtype.type, numbers.Integral):
        raise TypeError(f"The size must be of integral type, got {size!r}")
    return tuple(int(s) for s in sizes)


def _sigmas(ndim: int, sigma: Any) -> tuple[float, ...]:
    s = np.array(sigma)
    if s.ndim == 0:
        s = np.array(ndim * [s[()]])
    if s.ndim != 1:
        raise RuntimeError(f"Must have a single sigma or a single sequence, got {sigma!r}")
    if len(s) != ndim:
        raise RuntimeError(f"Must have one sigma per image dimension ({ndim}), got {sigma!r}")
    if not issubclass(s.dtype.type, numbers.Real):
        raise TypeError(f"Must have real sigmas, got {sigma!r}")
    return tuple(s.tolist())


def _gaussian_depth(sigma: tuple[float, ...], truncate: Any) -> tuple[int, ...]:
    if not isinstance(truncate, numbers.Real):
        raise TypeError(f"Must have a real truncate value, got {truncate!r}")
    return tuple(np.ceil(np.array(sigma) * truncate).astype(int).tolist())


def _check_axis(ndim: int, axis: Any) -> None:
    if not isinstance(axis, numbers.Integral):
        raise ValueError(f"The axis must be of integral type, got {axis!r}")
    if axis < -ndim or axis >= ndim:
        raise ValueError(f"The axis {axis} is out of range for {ndim} dimensions")


def _overlap(image: da.Array, func, depth, boundary: str = "none", **kwargs) -> da.Array:
    return image.map_overlap(
        func, depth=tuple(depth), boundary=boundary, dtype=image.dtype, meta=image._meta,
        **kwargs,
    )  # fmt: skip


def _correlate_like(func, image, weights, mode, cval, origin, strategy):
    image = _as_dask(image)
    weights = np.asarray(weights)
    origin = _origins(weights.shape, origin)
    depth = _depth(weights.shape, origin)
    boundary = "none"
    if mode == "wrap":  # as dask-image: the periodic halo, and nothing left to wrap
        boundary, mode = "periodic", "constant"
    return _overlap(
        image, func, depth, boundary, weights=weights, mode=mode, cval=cval, origin=origin,
        strategy=strategy,
    )  # fmt: skip


def correlate(image, weights, mode="reflect", cval=0.0, origin=0, *, strategy=None):
    """Multidimensional correlation of a dask array, chunk by chunk
    (dask_image.ndfilters.correlate; blurapp.ndimage.correlate per chunk)."""
    return _correlate_like(ndimage.correlate, image, weights, mode, cval, origin, strategy)


def convolve(image, weights, mode="reflect", cval=0.0, origin=0, *, strategy=None):
    """Multidimensional convolution of a dask array, chunk by chunk
    (dask_image.ndfilters.convolve; blurapp.ndimage.convolve per chunk)."""
    return _correlate_like(ndimage.convolve, image, weights, mode, cval, origin, strategy)


def gaussian_filter(
    image, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, *, strategy=None
):
    """Multidimensional Gaussian filter of a dask array (dask_image.ndfilters.gaussian_filter;
    blurapp.ndimage.gaussian_filter per chunk)."""
    image = _as_dask(image)
    sigma = _sigmas(image.ndim, sigma)
    depth = _gaussian_depth(sigma, truncate)
    return _overlap(
        image, ndimage.gaussian_filter, depth, sigma=sigma, order=order, mode=mode, cval=cval,
        truncate=truncate, strategy=strategy,
    )  # fmt: skip


def gaussian(image, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, *, strategy=None):
    """Alias of :func:`gaussian_filter` (as dask-image has it)."""
    return gaussian_filter(
        image, sigma, order=order, mode=mode, cval=cval, truncate=truncate, strategy=strategy
    )


def gaussian_gradient_magnitude(
    image, sigma, mode="reflect", cval=0.0, truncate=4.0, *, strategy=None, **kwargs
):
    """Gradient magnitude with Gaussian derivatives of a dask array
    (dask_image.ndfilters.gaussian_gradient_magnitude)."""
    image = _as_dask(image)
    sigma = _sigmas(image.ndim, sigma)
    depth = _gaussian_depth(sigma, truncate)
    return _overlap(
        image, ndimage.gaussian_gradient_magnitude, depth, sigma=sigma, mode=mode, cval=cval,
        truncate=truncate, strategy=strategy, **kwargs,
    )  # fmt: skip


def gaussian_laplace(
    image, sigma, mode="reflect", cval=0.0, truncate=4.0, *, strategy=None, **kwargs
):
    """Laplace filter with Gaussian second derivatives of a dask array
    (dask_image.ndfilters.gaussian_laplace)."""
    image = _as_dask(image)
    sigma = _sigmas(image.ndim, sigma)
    depth = _gaussian_depth(sigma, truncate)
    return _overlap(
        image, ndimage.gaussian_laplace, depth, sigma=sigma, mode=mode, cval=cval,
        truncate=truncate, strategy=strategy, **kwargs,
    )  # fmt: skip


def uniform_filter(image, size=3, mode="reflect", cval=0.0, origin=0, *, strategy=None):
    """Multidimensional uniform (mean) filter of a dask array
    (dask_image.ndfilters.uniform_filter)."""
    image = _as_dask(image)
    size = _sizes(image.ndim, size)
    depth = _depth(size, _origins(size, origin))
    return _overlap(
        image, ndimage.uniform_filter, depth, size=size, mode=mode, cval=cval, origin=origin,
        strategy=strategy,
    )  # fmt: skip


def _derivative(func, image, axis, mode, cval, strategy):
    image = _as_dask(image)
    _check_axis(image.ndim, axis)
    return _overlap(
        image, func, (1,) * image.ndim, axis=axis, mode=mode, cval=cval, strategy=strategy
    )


def sobel(image, axis=-1, mode="reflect", cval=0.0, *, strategy=None):
    """Sobel filter of a dask array (dask_image.ndfilters.sobel)."""
    return _derivative(ndimage.sobel, image, axis, mode, cval, strategy)


def prewitt(image, axis=-1, mode="reflect", cval=0.0, *, strategy=None):
    """Prewitt filter of a dask array (dask_image.ndfilters.prewitt)."""
    return _derivative(ndimage.prewitt, image, axis, mode, cval, strategy)


def laplace(image, mode="reflect", cval=0.0, *, strategy=None):
    """Laplace filter of a dask array (dask_image.ndfilters.laplace)."""
    image = _as_dask(image)
    return _overlap(
        image, ndimage.laplace, (1,) * image.ndim, mode=mode, cval=cval, strategy=strategy
    )
