"""The shape of one convolution layer (Conv2D) and the checks that turn bad input into one line."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from blurapp.core.errors import UsageError

__all__ = ["LAYOUTS", "ConvSpec", "Layout", "conv_output_size"]

Layout = Literal["nchw", "nhwc"]
LAYOUTS: tuple[str, ...] = ("nchw", "nhwc")


def conv_output_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    """Output length of one spatial axis: ``(size + 2P - D(K-1) - 1) // S + 1`` (0 if none)."""
    span = dilation * (kernel - 1) + 1
    room = size + 2 * padding - span
    return room // stride + 1 if room >= 0 else 0


@dataclass(frozen=True)
class ConvSpec:
    """A Conv2D layer applied to a batch: shapes and hyper-parameters, already validated.

    Attributes:
        n, cin, h, w: batch, input channels, input height and width.
        cout, kh, kw: output channels and kernel rows and columns; the weights are
            ``(cout, cin // groups, kh, kw)``.
        stride, dilation, padding: the same along both axes; padding is zeros.
        groups: channel groups (1: dense; ``cin``: depthwise when ``cout`` is a multiple).
        layout: ``"nchw"`` or ``"nhwc"``, for the input and the output alike.
    """

    n: int
    cin: int
    h: int
    w: int
    cout: int
    kh: int
    kw: int
    stride: int = 1
    dilation: int = 1
    padding: int = 0
    groups: int = 1
    layout: Layout = "nchw"

    def __post_init__(self) -> None:
        for name in ("n", "cin", "h", "w", "cout", "kh", "kw", "stride", "dilation", "groups"):
            value = getattr(self, name)
            if int(value) != value or value < 1:
                raise UsageError(f"{name} must be a positive integer, got {value!r}")
        if int(self.padding) != self.padding or self.padding < 0:
            raise UsageError(f"padding must be 0 or more, got {self.padding!r}")
        if self.layout not in LAYOUTS:
            raise UsageError(f"layout {self.layout!r} is not one of {', '.join(LAYOUTS)}")
        if self.cin % self.groups or self.cout % self.groups:
            raise UsageError(
                f"groups={self.groups} must divide both input channels ({self.cin}) and "
                f"output channels ({self.cout})"
            )
        if self.oh < 1 or self.ow < 1:
            raise UsageError(
                f"a {self.kw}×{self.kh} kernel with dilation {self.dilation} spans "
                f"{self.dilation * (self.kw - 1) + 1}×{self.dilation * (self.kh - 1) + 1} pixels, "
                f"more than the {self.w}×{self.h} input padded by {self.padding}"
            )

    @classmethod
    def from_arrays(
        cls,
        x_shape: tuple[int, ...],
        w_shape: tuple[int, ...],
        *,
        stride: int = 1,
        dilation: int = 1,
        padding: int = 0,
        groups: int = 1,
        layout: str = "nchw",
        bias_shape: tuple[int, ...] | None = None,
    ) -> ConvSpec:
        """The spec of ``conv(x, w)``; raises :class:`UsageError` naming a mismatched shape.

        Arguments:
            x_shape: ``(N, C, H, W)`` for nchw, ``(N, H, W, C)`` for nhwc.
            w_shape: ``(Cout, Cin/groups, kh, kw)`` in both layouts.
            bias_shape: ``(Cout,)`` or ``None``.
        """
        if layout not in LAYOUTS:
            raise UsageError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
        if len(x_shape) != 4:
            axes = "(N, C, H, W)" if layout == "nchw" else "(N, H, W, C)"
            raise UsageError(f"input must be 4-D {axes} for {layout}, got shape {tuple(x_shape)}")
        if len(w_shape) != 4:
            raise UsageError(
                f"weights must be 4-D (Cout, Cin/groups, kh, kw), got shape {tuple(w_shape)}"
            )
        if layout == "nchw":
            n, cin, h, w = x_shape
        else:
            n, h, w, cin = x_shape
        cout, cin_g, kh, kw = w_shape
        if groups < 1 or cin % groups:
            raise UsageError(f"groups={groups} does not divide the {cin} input channels")
        if cout % groups:
            raise UsageError(f"groups={groups} does not divide the {cout} output channels")
        if cin_g * groups != cin:
            other = x_shape[3] if layout == "nchw" else x_shape[1]
            hint = (
                f"; is the input {'nhwc' if layout == 'nchw' else 'nchw'}? (--layout)"
                if cin_g * groups == other
                else ""
            )
            raise UsageError(
                f"weights have {cin_g} input channels per group but the {layout} input has "
                f"{cin} channels in {groups} group(s) (expected {cin_g * groups}){hint}"
            )
        if bias_shape is not None and tuple(bias_shape) != (cout,):
            raise UsageError(f"bias must have shape ({cout},), got {tuple(bias_shape)}")
        return cls(
            n=int(n),
            cin=int(cin),
            h=int(h),
            w=int(w),
            cout=int(cout),
            kh=int(kh),
            kw=int(kw),
            stride=int(stride),
            dilation=int(dilation),
            padding=int(padding),
            groups=int(groups),
            layout=layout,  # type: ignore[arg-type]
        )

    @property
    def oh(self) -> int:
        return conv_output_size(self.h, self.kh, self.stride, self.dilation, self.padding)

    @property
    def ow(self) -> int:
        return conv_output_size(self.w, self.kw, self.stride, self.dilation, self.padding)

    @property
    def cin_per_group(self) -> int:
        return self.cin // self.groups

    @property
    def is_depthwise(self) -> bool:
        """Every group holds one input channel (groups == C, groups > 1)."""
        return self.groups > 1 and self.groups == self.cin

    @property
    def is_pointwise(self) -> bool:
        """A 1×1, stride-1, unpadded, dense conv: a plain GEMM over the pixels."""
        return (self.kh, self.kw, self.stride, self.padding, self.groups) == (1, 1, 1, 0, 1)

    @property
    def x_shape(self) -> tuple[int, int, int, int]:
        if self.layout == "nchw":
            return (self.n, self.cin, self.h, self.w)
        return (self.n, self.h, self.w, self.cin)

    @property
    def y_shape(self) -> tuple[int, int, int, int]:
        if self.layout == "nchw":
            return (self.n, self.cout, self.oh, self.ow)
        return (self.n, self.oh, self.ow, self.cout)

    @property
    def w_shape(self) -> tuple[int, int, int, int]:
        return (self.cout, self.cin_per_group, self.kh, self.kw)

    @property
    def output_pixels(self) -> int:
        return self.n * self.oh * self.ow

    @property
    def gemm_k(self) -> int:
        """The GEMM's reduction length: ``Cin/groups · kh · kw``."""
        return self.cin_per_group * self.kh * self.kw

    @property
    def flops(self) -> int:
        """Floating-point operations (a multiply-add counts 2), bias not counted."""
        return 2 * self.n * self.cout * self.oh * self.ow * self.gemm_k

    def with_layout(self, layout: str) -> ConvSpec:
        d = asdict(self)
        d["layout"] = layout
        return ConvSpec(**d)

    def describe(self) -> str:
        """One line, e.g. ``1×16×32×32 → 32ch, 3×3 s1 d1 p1 g1, nchw``."""
        return (
            f"{self.n}×{self.cin}×{self.h}×{self.w} → {self.cout}ch, {self.kw}×{self.kh} "
            f"s{self.stride} d{self.dilation} p{self.padding} g{self.groups}, {self.layout}"
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(oh=self.oh, ow=self.ow, flops=self.flops)
        return d


#: The host memory a command line's layer may need (its arrays, the layout copies, the float64
#: reference's padded input and sums), as bench's ``--size`` guard counts its image.
MAX_HOST_BYTES = 8 * 2**30


def host_bytes(spec: ConvSpec) -> int:
    """About the most host memory running ``spec`` with its reference check takes at once:
    24 bytes per padded input value (float32 input and its layout copy, float64 padded copy),
    12 per weight and 32 per output value (the GPU's float32 result, the float64 sums and an
    einsum term)."""
    p = spec.padding
    padded = spec.n * spec.cin * (spec.h + 2 * p) * (spec.w + 2 * p)
    weights = spec.cout * spec.cin_per_group * spec.kh * spec.kw
    outputs = spec.n * spec.cout * spec.oh * spec.ow
    return 24 * padded + 12 * weights + 32 * outputs


def check_host_memory(spec: ConvSpec) -> None:
    """Refuse, before allocating, a layer whose arrays would need more than
    :data:`MAX_HOST_BYTES` (``--shape 1,3,100000,100000`` asked numpy for 224 GiB).

    Raises:
        UsageError: one line with the layer and the bytes it needs.
    """
    need = host_bytes(spec)
    if need > MAX_HOST_BYTES:
        raise UsageError(
            f"the layer {spec.describe()} needs about {need / 2**30:,.1f} GiB of memory for its "
            f"arrays, over the limit of {MAX_HOST_BYTES / 2**30:g} GiB; choose a smaller layer"
        )


def check_array(name: str, a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float32 array; :class:`UsageError` if it is not numeric/finite."""
    a = np.asarray(a)
    if a.dtype.kind not in "fiub":
        raise UsageError(f"{name} must hold numbers, got dtype {a.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: inf, refused below
        out = np.ascontiguousarray(a, dtype=np.float32)
    if not np.all(np.isfinite(out)):
        raise UsageError(f"{name} holds NaN or infinite values (or values too large for float32)")
    return out
