"""The reduced pictures of the live preview: an area-downscaled image and the kernel resampled
to the same scale, so that filtering the small image approximates the downscaled result."""

from __future__ import annotations

import math

import numpy as np

from blurapp.core.kernel import Kernel

__all__ = ["downscale", "reduced_kernel"]


def downscale(pixels: np.ndarray, factor: int) -> np.ndarray:
    """The mean of each ``factor`` × ``factor`` block (partial blocks at the right and bottom
    edges average what they hold), in ``pixels``' dtype (integers rounded)."""
    if factor <= 1:
        return pixels
    h, w = pixels.shape[:2]
    hh, ww = -(-h // factor), -(-w // factor)
    pad = ((0, hh * factor - h), (0, ww * factor - w)) + ((0, 0),) * (pixels.ndim - 2)
    x = np.pad(pixels, pad, mode="edge") if any(p[1] for p in pad) else pixels
    blocks = x.reshape(hh, factor, ww, factor, *pixels.shape[2:])
    if pixels.dtype.kind in "ui":
        total = blocks.sum(axis=(1, 3), dtype=np.uint64 if pixels.itemsize > 2 else np.uint32)
        n = factor * factor
        return ((total + n // 2) // n).astype(pixels.dtype)
    return blocks.mean(axis=(1, 3), dtype=np.float64).astype(pixels.dtype)


def _tent_matrix(length: int, anchor: int, factor: int, half: int) -> np.ndarray:
    """(2·half + 1) × length: tap ``i`` (offset i − anchor) spread between the two reduced
    offsets around (i − anchor) / factor, linearly."""
    m = np.zeros((2 * half + 1, length))
    for i in range(length):
        p = (i - anchor) / factor
        lo = math.floor(p)
        frac = p - lo
        m[lo + half, i] += 1.0 - frac
        if frac > 0:
            m[lo + 1 + half, i] += frac
    return m


def reduced_kernel(kernel: Kernel, factor: int) -> Kernel:
    """``kernel`` resampled to an image ``factor`` times smaller: each weight split linearly
    between the reduced offsets around its own offset / ``factor`` (the sum is kept, the anchor
    stays in the middle). Filtering the area-downscaled image with it approximates the
    downscaled result: a Gaussian of sigma s becomes about s / factor, a box of 21 about 5, and
    a derivative a derivative of a quarter of the strength at a quarter of the scale, which is
    what averaging the full-resolution result would show."""
    if factor <= 1:
        return kernel
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    hr = math.ceil(max(ar, rows - 1 - ar) / factor)
    hc = math.ceil(max(ac, cols - 1 - ac) / factor)
    weights = (
        _tent_matrix(rows, ar, factor, hr) @ kernel.weights @ _tent_matrix(cols, ac, factor, hc).T
    )
    # Rings of zeros that the split left on both sides cost taps and change nothing.
    while weights.shape[0] > 1 and not weights[0].any() and not weights[-1].any():
        weights = weights[1:-1]
    while weights.shape[1] > 1 and not weights[:, 0].any() and not weights[:, -1].any():
        weights = weights[:, 1:-1]
    # Not Kernel.from_weights: its exact matrix: spec (every weight as text) took 0.1-0.15 s
    # of a 47x47 preview kernel's first picture; this kernel is never saved or exported.
    return Kernel(weights, kernel.name, f"{kernel.spec} at 1/{factor}")
