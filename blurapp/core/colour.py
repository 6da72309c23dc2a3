"""The sRGB transfer curves, for filtering in linear light (``--linear``)."""

from __future__ import annotations

import numpy as np

__all__ = ["linear_to_srgb", "srgb_to_linear"]


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """The sRGB decoding curve (IEC 61966-2-1), odd-symmetric so signed values survive."""
    a = np.abs(c)
    lin = np.where(a <= 0.04045, a / 12.92, ((a + 0.055) / 1.055) ** 2.4)
    return np.copysign(lin, c).astype(c.dtype, copy=False)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    """The sRGB encoding curve, inverse of :func:`srgb_to_linear`."""
    a = np.abs(x)
    enc = np.where(a <= 0.0031308, a * 12.92, 1.055 * a ** (1 / 2.4) - 0.055)
    return np.copysign(enc, x).astype(x.dtype, copy=False)
