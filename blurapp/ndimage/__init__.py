"""scipy.ndimage's linear filters on any WebGPU adapter: ``from blurapp import ndimage`` in
place of ``from scipy import ndimage``, with scipy's names, signatures, defaults (mode
``'reflect'``), dtypes, casting and exceptions; the correlations run on the GPU.

scipy is not imported (it stays a test dependency). What differs from scipy on purpose, and
why, is in docs/NDIMAGE.md; each function also takes a keyword-only ``strategy=`` (a name of
blurapp's strategy registry) to run its passes with another engine strategy.
"""

from __future__ import annotations

from blurapp.ndimage._filters import (
    convolve,
    convolve1d,
    correlate,
    correlate1d,
    gaussian_filter,
    gaussian_filter1d,
    gaussian_gradient_magnitude,
    gaussian_laplace,
    generic_gradient_magnitude,
    generic_laplace,
    laplace,
    prewitt,
    sobel,
    uniform_filter,
    uniform_filter1d,
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
