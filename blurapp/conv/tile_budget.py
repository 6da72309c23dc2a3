"""The storage budget of one conv tile: input halo, weights, partial sums and biases, in bytes.

A tile computes Th×Tw output pixels for TM output channels, streaming the input channels TC at a
time. It holds the TC-channel input tile, whose rows are ``(Th−1)·S + (K−1)·D + 1`` (stride S,
dilation D; columns alike), the TM·TC·K·K weights, TM·Th·Tw 32-bit partial sums (kept across
the input-channel blocks, the bias added once at the end) and TM 32-bit biases. Double
buffering keeps two input and two weight buffers so the next block loads while this one
computes. ``blurapp conv plan`` prints this table, and the GPU GEMMs choose their own tiles with
the same function, against the device's workgroup-memory limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from blurapp.core.errors import UsageError

__all__ = [
    "ACCUMULATOR_BYTES",
    "DEFAULT_BUDGET",
    "DTYPE_BYTES",
    "TileBudget",
    "plan_tile",
    "tile_input_extent",
]

DTYPE_BYTES: dict[str, int] = {"int8": 1, "fp16": 2, "fp32": 4}
ACCUMULATOR_BYTES = 4  # partial sums and biases are 32-bit whatever the data type
DEFAULT_BUDGET = 16384  # WebGPU's default maxComputeWorkgroupStorageSize


def tile_input_extent(outputs: int, kernel: int, stride: int, dilation: int) -> int:
    """Input rows (or columns) that ``outputs`` consecutive output rows read: (T−1)·S+(K−1)·D+1."""
    return (outputs - 1) * stride + (kernel - 1) * dilation + 1


@dataclass(frozen=True)
class TileBudget:
    """The bytes one tile needs, whether they fit, and (with the tensor's shape) block counts.

    ``input_bytes`` and ``weight_bytes`` are for one buffer; ``total_bytes`` counts them twice
    when ``double_buffer`` is set. The ``cin``/``cout`` fields are ``None`` unless the channel
    counts were given; the traffic fields are ``None`` unless the spatial size was given too.
    """

    tile: tuple[int, int]
    cin_block: int
    cout_block: int
    kernel: tuple[int, int]
    stride: int
    dilation: int
    dtype: str
    double_buffer: bool
    budget: int
    input_tile: tuple[int, int]
    input_bytes: int
    weight_bytes: int
    partial_sum_bytes: int
    bias_bytes: int
    total_bytes: int
    cin: int | None = None
    cout: int | None = None
    cin_blocks: int | None = None
    cout_blocks: int | None = None
    last_cin_block_valid: int | None = None
    last_cout_block_valid: int | None = None
    size: tuple[int, int] | None = None
    padding: int = 0
    output_size: tuple[int, int] | None = None
    spatial_tiles: int | None = None
    unique_input_bytes: int | None = None
    loaded_input_bytes: int | None = None

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.budget

    @property
    def workgroup_bytes(self) -> int:
        """What the conv shaders declare as workgroup memory for this tile: the input and
        weight tiles (twice when double-buffered). The partial sums and biases of the model
        live in the invocations' registers there (``register_bytes``); the planner keeps them
        in ``total_bytes`` so that the register tile stays in check too."""
        return (2 if self.double_buffer else 1) * (self.input_bytes + self.weight_bytes)

    @property
    def register_bytes(self) -> int:
        """The 32-bit partial sums (and biases) the tile's invocations hold in registers."""
        return self.partial_sum_bytes + self.bias_bytes

    @property
    def reload_factor(self) -> float | None:
        """Bytes the tiles load over the tensor's unique bytes (halo and per-block reloads)."""
        if not self.unique_input_bytes or self.loaded_input_bytes is None:
            return None
        return self.loaded_input_bytes / self.unique_input_bytes

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``blurapp conv plan --json`` (keys as in the issue, plus context)."""
        d: dict[str, Any] = {
            "tile": list(self.tile),
            "cin_block": self.cin_block,
            "cout_block": self.cout_block,
            "kernel": list(self.kernel),
            "stride": self.stride,
            "dilation": self.dilation,
            "dtype": self.dtype,
            "double_buffer": self.double_buffer,
            "input_tile": list(self.input_tile),
            "input_bytes": self.input_bytes,
            "weight_bytes": self.weight_bytes,
            "partial_sum_bytes": self.partial_sum_bytes,
            "bias_bytes": self.bias_bytes,
            "total_bytes": self.total_bytes,
            "workgroup_bytes": self.workgroup_bytes,
            "register_bytes": self.register_bytes,
            "budget": self.budget,
            "fits": self.fits,
        }
        if self.cin is not None:
            d.update(
                cin=self.cin,
                cout=self.cout,
                cin_blocks=self.cin_blocks,
                cout_blocks=self.cout_blocks,
                last_cin_block_valid=self.last_cin_block_valid,
                last_cout_block_valid=self.last_cout_block_valid,
            )
        if self.size is not None:
            d.update(
                size=list(self.size),
                padding=self.padding,
                output_size=list(self.output_size or ()),
                spatial_tiles=self.spatial_tiles,
                unique_input_bytes=self.unique_input_bytes,
                loaded_input_bytes=self.loaded_input_bytes,
                reload_factor=self.reload_factor,
            )
        return d

    def rows(self) -> list[tuple[str, str]]:
        """The budget table as (item, value) lines, for the CLI and the GUI."""
        db = " ×2 (double-buffered)" if self.double_buffer else ""
        th, tw = self.tile
        ir, ic = self.input_tile
        kh, kw = self.kernel
        out = [
            ("input tile", f"{ir}×{ic} × {self.cin_block} ch = {self.input_bytes} B{db}"),
            (
                "weights",
                f"{self.cout_block}×{self.cin_block}×{kh}×{kw} = {self.weight_bytes} B{db}",
            ),
            ("partial sums", f"{th}×{tw}×{self.cout_block} × 4 = {self.partial_sum_bytes} B"),
            ("biases", f"{self.cout_block} × 4 = {self.bias_bytes} B"),
            (
                "total",
                f"{self.total_bytes} B of {self.budget}: "
                + ("fits" if self.fits else f"over by {self.total_bytes - self.budget} B"),
            ),
            (
                "as the shaders allocate it",
                f"{self.workgroup_bytes} B workgroup memory (input and weight tiles{db}), "
                f"{self.register_bytes} B in registers (partial sums, biases)",
            ),
        ]
        if self.cin is not None:
            out.append(
                (
                    "input-channel blocks",
                    f"{self.cin_blocks} (last has {self.last_cin_block_valid} valid of "
                    f"{self.cin_block})",
                )
            )
            out.append(
                (
                    "output-channel blocks",
                    f"{self.cout_blocks} (last has {self.last_cout_block_valid} valid of "
                    f"{self.cout_block})",
                )
            )
        if self.size is not None:
            out.append(
                (
                    "input traffic",
                    f"{self.loaded_input_bytes} B loaded by {self.spatial_tiles} tiles × "
                    f"{self.cout_blocks} output blocks vs {self.unique_input_bytes} B unique "
                    f"(×{self.reload_factor:.2f})",
                )
            )
        return out


def _positive(name: str, value: int) -> int:
    if int(value) != value or value < 1:
        raise UsageError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _clipped_extent_sum(
    outputs: int, tile: int, extent: int, stride: int, pad: int, size: int
) -> int:
    """Sum over the tiles along one axis of the input rows they load inside the tensor."""
    total = 0
    for first in range(0, outputs, tile):
        valid = min(tile, outputs - first)  # an edge tile is masked: it loads only what it needs
        rows = extent - (tile - valid) * stride
        lo = first * stride - pad
        total += max(0, min(lo + rows, size) - max(lo, 0))
    return total


def plan_tile(
    tile: tuple[int, int],
    cin_block: int,
    cout_block: int,
    kernel: int | tuple[int, int],
    *,
    stride: int = 1,
    dilation: int = 1,
    dtype: str = "fp32",
    budget: int | None = None,
    double_buffer: bool = False,
    cin: int | None = None,
    cout: int | None = None,
    size: tuple[int, int] | None = None,
    padding: int = 0,
) -> TileBudget:
    """The storage a conv tile needs and whether it fits ``budget`` bytes.

    Arguments:
        tile: output tile ``(Th, Tw)``.
        cin_block, cout_block: TC input and TM output channels per tile.
        kernel: K (square) or ``(kh, kw)``.
        stride, dilation: as in the layer.
        dtype: ``"int8"``, ``"fp16"`` or ``"fp32"`` for inputs and weights.
        budget: bytes available (default :data:`DEFAULT_BUDGET`, WebGPU's 16 KiB).
        double_buffer: count the input and weight buffers twice.
        cin, cout: the layer's channels, for block counts and masking (both or neither).
        size: the input's ``(H, W)``, for the unique-versus-loaded input traffic (needs cin, cout).
        padding: zero padding, for the output size of the traffic figures.

    Returns:
        A :class:`TileBudget`.

    Example:
        >>> b = plan_tile((2, 2), 2, 2, 3, dtype="int8")
        >>> b.input_tile, b.input_bytes, b.weight_bytes, b.total_bytes
        ((4, 4), 32, 36, 108)
    """
    th, tw = (_positive("tile rows", tile[0]), _positive("tile columns", tile[1]))
    tc = _positive("cin block", cin_block)
    tm = _positive("cout block", cout_block)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    kh, kw = _positive("kernel rows", kh), _positive("kernel columns", kw)
    stride = _positive("stride", stride)
    dilation = _positive("dilation", dilation)
    if dtype not in DTYPE_BYTES:
        raise UsageError(f"dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    budget = DEFAULT_BUDGET if budget is None else budget
    if int(budget) != budget or budget < 0:
        raise UsageError(f"budget must be a number of bytes (0 or more), got {budget!r}")
    if (cin is None) != (cout is None):
        raise UsageError("give both --cin and --cout (or neither)")
    if size is not None and cin is None:
        raise UsageError("the input traffic needs the channel counts: give --cin and --cout")
    if padding < 0:
        raise UsageError(f"padding must be 0 or more, got {padding}")

    elem = DTYPE_BYTES[dtype]
    ir = tile_input_extent(th, kh, stride, dilation)
    ic = tile_input_extent(tw, kw, stride, dilation)
    input_bytes = ir * ic * tc * elem
    weight_bytes = tm * tc * kh * kw * elem
    psum_bytes = th * tw * tm * ACCUMULATOR_BYTES
    bias_bytes = tm * ACCUMULATOR_BYTES
    copies = 2 if double_buffer else 1
    total = copies * (input_bytes + weight_bytes) + psum_bytes + bias_bytes

    extra: dict[str, Any] = {}
    if cin is not None and cout is not None:
        cin, cout = _positive("cin", cin), _positive("cout", cout)
        extra.update(
            cin=cin,
            cout=cout,
            cin_blocks=math.ceil(cin / tc),
            cout_blocks=math.ceil(cout / tm),
            last_cin_block_valid=cin - (math.ceil(cin / tc) - 1) * tc,
            last_cout_block_valid=cout - (math.ceil(cout / tm) - 1) * tm,
        )
        if size is not None:
            h, w = _positive("height", size[0]), _positive("width", size[1])
            span_h, span_w = dilation * (kh - 1) + 1, dilation * (kw - 1) + 1
            oh = (h + 2 * padding - span_h) // stride + 1 if h + 2 * padding >= span_h else 0
            ow = (w + 2 * padding - span_w) // stride + 1 if w + 2 * padding >= span_w else 0
            if oh < 1 or ow < 1:
                raise UsageError(f"a {kw}×{kh} kernel does not fit a {w}×{h} input")
            rows = _clipped_extent_sum(oh, th, ir, stride, padding, h)
            cols = _clipped_extent_sum(ow, tw, ic, stride, padding, w)
            extra.update(
                size=(h, w),
                padding=int(padding),
                output_size=(oh, ow),
                spatial_tiles=math.ceil(oh / th) * math.ceil(ow / tw),
                unique_input_bytes=cin * h * w * elem,
                # every output-channel block streams all input channels of its halo tile again
                loaded_input_bytes=rows * cols * cin * extra["cout_blocks"] * elem,
            )
    return TileBudget(
        tile=(th, tw),
        cin_block=tc,
        cout_block=tm,
        kernel=(kh, kw),
        stride=stride,
        dilation=dilation,
        dtype=dtype,
        double_buffer=double_buffer,
        budget=int(budget),
        input_tile=(ir, ic),
        input_bytes=input_bytes,
        weight_bytes=weight_bytes,
        partial_sum_bytes=psum_bytes,
        bias_bytes=bias_bytes,
        total_bytes=total,
        **extra,
    )
