"""The float64 numpy Conv2D that every GPU conv strategy is checked against (the oracle)."""

from __future__ import annotations

import numpy as np

from blurapp.conv.spec import ConvSpec

__all__ = ["conv2d_reference"]


def conv2d_reference(
    x: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    stride: int = 1,
    dilation: int = 1,
    padding: int = 0,
    groups: int = 1,
    layout: str = "nchw",
) -> np.ndarray:
    """Conv2D as deep-learning frameworks define it (cross-correlation, zero padding), in float64.

    Arguments:
        x: ``(N, C, H, W)`` for nchw or ``(N, H, W, C)`` for nhwc.
        weights: ``(Cout, C/groups, kh, kw)``.
        bias: ``(Cout,)`` or ``None``.
        stride, dilation, padding, groups: as in ``torch.nn.functional.conv2d``.
        layout: ``"nchw"`` or ``"nhwc"``; the result comes back in the same layout.

    Returns:
        float64 ``(N, Cout, OH, OW)`` or ``(N, OH, OW, Cout)``.

    Example:
        >>> x = np.ones((1, 1, 3, 3)); w = np.ones((1, 1, 3, 3))
        >>> conv2d_reference(x, w, padding=1)[0, 0]
        array([[4., 6., 4.],
               [6., 9., 6.],
               [4., 6., 4.]])
    """
    spec = ConvSpec.from_arrays(
        np.shape(x),
        np.shape(weights),
        stride=stride,
        dilation=dilation,
        padding=padding,
        groups=groups,
        layout=layout,
        bias_shape=None if bias is None else np.shape(bias),
    )
    y = correlate_layers(np.asarray(x, np.float64), np.asarray(weights, np.float64), spec)
    if bias is not None:
        y += np.asarray(bias, dtype=np.float64)[None, :, None, None]
    return y.transpose(0, 2, 3, 1) if layout == "nhwc" else y


def correlate_layers(x: np.ndarray, weights: np.ndarray, spec: ConvSpec) -> np.ndarray:
    """The sums of a Conv2D without bias, in ``x``'s dtype (float64, or int64 for the int8
    reference's exact accumulators), NCHW ``(N, Cout, OH, OW)`` whatever ``spec.layout``.

    Zero padding is a 0 in ``x``'s units (the int8 reference subtracts its zero point first).
    """
    xs = x.transpose(0, 3, 1, 2) if spec.layout == "nhwc" else x
    p, s, d, g = spec.padding, spec.stride, spec.dilation, spec.groups
    xp = np.pad(xs, ((0, 0), (0, 0), (p, p), (p, p)))
    n, oh, ow = spec.n, spec.oh, spec.ow
    cg, mg = spec.cin // g, spec.cout // g
    xg = xp.reshape(n, g, cg, xp.shape[2], xp.shape[3])
    wg = weights.reshape(g, mg, cg, spec.kh, spec.kw)
    y = np.zeros((n, g, mg, oh, ow), x.dtype)
    exact = x.dtype.kind in "iu"  # no reordering BLAS path: integer sums stay exact anyway
    # One strided view per tap: kh·kw small einsums instead of an im2col copy of the input.
    for ky in range(spec.kh):
        for kx in range(spec.kw):
            y0, x0 = ky * d, kx * d
            window = xg[:, :, :, y0 : y0 + (oh - 1) * s + 1 : s, x0 : x0 + (ow - 1) * s + 1 : s]
            tap = wg[:, :, :, ky, kx]
            y += np.einsum("ngcij,gmc->ngmij", window, tap, optimize=not exact)
    return y.reshape(n, spec.cout, oh, ow)
