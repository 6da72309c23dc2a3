"""Random layers, layout conversion and the error measure the conv lab reports."""

from __future__ import annotations

import numpy as np

__all__ = ["random_layer", "relative_error", "to_layout"]


def to_layout(x: np.ndarray, layout: str) -> np.ndarray:
    """An NCHW array in ``layout`` (``"nchw"`` returns it as is), C-contiguous."""
    return x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def random_layer(
    n: int,
    cin: int,
    h: int,
    w: int,
    cout: int,
    k: int | tuple[int, int],
    groups: int = 1,
    *,
    layout: str = "nchw",
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal float32 input (in ``layout``), ``(Cout, Cin/groups, kh, kw)`` weights
    and a ``(Cout,)`` bias, reproducible from ``seed``."""
    kh, kw = (k, k) if isinstance(k, int) else k
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, cin, h, w)).astype(np.float32)
    wt = rng.standard_normal((cout, cin // groups, kh, kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    return to_layout(x, layout), wt, b


def relative_error(y: np.ndarray, reference: np.ndarray) -> float:
    """max |y − ref| / max |ref| (the absolute error when the reference is all zeros)."""
    if reference.size == 0:
        return 0.0
    scale = float(np.abs(reference).max())
    diff = float(np.abs(y.astype(np.float64) - reference).max())
    return diff / scale if scale > 0 else diff
