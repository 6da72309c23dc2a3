"""int8 for the conv lab: per-tensor scale and zero point, channel packing, the exact int64 oracle.

A real value v is stored as ``q = clamp(round(v / scale) + zero_point, −128, 127)``; zero padding
(v = 0) is ``q = zero_point`` exactly. A layer's int32 accumulator of output (n, o, y, x) is

    acc = bq[o] + Σ over every tap and input channel of (xq − zx)·(wq − zw),

with the bias quantised to ``bq = round(b / (sx·sw))``; the output is ``sx·sw·acc``, rounded
once, at the end. The shaders take four channels at a time, packed little-endian into one u32
(``dot4I8Packed``), so a group's channels are padded to a multiple of 4 with the zero points
(those slots add (zx − zx)·(wq − zw) = 0). Expanding the product, the shader sums
``Σ xq·wq`` (packed dot products) and, when zw ≠ 0, ``Σ xq``; everything that depends on the
weights alone is folded, per output channel, into one constant set before the first input
channel block: :func:`folded_constant`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from blurapp.conv.reference import correlate_layers
from blurapp.conv.spec import ConvSpec

__all__ = [
    "QuantParams",
    "choose_qparams",
    "conv2d_int_reference",
    "folded_constant",
    "pack_input",
    "pack_weights",
    "quantize",
    "quantize_bias",
]


@dataclass(frozen=True)
class QuantParams:
    """One tensor's int8 quantisation: ``v ≈ scale · (q − zero_point)``."""

    scale: float
    zero_point: int

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "zero_point": self.zero_point}


def choose_qparams(a: np.ndarray, *, symmetric: bool = False) -> QuantParams:
    """Per-tensor parameters covering ``a``'s range (and 0, so that padding is exact).

    Arguments:
        a: the float tensor.
        symmetric: zero point 0 and scale max|a|/127 (else the affine min/max over 255 steps).
    """
    lo, hi = min(float(np.min(a)), 0.0), max(float(np.max(a)), 0.0)
    if symmetric:
        top = max(-lo, hi)
        return QuantParams(float(np.float32(top / 127 if top > 0 else 1.0)), 0)
    scale = float(np.float32((hi - lo) / 255 if hi > lo else 1.0))
    zero = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return QuantParams(scale, zero)


def quantize(a: np.ndarray, qp: QuantParams) -> np.ndarray:
    """``a`` as int8 with ``qp`` (round half to even, clamped)."""
    q = np.round(np.asarray(a, np.float64) / qp.scale) + qp.zero_point
    return np.clip(q, -128, 127).astype(np.int8)


def quantize_bias(b: np.ndarray | None, cout: int, sx: QuantParams, sw: QuantParams) -> np.ndarray:
    """The bias in accumulator units, ``round(b / (sx·sw))``, as int32 (zeros without a bias)."""
    if b is None:
        return np.zeros(cout, np.int32)
    q = np.round(np.asarray(b, np.float64) / (sx.scale * sw.scale))
    return np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)


def _pad_channels(q: np.ndarray, axis: int, groups: int, fill: int) -> np.ndarray:
    """Pad each group's channels along ``axis`` to a multiple of 4 with ``fill``."""
    c = q.shape[axis]
    cg = c // groups
    cg4 = -(-cg // 4) * 4
    if cg4 == cg:
        return q
    shape = list(q.shape)
    shape[axis] = groups
    shape.insert(axis + 1, cg)
    grouped = q.reshape(shape)
    pad = [(0, 0)] * grouped.ndim
    pad[axis + 1] = (0, cg4 - cg)
    padded = np.pad(grouped, pad, constant_values=fill)
    shape[axis + 1] = cg4
    return padded.reshape([*q.shape[:axis], groups * cg4, *q.shape[axis + 1 :]])


def _pack_last(q: np.ndarray) -> np.ndarray:
    """int8 ``(..., 4k)`` → uint32 ``(..., k)``, channel 4i in the low byte."""
    return np.ascontiguousarray(q).view(np.uint32)


def pack_input(xq: np.ndarray, spec: ConvSpec, zero_point: int) -> np.ndarray:
    """int8 input in ``spec.layout`` → uint32 ``(N, G·C4g, H, W)`` or ``(N, H, W, G·C4g)``."""
    if spec.layout == "nhwc":
        return _pack_last(_pad_channels(xq, 3, spec.groups, zero_point))
    padded = _pad_channels(xq, 1, spec.groups, zero_point)  # (N, C', H, W)
    n, c4x4, h, w = padded.shape
    # four neighbouring channels of one pixel side by side, then packed
    inter = padded.reshape(n, c4x4 // 4, 4, h, w).transpose(0, 1, 3, 4, 2)
    return _pack_last(inter).reshape(n, c4x4 // 4, h, w)


def pack_weights(wq: np.ndarray, zero_point: int) -> np.ndarray:
    """int8 ``(Cout, Cg, kh, kw)`` → uint32 ``(Cout, C4g, kh, kw)``, four channels a word."""
    padded = _pad_channels(wq, 1, 1, zero_point)
    cout, c4x4, kh, kw = padded.shape
    inter = padded.reshape(cout, c4x4 // 4, 4, kh, kw).transpose(0, 1, 3, 4, 2)
    return _pack_last(inter).reshape(cout, c4x4 // 4, kh, kw)


def folded_constant(wq: np.ndarray, bq: np.ndarray, zx: int, zw: int) -> np.ndarray:
    """Per output channel: ``bq − zx·Σwq + K·zx·zw`` over the packed slots (int32, wrapping).

    K is the packed slots per output (4·C4g·kh·kw); Σwq includes the padding slots (= zw).
    """
    padded = _pad_channels(wq, 1, 1, zw).astype(np.int64)
    k = padded[0].size
    const = bq.astype(np.int64) - zx * padded.reshape(len(bq), -1).sum(axis=1) + k * zx * zw
    return ((const + 2**31) % 2**32 - 2**31).astype(np.int32)


def conv2d_int_reference(
    xq: np.ndarray, zx: int, wq: np.ndarray, zw: int, bq: np.ndarray, spec: ConvSpec
) -> np.ndarray:
    """The int32 accumulators in int64 numpy, ``bq + Σ (xq − zx)(wq − zw)``, in spec's layout.

    Zero padding is ``xq = zx`` (a zero after subtracting the zero point).
    """
    xs = np.asarray(xq, np.int64) - zx
    ws = np.asarray(wq, np.int64) - zw
    y = correlate_layers(xs, ws, spec) + np.asarray(bq, np.int64)[None, :, None, None]
    return y.transpose(0, 2, 3, 1) if spec.layout == "nhwc" else y
