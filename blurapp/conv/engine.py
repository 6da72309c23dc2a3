"""Run a Conv2D layer on the GPU as direct, im2col + tiled GEMM or implicit GEMM, and time it.

The registry :data:`CONV_STRATEGIES` holds one class per strategy; each checks whether it can
run a layer (:meth:`ConvStrategy.why_not`), picks its tiles with the same storage accounting as
``blurapp conv plan`` (:func:`blurapp.conv.tile_budget.plan_tile`) and encodes its passes.
:class:`ConvRunner` owns the pipelines and runs one layer; :func:`conv2d` is the entry point the
command line and the GUI use. The device is created on first use, never at import time.
"""

from __future__ import annotations

import math
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from blurapp.conv.quant import (
    QuantParams,
    choose_qparams,
    folded_constant,
    pack_input,
    pack_weights,
    quantize,
    quantize_bias,
)
from blurapp.conv.spec import ConvSpec, check_array
from blurapp.conv.tile_budget import TileBudget, plan_tile
from blurapp.conv.winograd import WINOGRAD_TILES, transform_code, winograd_matrices
from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.timing import PassTiming, Timing
from blurapp.gpu.lru import LruCache
from blurapp.gpu.timing import PassTimer

if TYPE_CHECKING:
    from blurapp.core.planner import DeviceLimits
    from blurapp.gpu.device import GpuContext

__all__ = [
    "CONV_STRATEGIES",
    "DEFAULT_OPTIONS",
    "DTYPES",
    "GPU_STRATEGIES",
    "STRATEGIES",
    "ConvMemory",
    "ConvOptions",
    "ConvResult",
    "ConvRunner",
    "GemmTiles",
    "choose_strategy",
    "conv2d",
    "get_runner",
    "why_not",
]

STRATEGIES: tuple[str, ...] = ("auto", "direct", "im2col", "implicit-gemm", "winograd")
GPU_STRATEGIES: tuple[str, ...] = STRATEGIES[1:]
DTYPES: tuple[str, ...] = ("float32", "fp16", "int8")
_PLAN_DTYPE = {"float32": "fp32", "fp16": "fp16", "int8": "int8"}  # tile_budget's names
_SHADER_DTYPE = {"float32": "f32", "fp16": "f16", "int8": "int8"}
_ELEMENT_BYTES = {"float32": 4, "fp16": 2, "int8": 1}
F32 = 4
_FLAT_WG = 64  # invocations per workgroup of the one-invocation-per-element passes
_MAX_GROUPS = 65535  # WebGPU's maxComputeWorkgroupsPerDimension default


@dataclass(frozen=True)
class GemmTiles:
    """The tiles a GEMM strategy runs with, and their storage budget.

    Attributes:
        kind: ``"implicit-gemm"`` or ``"im2col"``.
        tile: output pixels per workgroup, ``(Th, Tw)``; im2col's GEMM tiles the flat pixel
            axis, ``(1, BN)``.
        cin_block: input channels per step (implicit GEMM's TC) or GEMM columns of K per step
            (im2col's BK).
        cout_block: output channels per workgroup (TM, the GEMM's BM).
        register_tile: ``(RM, RN)`` outputs each invocation accumulates in registers.
        threads: invocations per workgroup.
        budget: :func:`plan_tile`'s accounting of the tile against the device's workgroup memory
            (im2col's GEMM counts as a 1×1 convolution over the column matrix).
    """

    kind: str
    tile: tuple[int, int]
    cin_block: int
    cout_block: int
    register_tile: tuple[int, int]
    threads: int
    budget: TileBudget

    def describe(self) -> str:
        th, tw = self.tile
        rm, rn = self.register_tile
        if self.kind == "im2col":
            head = f"GEMM tile BM={self.cout_block} BN={tw} BK={self.cin_block}"
        else:
            head = f"tile {th}×{tw} px, TM={self.cout_block} TC={self.cin_block}"
        return (
            f"{head}, registers {rm}×{rn}, {self.threads} invocations, "
            f"{self.budget.total_bytes} of {self.budget.budget} B"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tile": list(self.tile),
            "cin_block": self.cin_block,
            "cout_block": self.cout_block,
            "register_tile": list(self.register_tile),
            "threads": self.threads,
            "budget": self.budget.to_dict(),
        }


@dataclass(frozen=True)
class ConvOptions:
    """How a strategy runs a layer, beyond the layer itself.

    Attributes:
        winograd_tile: m of Winograd's F(m×m, 3×3): 2 or 4.
        dtype: ``"float32"``, ``"fp16"`` (f16 storage, f32 sums; needs shader-f16) or
            ``"int8"`` (per-tensor scale and zero point, i32 sums).
        accumulators: int8 only: also read back the raw int32 accumulators.
        x_quant, w_quant: int8 only: the input's and the weights' quantisation (default: the
            input's min/max range, affine; the weights symmetric, zero point 0).
        tiles: implicit GEMM only: force ``(Th, Tw, TM, TC)`` instead of the planner's choice
            (it must still fit the device; Tw a multiple of 4).
        double_buffer: implicit GEMM in float32 or fp16: two copies of the workgroup tiles,
            the next input-channel block loaded into one while the other is multiplied.
        probe: implicit GEMM: ``"full"``, or ``"load-only"`` / ``"compute-only"`` to time one
            half of its loop (the overlap measurement; the output is then meaningless).
    """

    winograd_tile: int = 2
    dtype: str = "float32"
    accumulators: bool = False
    x_quant: QuantParams | None = None
    w_quant: QuantParams | None = None
    tiles: tuple[int, int, int, int] | None = None
    double_buffer: bool = False
    probe: str = "full"

    def __post_init__(self) -> None:
        if self.probe not in ("full", "load-only", "compute-only"):
            raise UsageError(f"probe {self.probe!r} is not full, load-only or compute-only")
        if self.dtype not in DTYPES:
            raise UsageError(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if self.winograd_tile not in WINOGRAD_TILES:
            raise UsageError(
                f"winograd tile must be one of {', '.join(map(str, WINOGRAD_TILES))}, "
                f"got {self.winograd_tile!r}"
            )


DEFAULT_OPTIONS = ConvOptions()


@dataclass(frozen=True)
class ConvMemory:
    """GPU buffer bytes a run allocated; ``column_bytes`` is im2col's matrix (0 otherwise),
    ``workspace_bytes`` Winograd's transformed weights, inputs and products (0 otherwise)."""

    input_bytes: int
    weight_bytes: int
    bias_bytes: int
    output_bytes: int
    column_bytes: int = 0
    workspace_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return (
            self.input_bytes
            + self.weight_bytes
            + self.bias_bytes
            + self.output_bytes
            + self.column_bytes
            + self.workspace_bytes
        )

    @property
    def blowup(self) -> float:
        """Column matrix over input bytes: about k² / stride² (0 without a column matrix)."""
        return self.column_bytes / self.input_bytes if self.input_bytes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_bytes": self.input_bytes,
            "weight_bytes": self.weight_bytes,
            "bias_bytes": self.bias_bytes,
            "output_bytes": self.output_bytes,
            "column_bytes": self.column_bytes,
            "workspace_bytes": self.workspace_bytes,
            "total_bytes": self.total_bytes,
            "column_blowup": self.blowup,
        }


@dataclass(frozen=True, eq=False)
class ConvResult:
    """One layer run: the float32 output (in the input's layout) and how it was computed."""

    y: np.ndarray
    spec: ConvSpec
    strategy: str
    reason: str
    timing: Timing
    memory: ConvMemory
    tiles: GemmTiles | None = None
    dtype: str = "float32"
    accumulators: np.ndarray | None = None
    quant: dict[str, QuantParams] | None = None

    @property
    def gpu_ms(self) -> float:
        return self.timing.total_ms

    @property
    def gflops(self) -> float:
        """GFLOP/s over the timed passes (a multiply-add is 2 FLOP)."""
        ms = self.timing.total_ms
        return self.spec.flops / (ms * 1e6) if ms > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "reason": self.reason,
            "spec": self.spec.to_dict(),
            "timing": self.timing.to_dict(),
            "gpu_ms": self.gpu_ms,
            "gflops": self.gflops,
            "memory": self.memory.to_dict(),
            "tiles": None if self.tiles is None else self.tiles.to_dict(),
            "dtype": self.dtype,
            "quant": None
            if self.quant is None
            else {k: v.to_dict() for k, v in self.quant.items()},
        }


@dataclass
class _Buffers:
    x: Any
    w: Any
    bias: Any
    y: Any
    col: Any = None
    work: dict[str, Any] = field(default_factory=dict)
    tensors: _Tensors | None = None


@dataclass
class _Pass:
    name: str
    pipeline: Any
    bindings: list[Any]
    uniform: np.ndarray
    workgroups: tuple[int, int, int]
    bytes_modelled: int


def _next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def _flat_dispatch(total: int) -> tuple[tuple[int, int, int], int]:
    """Workgroups for ``total`` invocations of a flat pass, folded into 2-D, and the row pitch."""
    groups = max(1, math.ceil(total / _FLAT_WG))
    gx = min(groups, _MAX_GROUPS)
    gy = math.ceil(groups / gx)
    if gy > _MAX_GROUPS:
        raise UsageError(f"the layer has {total} outputs, more than one dispatch can cover")
    return (gx, gy, 1), gx * _FLAT_WG


def _words(*values: float | int) -> np.ndarray:
    """A uniform block: ints as u32 (negative ones as i32 bits), floats as f32 bits."""
    out = np.zeros(len(values), np.uint32)
    for i, v in enumerate(values):
        if isinstance(v, float):
            out[i] = np.float32(v).view(np.uint32)
        else:
            out[i] = np.int64(v) & 0xFFFFFFFF
    return out


@dataclass
class _Tensors:
    """What a run uploads, in the dtype its shaders read, and the int8 uniform fields."""

    x: np.ndarray
    w: np.ndarray
    bias: np.ndarray
    zx_word: int = 0
    zw: int = 0
    scale: float = 1.0
    quant: dict[str, QuantParams] | None = None
    channels: int = 0  # input channels as the shader counts them (int8: packed words)


def _f16_buffer(a: np.ndarray) -> np.ndarray:
    """``a`` as float16, padded to a whole number of 4-byte words (a binding's granularity)."""
    flat = np.ascontiguousarray(a, np.float16).ravel()
    return np.concatenate([flat, np.zeros(flat.size % 2, np.float16)])


def _prepare(
    spec: ConvSpec, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, opts: ConvOptions
) -> _Tensors:
    """The input, weights and bias as the shaders of ``opts.dtype`` read them."""
    bias = np.zeros(spec.cout, np.float32) if b is None else np.asarray(b, np.float32)
    if opts.dtype == "float32":
        return _Tensors(x, np.ascontiguousarray(w, np.float32), bias, channels=spec.cin)
    if opts.dtype == "fp16":
        return _Tensors(_f16_buffer(x), _f16_buffer(w), bias, channels=spec.cin)
    # int8: per-tensor quantisation on the CPU (min/max needs the whole tensor), packed
    qx = opts.x_quant or choose_qparams(x)
    qw = opts.w_quant or choose_qparams(w, symmetric=True)
    xq, wq = quantize(x, qx), quantize(w, qw)
    bq = quantize_bias(b, spec.cout, qx, qw)
    xp = pack_input(xq, spec, qx.zero_point)
    return _Tensors(
        x=xp,
        w=pack_weights(wq, qw.zero_point),
        bias=folded_constant(wq, bq, qx.zero_point, qw.zero_point),
        zx_word=int(np.full(4, qx.zero_point, np.int8).view(np.uint32)[0]),
        zw=qw.zero_point,
        scale=qx.scale * qw.scale,
        quant={"input": qx, "weights": qw},
        channels=xp.shape[1] if spec.layout == "nchw" else xp.shape[3],
    )


class ConvStrategy(ABC):
    """One way to run a layer: a name, what it cannot run, its tiles and its passes."""

    name: ClassVar[str]
    summary: ClassVar[str]
    dtypes: ClassVar[tuple[str, ...]] = ("float32",)

    def why_not(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> str | None:
        """Why this strategy cannot run ``spec`` on a device with ``limits``, or ``None``."""
        return None

    def tiles(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> GemmTiles | None:
        """The GEMM tiles it would use (``None`` for strategies without tiles)."""
        return None

    def workspace(self, spec: ConvSpec, opts: ConvOptions = DEFAULT_OPTIONS) -> dict[str, int]:
        """Scratch buffers the passes need besides the input, weights, bias and output: bytes."""
        return {}

    def weights_for(self, spec: ConvSpec, w: np.ndarray) -> np.ndarray:
        """The weights as the shader reads them (default: the (Cout, Cin/g, kh, kw) array)."""
        return w

    def column_bytes(self, spec: ConvSpec) -> int:
        return 0

    @abstractmethod
    def passes(
        self,
        runner: ConvRunner,
        spec: ConvSpec,
        bufs: _Buffers,
        tiles: GemmTiles | None,
        opts: ConvOptions = DEFAULT_OPTIONS,
    ) -> list[_Pass]:
        """The compute passes, in order."""


class DirectConv(ConvStrategy):
    """One invocation per output element, looping over Cin/groups·kh·kw taps in global memory."""

    name = "direct"
    summary = "one invocation per output, every tap read from global memory"
    dtypes = DTYPES

    def workspace(self, spec: ConvSpec, opts: ConvOptions = DEFAULT_OPTIONS) -> dict[str, int]:
        return _acc_workspace(spec, opts)

    def passes(
        self,
        runner: ConvRunner,
        spec: ConvSpec,
        bufs: _Buffers,
        tiles: GemmTiles | None,
        opts: ConvOptions = DEFAULT_OPTIONS,
    ) -> list[_Pass]:
        t = bufs.tensors
        assert t is not None
        total = spec.n * spec.cout * spec.oh * spec.ow
        groups, pitch = _flat_dispatch(total)
        uniform = _words(
            spec.n, t.channels, spec.h, spec.w,
            spec.cout, spec.oh, spec.ow, spec.groups,
            spec.kh, spec.kw, spec.stride, spec.dilation,
            spec.padding, total, pitch, t.zx_word,
            t.zw, float(t.scale), 0, 0,
        )  # fmt: skip
        dtype = _SHADER_DTYPE[opts.dtype]
        template: dict[str, Any] = {"layout": spec.layout, "wg": _FLAT_WG, "dtype": dtype}
        bindings = [bufs.x, bufs.w, bufs.bias, bufs.y]
        if dtype == "int8":
            template["emit_acc"] = opts.accumulators
            if opts.accumulators:
                bindings.append(bufs.work["acc"])
        pipeline = runner.pipeline("conv_direct", **template)
        # every tap reads one input and one weight value from global memory
        elem = _ELEMENT_BYTES[opts.dtype]
        traffic = total * (2 * spec.gemm_k * elem + F32)
        return [_Pass("direct", pipeline, bindings, uniform, groups, traffic)]


def _acc_workspace(spec: ConvSpec, opts: ConvOptions) -> dict[str, int]:
    """int8 with ``accumulators``: an int32 buffer for them, the output's size."""
    if opts.dtype == "int8" and opts.accumulators:
        return {"acc": spec.n * spec.cout * spec.oh * spec.ow * 4}
    return {}


def _dense_only(name: str, spec: ConvSpec) -> str | None:
    if spec.groups == 1:
        return None
    kind = "depthwise" if spec.is_depthwise else f"grouped (groups={spec.groups})"
    return (
        f"{name} runs dense layers only (groups=1); this layer is {kind}: "
        "use --strategy direct (auto picks it)"
    )


def _choose_tiles(
    kind: str,
    spec: ConvSpec,
    limits: DeviceLimits,
    pixel_tiles: tuple[tuple[int, int], ...],
    cin_blocks: tuple[int, ...],
    kernel: tuple[int, int],
    stride: int,
    dilation: int,
    cin: int,
    dtype: str = "float32",
    double_buffer: bool = False,
) -> GemmTiles:
    """The largest tiles whose :func:`plan_tile` total fits the device's workgroup memory."""
    tm_max = 64 if kind == "im2col" else 32
    tm_first = min(tm_max, max(4, _next_pow2(spec.cout)))
    tms = [t for t in (64, 32, 16, 8, 4) if t <= tm_first]
    tc_cap = max(1, _next_pow2(cin))
    if dtype == "int8":  # whole packed words of 4 channels
        tc_cap = max(4, tc_cap)
        cin_blocks = tuple(b for b in cin_blocks if b % 4 == 0)
    last: TileBudget | None = None
    for th, tw in pixel_tiles:
        for tm in tms:
            # 8 channels × 4 pixels per invocation: one B value feeds 8 FMAs (15 % faster on
            # lavapipe than 4×4); the shaders hold it as rm vec4 rows
            rm, rn = (8 if tm >= 8 else 4), 4
            threads = (tm // rm) * (th * tw // rn)
            if threads > limits.max_invocations:
                continue
            for tc in (b for b in cin_blocks if b <= tc_cap):
                budget = plan_tile(
                    (th, tw),
                    tc,
                    tm,
                    kernel,
                    stride=stride,
                    dilation=dilation,
                    dtype=_PLAN_DTYPE[dtype],
                    budget=limits.workgroup_storage,
                    double_buffer=double_buffer,
                    cin=cin,
                    cout=spec.cout,
                )
                last = budget
                if budget.fits:
                    return GemmTiles(kind, (th, tw), tc, tm, (rm, rn), threads, budget)
    need = "" if last is None else f" (the smallest tile needs {last.total_bytes} bytes)"
    raise StrategyError(
        f"{kind}: no tile fits this device's {limits.workgroup_storage} bytes of workgroup "
        f"memory for a {spec.kw}×{spec.kh} kernel{need}: use --strategy direct"
    )


class Im2colConv(ConvStrategy):
    """im2col into a GPU buffer, then a GEMM tiled in workgroup memory and in registers."""

    name = "im2col"
    summary = "column matrix in a GPU buffer, then a workgroup- and register-tiled GEMM"

    def why_not(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> str | None:
        dense = _dense_only(self.name, spec)
        if dense:
            return dense
        if self.column_bytes(spec) > limits.max_storage_binding:
            mib = self.column_bytes(spec) / 2**20
            return (
                f"im2col's column matrix needs {mib:.0f} MiB ({spec.kh * spec.kw}× taps per "
                f"pixel), more than the {limits.max_storage_binding // 2**20} MiB this device "
                "binds: use --strategy implicit-gemm"
            )
        return None

    @staticmethod
    def no_copy(spec: ConvSpec) -> bool:
        """The input already is the GEMM's B matrix: 1×1 on NHWC (P×C), or on NCHW with N=1."""
        return spec.is_pointwise and (spec.layout == "nhwc" or spec.n == 1)

    def column_bytes(self, spec: ConvSpec) -> int:
        return 0 if self.no_copy(spec) else spec.gemm_k * spec.output_pixels * F32

    def tiles(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> GemmTiles:
        # The GEMM is a 1×1 convolution over the column matrix: K "channels", BN pixels.
        return _choose_tiles(
            "im2col", spec, limits, ((1, 64), (1, 32), (1, 16)), (32, 16, 8, 4), (1, 1), 1, 1,
            spec.gemm_k,
        )  # fmt: skip

    def weights_for(self, spec: ConvSpec, w: np.ndarray) -> np.ndarray:
        # NHWC's column rows run (ky, kx, c), so the weights' K axis must too.
        return np.ascontiguousarray(w.transpose(0, 2, 3, 1)) if spec.layout == "nhwc" else w

    def passes(
        self,
        runner: ConvRunner,
        spec: ConvSpec,
        bufs: _Buffers,
        tiles: GemmTiles | None,
        opts: ConvOptions = DEFAULT_OPTIONS,
    ) -> list[_Pass]:
        assert tiles is not None
        out: list[_Pass] = []
        k, pixels = spec.gemm_k, spec.output_pixels
        b_layout = "kp" if spec.layout == "nchw" else "pk"
        if self.no_copy(spec):
            bmat = bufs.x
        else:
            total = k * pixels
            groups, pitch = _flat_dispatch(total)
            uniform = np.array(
                [
                    spec.n, spec.cin, spec.h, spec.w,
                    spec.oh, spec.ow, spec.kh, spec.kw,
                    spec.stride, spec.dilation, spec.padding, total,
                    pitch, k, pixels, 0,
                ],
                dtype=np.uint32,
            )  # fmt: skip
            pipeline = runner.pipeline("conv_im2col", layout=spec.layout, wg=_FLAT_WG)
            out.append(
                _Pass("im2col", pipeline, [bufs.x, bufs.col], uniform, groups, 2 * total * F32)
            )
            bmat = bufs.col
        bm, bk = tiles.cout_block, tiles.cin_block
        bn = tiles.tile[1]
        rm, rn = tiles.register_tile
        gx, gy = math.ceil(pixels / bn), math.ceil(spec.cout / bm)
        if gx > _MAX_GROUPS:
            raise StrategyError(
                f"im2col: {pixels} output pixels need {gx} workgroups, more than {_MAX_GROUPS}"
            )
        pipeline = runner.pipeline(
            "conv_gemm", bm=bm, bn=bn, bk=bk, rm=rm, rn=rn, b_layout=b_layout,
            out_layout=spec.layout,
        )  # fmt: skip
        uniform = np.array([spec.cout, pixels, k, spec.oh * spec.ow, 0, 0, 0, 0], dtype=np.uint32)
        traffic = (gx * gy * (bm + bn) * k + spec.cout * pixels) * F32
        out.append(
            _Pass(
                "gemm", pipeline, [bmat, bufs.w, bufs.bias, bufs.y], uniform, (gx, gy, 1), traffic
            )
        )
        return out


class ImplicitGemmConv(ConvStrategy):
    """The GEMM reading straight from the activations through a halo tile: no column matrix."""

    name = "implicit-gemm"
    summary = "GEMM over halo tiles read straight from the activations, no column matrix"
    dtypes = DTYPES

    def why_not(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> str | None:
        if opts.double_buffer and opts.dtype == "int8":
            return "implicit-gemm double-buffers float32 and fp16 tiles, not int8"
        return _dense_only(self.name, spec)

    def tiles(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> GemmTiles:
        if opts.tiles is not None:
            return self.forced_tiles(spec, limits, opts)
        small = spec.oh * spec.ow < 64 or spec.ow < 8
        pixel_tiles = ((4, 4),) if small else ((8, 8), (4, 8), (4, 4))
        return _choose_tiles(
            "implicit-gemm", spec, limits, pixel_tiles, (16, 8, 4, 2, 1), (spec.kh, spec.kw),
            spec.stride, spec.dilation, spec.cin, opts.dtype, opts.double_buffer,
        )  # fmt: skip

    def forced_tiles(self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions) -> GemmTiles:
        """``opts.tiles`` checked: the shader's shape rules and the device's memory."""
        assert opts.tiles is not None
        th, tw, tm, tc = opts.tiles
        int8 = opts.dtype == "int8"
        rm = next(r for r in (8, 4, 2, 1) if tm % r == 0) if int8 else (8 if tm >= 8 else 4)
        problems = []
        if tw % 4:
            problems.append(f"Tw={tw} is not a multiple of 4 (each invocation takes 4 pixels)")
        if int8 and tc % 4:
            problems.append(f"TC={tc} is not a multiple of 4 (int8 packs 4 channels a word)")
        if not int8 and tm % 4:
            problems.append(f"TM={tm} is not a multiple of 4 (weights are vec4 rows)")
        budget = plan_tile(
            (th, tw), tc, tm, (spec.kh, spec.kw), stride=spec.stride, dilation=spec.dilation,
            dtype=_PLAN_DTYPE[opts.dtype], budget=limits.workgroup_storage, cin=spec.cin,
            cout=spec.cout, double_buffer=opts.double_buffer,
        )  # fmt: skip
        threads = (tm // rm) * (th * tw // 4)
        if not budget.fits or threads > limits.max_invocations:
            problems.append(f"it needs {budget.total_bytes} B and {threads} invocations")
        if problems:
            raise StrategyError(
                f"implicit-gemm: tile {th}×{tw} TM={tm} TC={tc}: " + "; ".join(problems)
            )
        return GemmTiles("implicit-gemm", (th, tw), tc, tm, (rm, 4), threads, budget)

    def workspace(self, spec: ConvSpec, opts: ConvOptions = DEFAULT_OPTIONS) -> dict[str, int]:
        return _acc_workspace(spec, opts)

    @staticmethod
    def shader_template(
        spec: ConvSpec, tiles: GemmTiles, opts: ConvOptions, *, w_zero: bool = False
    ) -> tuple[str, dict[str, Any]]:
        """The shader and the template it is rendered with for ``tiles`` (what runs)."""
        th, tw = tiles.tile
        ih, iw = tiles.budget.input_tile
        shape = {
            "th": th, "tw": tw, "tm": tiles.cout_block, "rm": tiles.register_tile[0],
            "kh": spec.kh, "kw": spec.kw, "stride": spec.stride, "dilation": spec.dilation,
            "ih": ih, "iw": iw, "layout": spec.layout,
        }  # fmt: skip
        if opts.dtype == "int8":
            return "conv_implicit_gemm_int8", {
                **shape, "tc4": tiles.cin_block // 4, "emit_acc": opts.accumulators,
                "w_zero": w_zero,
            }  # fmt: skip
        return "conv_implicit_gemm", {
            **shape, "tc": tiles.cin_block, "rn": tiles.register_tile[1],
            "dtype": _SHADER_DTYPE[opts.dtype], "double_buffer": opts.double_buffer,
            "probe": opts.probe,
        }  # fmt: skip

    def passes(
        self,
        runner: ConvRunner,
        spec: ConvSpec,
        bufs: _Buffers,
        tiles: GemmTiles | None,
        opts: ConvOptions = DEFAULT_OPTIONS,
    ) -> list[_Pass]:
        assert tiles is not None and bufs.tensors is not None
        t = bufs.tensors
        th, tw = tiles.tile
        tm, tc = tiles.cout_block, tiles.cin_block
        ih, iw = tiles.budget.input_tile
        tiles_x, tiles_y = math.ceil(spec.ow / tw), math.ceil(spec.oh / th)
        cout_blocks = math.ceil(spec.cout / tm)
        if tiles_x * tiles_y > _MAX_GROUPS or spec.n > _MAX_GROUPS:
            raise StrategyError(
                f"implicit-gemm: {tiles_x * tiles_y} output tiles per image exceed one dispatch"
            )
        bindings = [bufs.x, bufs.w, bufs.bias, bufs.y]
        shader, template = self.shader_template(spec, tiles, opts, w_zero=t.zw != 0)
        pipeline = runner.pipeline(shader, **template)
        if opts.dtype == "int8" and opts.accumulators:
            bindings.append(bufs.work["acc"])
        uniform = _words(
            spec.n, t.channels, spec.h, spec.w,
            spec.cout, spec.oh, spec.ow, spec.padding,
            tiles_x, t.zx_word, t.zw, float(t.scale),
        )  # fmt: skip
        workgroups = spec.n * tiles_x * tiles_y * cout_blocks
        per_group = math.ceil(spec.cin / tc) * tc * (ih * iw + tm * spec.kh * spec.kw)
        elem = _ELEMENT_BYTES[opts.dtype]
        traffic = workgroups * per_group * elem + spec.n * spec.cout * spec.oh * spec.ow * F32
        return [
            _Pass(
                "implicit-gemm",
                pipeline,
                bindings,
                uniform,
                (tiles_x * tiles_y, cout_blocks, spec.n),
                traffic,
            )
        ]


def _capable(
    spec: ConvSpec, limits: DeviceLimits, exclude: str, opts: ConvOptions = DEFAULT_OPTIONS
) -> str:
    """``use --strategy A, B or C``: the other strategies that can run ``spec``, the registry's
    later (more specialised, usually faster) ones first."""
    names = [
        n
        for n in reversed(GPU_STRATEGIES)
        if n != exclude
        and opts.dtype in CONV_STRATEGIES[n].dtypes
        and CONV_STRATEGIES[n].why_not(spec, limits, opts) is None
    ]
    if not names:
        return "no strategy can"
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"
    return f"use --strategy {text}"


def _dtype_problem(
    name: str, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions
) -> str | None:
    """Why ``name`` cannot run ``opts.dtype`` (one line, naming who can), or ``None``."""
    if opts.double_buffer and name != "implicit-gemm":
        return f"{name} has no double-buffered variant: use --strategy implicit-gemm"
    dtypes = CONV_STRATEGIES[name].dtypes
    if opts.dtype in dtypes:
        return None
    return f"{name} runs --dtype {' or '.join(dtypes)} only; for --dtype {opts.dtype} " + _capable(
        spec, limits, name, opts
    )


class WinogradConv(ConvStrategy):
    """F(m×m, 3×3): filter, input and output transforms on the GPU around α² batched GEMMs."""

    name = "winograd"
    summary = "Winograd F(2×2,3×3): transformed tiles, 16 batched GEMMs, 2.25× fewer multiplies"

    def why_not(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> str | None:
        if (spec.kh, spec.kw, spec.stride, spec.dilation) == (3, 3, 1, 1):
            return None
        return (
            f"winograd runs 3×3 kernels with stride 1 and dilation 1 only; this layer is "
            f"{spec.kw}×{spec.kh} stride {spec.stride} dilation {spec.dilation}: "
            + _capable(spec, limits, self.name)
        )

    @staticmethod
    def geometry(spec: ConvSpec, m: int) -> tuple[int, int, int, int]:
        """``(α, tiles_x, tiles_y, P)``: the transformed tile side and the tiles of the output."""
        tiles_x, tiles_y = math.ceil(spec.ow / m), math.ceil(spec.oh / m)
        return m + 2, tiles_x, tiles_y, spec.n * tiles_x * tiles_y

    def tiles(
        self, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
    ) -> GemmTiles:
        # Each GEMM is one group's Mg×Cg transformed weights times its Cg×P transformed tiles.
        per_group = replace(spec, cin=spec.cin_per_group, cout=spec.cout // spec.groups, groups=1)
        return _choose_tiles(
            "winograd", per_group, limits, ((1, 64), (1, 32), (1, 16)), (32, 16, 8, 4, 2, 1),
            (1, 1), 1, 1, spec.cin_per_group,
        )  # fmt: skip

    def workspace(self, spec: ConvSpec, opts: ConvOptions = DEFAULT_OPTIONS) -> dict[str, int]:
        alpha, _, _, pixels = self.geometry(spec, opts.winograd_tile)
        a2 = alpha * alpha
        return {
            "u": a2 * spec.cout * spec.cin_per_group * F32,
            "v": a2 * spec.cin * pixels * F32,
            "m": a2 * spec.cout * pixels * F32,
        }

    def passes(
        self,
        runner: ConvRunner,
        spec: ConvSpec,
        bufs: _Buffers,
        tiles: GemmTiles | None,
        opts: ConvOptions = DEFAULT_OPTIONS,
    ) -> list[_Pass]:
        assert tiles is not None
        m = opts.winograd_tile
        alpha, tiles_x, tiles_y, pixels = self.geometry(spec, m)
        a2 = alpha * alpha
        bt, g, at = winograd_matrices(m)
        cg, mg = spec.cin_per_group, spec.cout // spec.groups
        u, v, mm = bufs.work["u"], bufs.work["v"], bufs.work["m"]
        out: list[_Pass] = []

        total = spec.cout * cg
        groups, pitch = _flat_dispatch(total)
        pipe = runner.pipeline(
            "conv_winograd_filter", alpha=alpha, wg=_FLAT_WG,
            code=tuple(transform_code(g, "g", "u", "s")),
        )  # fmt: skip
        uniform = np.array([spec.cout, cg, total, pitch], dtype=np.uint32)
        out.append(
            _Pass("filter-transform", pipe, [bufs.w, u], uniform, groups, total * (9 + a2) * F32)
        )

        total = spec.cin * pixels
        groups, pitch = _flat_dispatch(total)
        pipe = runner.pipeline(
            "conv_winograd_input", alpha=alpha, m=m, layout=spec.layout, wg=_FLAT_WG,
            code=tuple(transform_code(bt, "d", "v", "e")),
        )  # fmt: skip
        uniform = np.array(
            [
                spec.n, spec.cin, spec.h, spec.w,
                tiles_x, tiles_y, spec.padding, total,
                pitch, tiles_x * tiles_y * spec.n, 0, 0,
            ],
            dtype=np.uint32,
        )  # fmt: skip
        out.append(
            _Pass("input-transform", pipe, [bufs.x, v], uniform, groups, 2 * total * a2 * F32)
        )

        bm, bk, bn = tiles.cout_block, tiles.cin_block, tiles.tile[1]
        rm, rn = tiles.register_tile
        gx, gy, gz = math.ceil(pixels / bn), math.ceil(mg / bm), a2 * spec.groups
        if gx > _MAX_GROUPS or gz > _MAX_GROUPS:
            raise StrategyError(f"winograd: {pixels} tiles need more workgroups than one dispatch")
        pipe = runner.pipeline(
            "conv_gemm", bm=bm, bn=bn, bk=bk, rm=rm, rn=rn, b_layout="kp", out_layout="raw",
        )  # fmt: skip
        uniform = np.array(
            [mg, pixels, cg, 0, mg * cg, cg * pixels, mg * pixels, 0], dtype=np.uint32
        )
        traffic = gz * (gx * gy * (bm + bn) * cg + mg * pixels) * F32
        out.append(_Pass("gemm", pipe, [v, u, None, mm], uniform, (gx, gy, gz), traffic))

        total = spec.cout * pixels
        groups, pitch = _flat_dispatch(total)
        pipe = runner.pipeline(
            "conv_winograd_output", alpha=alpha, m=m, layout=spec.layout, wg=_FLAT_WG,
            code=tuple(transform_code(at, "m", "y", "t")),
        )  # fmt: skip
        uniform = np.array(
            [spec.cout, spec.oh, spec.ow, tiles_x, tiles_y, tiles_x * tiles_y * spec.n, total,
             pitch],
            dtype=np.uint32,
        )  # fmt: skip
        traffic = (total * a2 + spec.n * spec.cout * spec.oh * spec.ow) * F32
        out.append(
            _Pass("output-transform", pipe, [mm, bufs.bias, bufs.y], uniform, groups, traffic)
        )
        return out


CONV_STRATEGIES: dict[str, ConvStrategy] = {
    s.name: s for s in (DirectConv(), Im2colConv(), ImplicitGemmConv(), WinogradConv())
}


def why_not(
    strategy: str, spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
) -> str | None:
    """Why ``strategy`` cannot run ``spec`` (with ``opts``) on this device, or ``None``."""
    if strategy not in CONV_STRATEGIES:
        raise StrategyError(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    reason = _dtype_problem(strategy, spec, limits, opts) or CONV_STRATEGIES[strategy].why_not(
        spec, limits, opts
    )
    if reason is None and strategy != "direct":
        try:
            CONV_STRATEGIES[strategy].tiles(spec, limits, opts)
        except StrategyError as err:
            return str(err)
    return reason


def choose_strategy(
    spec: ConvSpec, limits: DeviceLimits, opts: ConvOptions = DEFAULT_OPTIONS
) -> tuple[str, str]:
    """The strategy ``auto`` runs for ``spec``, and a one-line reason.

    Arguments:
        spec: the layer.
        limits: the device's limits.
        opts: the dtype (im2col and winograd run float32 only).

    Returns:
        ``(strategy, reason)``.
    """
    if spec.groups > 1:
        kind = "depthwise" if spec.is_depthwise else f"grouped (groups={spec.groups})"
        return "direct", (
            f"{kind}: each output reads only {spec.cin_per_group} input channel(s), too little "
            "reuse for a GEMM tile; direct"
        )
    if opts.double_buffer:
        return "implicit-gemm", "double buffering: only implicit GEMM has a double-buffered variant"
    if opts.dtype != "float32":
        if spec.cout >= 4 and why_not("implicit-gemm", spec, limits, opts) is None:
            return "implicit-gemm", f"{opts.dtype}: implicit GEMM, the tiled strategy for it"
        return "direct", f"{opts.dtype}: too small for GEMM tiles; direct"
    if Im2colConv.no_copy(spec) and why_not("im2col", spec, limits) is None:
        return "im2col", (
            f"1×1 on {spec.layout.upper()}: the input already is the pixels×channels matrix, "
            "so this is a plain tiled GEMM with no im2col pass"
        )
    if spec.cout < 4 or spec.gemm_k < 8:
        # a GEMM tile would be mostly masked lanes: nothing to reuse
        return "direct", (
            f"{spec.cout} output channel(s) × {spec.gemm_k} taps: too small for GEMM tiles; direct"
        )
    reason = why_not("implicit-gemm", spec, limits)
    if reason is None:
        col = Im2colConv().column_bytes(spec)
        return "implicit-gemm", (
            f"dense {spec.kw}×{spec.kh}: implicit GEMM reuses each input halo tile across "
            f"{min(spec.cout, 32)} output channels with no column matrix (im2col would "
            f"allocate {col} bytes)"
        )
    return "direct", f"implicit-gemm cannot run: {reason}; direct"


# Compiled pipelines kept. A layer runs one or two (im2col + GEMM), and their templates hold
# the layer's shape (kernel, stride, tiles), so a sweep over many shapes would otherwise keep
# them all (each is megabytes of JIT code on lavapipe); 32 covers the last 16 layers or more.
KEPT_PIPELINES = 32


class ConvRunner:
    """Runs layers on one device; compiled pipelines are cached by shader and template.

    ``stats`` counts the pipelines created and those dropped (``pipelines_evicted``) to stay
    within KEPT_PIPELINES.
    """

    def __init__(self, context: GpuContext | None = None) -> None:
        self._context = context
        self.stats: Counter[str] = Counter()
        self._pipelines: LruCache[tuple[str, tuple[tuple[str, Any], ...]], Any] = LruCache(
            KEPT_PIPELINES, self._count_eviction
        )
        self._lock = threading.Lock()
        self._timer: PassTimer | None = None

    @property
    def context(self) -> GpuContext:
        if self._context is None:
            from blurapp.gpu.device import get_device

            self._context = get_device()
        return self._context

    @property
    def limits(self) -> DeviceLimits:
        return self.context.limits

    def pipeline(self, shader: str, **template: Any) -> Any:
        """The compute pipeline of ``shaders/<shader>.wgsl`` rendered with ``template``."""
        from blurapp.gpu.shaders import load_shader

        def make() -> Any:
            device = self.context.device
            module = device.create_shader_module(label=shader, code=load_shader(shader, **template))
            pipe = device.create_compute_pipeline(
                label=shader, layout="auto", compute={"module": module, "entry_point": "main"}
            )
            self.stats["pipelines"] += 1
            return pipe

        return self._pipelines.get_or_make((shader, tuple(sorted(template.items()))), make)

    def _count_eviction(self, _key: Any, _value: Any) -> None:
        self.stats["pipelines_evicted"] += 1

    def run(
        self,
        x: np.ndarray,
        weights: np.ndarray,
        bias: np.ndarray | None,
        spec: ConvSpec,
        strategy: str = "auto",
        *,
        repeats: int = 1,
        opts: ConvOptions = DEFAULT_OPTIONS,
    ) -> ConvResult:
        """Run one layer; see :func:`conv2d`. ``repeats`` > 1 keeps the fastest timed run."""
        if strategy not in STRATEGIES:
            raise StrategyError(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
        limits = self.limits  # creates the device first: no adapter is a one-line error
        import wgpu

        if opts.dtype == "fp16" and "shader-f16" not in self.context.features:
            raise StrategyError(
                "--dtype fp16 needs the adapter's shader-f16 feature, which this one lacks: "
                "use --dtype float32 or int8"
            )
        if strategy == "auto":
            name, reason = choose_strategy(spec, limits, opts)
        else:
            name, reason = strategy, f"as requested: {CONV_STRATEGIES[strategy].summary}"
        problem = _dtype_problem(name, spec, limits, opts) or CONV_STRATEGIES[name].why_not(
            spec, limits, opts
        )
        if problem:
            raise StrategyError(problem)
        strat = CONV_STRATEGIES[name]
        tiles = strat.tiles(spec, limits, opts)
        workspace = strat.workspace(spec, opts)
        tensors = _prepare(spec, x, strat.weights_for(spec, weights), bias, opts)
        x_gpu, w_gpu, b_gpu = tensors.x, tensors.w, tensors.bias
        y_bytes = spec.n * spec.cout * spec.oh * spec.ow * F32
        memory = ConvMemory(
            input_bytes=x_gpu.nbytes,
            weight_bytes=w_gpu.nbytes,
            bias_bytes=b_gpu.nbytes,
            output_bytes=y_bytes,
            column_bytes=strat.column_bytes(spec),
            workspace_bytes=sum(workspace.values()),
        )
        sizes = [("input", x_gpu.nbytes), ("output", y_bytes), ("weights", w_gpu.nbytes)]
        sizes += [(f"{name} workspace", size) for name, size in workspace.items()]
        for what, size in sizes:
            if size > limits.max_storage_binding:
                raise UsageError(
                    f"the {what} needs {size} bytes, more than the {limits.max_storage_binding} "
                    "this device binds in one buffer"
                )

        with self._lock:
            device = self.context.device
            t_start = time.perf_counter()
            storage = wgpu.BufferUsage.STORAGE
            bufs = _Buffers(
                x=device.create_buffer_with_data(data=x_gpu, usage=storage),
                w=device.create_buffer_with_data(data=w_gpu, usage=storage),
                bias=device.create_buffer_with_data(data=b_gpu, usage=storage),
                y=device.create_buffer(size=y_bytes, usage=storage | wgpu.BufferUsage.COPY_SRC),
                col=(
                    device.create_buffer(size=memory.column_bytes, usage=storage)
                    if memory.column_bytes
                    else None
                ),
                work={
                    name: device.create_buffer(size=size, usage=storage | wgpu.BufferUsage.COPY_SRC)
                    for name, size in workspace.items()
                },
                tensors=tensors,
            )
            passes = strat.passes(self, spec, bufs, tiles, opts)
            groups = []
            for p in passes:
                ubuf = device.create_buffer_with_data(
                    data=p.uniform, usage=wgpu.BufferUsage.UNIFORM
                )
                entries = [{"binding": 0, "resource": {"buffer": ubuf}}] + [
                    {"binding": i + 1, "resource": {"buffer": b}}
                    for i, b in enumerate(p.bindings)
                    if b is not None  # a binding the shader variant does not use
                ]
                groups.append(
                    device.create_bind_group(
                        layout=p.pipeline.get_bind_group_layout(0), entries=entries
                    )
                )
            best: list[float] | None = None
            timer_kind = "wall"
            for _ in range(max(1, repeats) + (1 if repeats > 1 else 0)):
                ms, timer_kind = self._submit(device, passes, groups)
                if best is None or sum(ms) < sum(best):
                    best = ms
            y = np.frombuffer(device.queue.read_buffer(bufs.y), dtype=np.float32).copy()
            acc = None
            if "acc" in bufs.work:
                raw = device.queue.read_buffer(bufs.work["acc"])
                acc = np.frombuffer(raw, dtype=np.int32).copy().reshape(spec.y_shape)
            wall_ms = (time.perf_counter() - t_start) * 1e3
        assert best is not None
        timing = Timing(
            passes=tuple(
                PassTiming(p.name, m, p.bytes_modelled) for p, m in zip(passes, best, strict=True)
            ),
            timer=timer_kind,  # type: ignore[arg-type]
            pixels=spec.output_pixels,
            wall_ms=wall_ms,
        )
        return ConvResult(
            y=y.reshape(spec.y_shape),
            spec=spec,
            strategy=name,
            reason=reason,
            timing=timing,
            memory=memory,
            tiles=tiles,
            dtype=opts.dtype,
            accumulators=acc,
            quant=tensors.quant,
        )

    def _submit(
        self, device: Any, passes: list[_Pass], groups: list[Any]
    ) -> tuple[list[float], str]:
        if self._timer is None:
            self._timer = PassTimer(device, 8, use_timestamps=self.context.has_timestamps)
        timer = self._timer
        encoder = device.create_command_encoder()
        for i, (p, bind_group) in enumerate(zip(passes, groups, strict=True)):
            cpass = encoder.begin_compute_pass(timestamp_writes=timer.writes(i))
            cpass.set_pipeline(p.pipeline)
            cpass.set_bind_group(0, bind_group)
            cpass.dispatch_workgroups(*p.workgroups)
            cpass.end()
            encoder = timer.after_pass(encoder)
        timer.resolve(encoder)
        device.queue.submit([encoder.finish()])
        return timer.read_ms(), timer.timer


_runner: ConvRunner | None = None
_runner_lock = threading.Lock()


def get_runner() -> ConvRunner:
    """The process's :class:`ConvRunner` (on :func:`blurapp.gpu.device.get_device`)."""
    global _runner
    with _runner_lock:
        if _runner is None:
            _runner = ConvRunner()
        return _runner


def conv2d(
    x: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    stride: int = 1,
    dilation: int = 1,
    padding: int = 0,
    groups: int = 1,
    layout: str = "nchw",
    strategy: str = "auto",
    repeats: int = 1,
    runner: ConvRunner | None = None,
    winograd_tile: int = 2,
    dtype: str = "float32",
    accumulators: bool = False,
    x_quant: QuantParams | None = None,
    w_quant: QuantParams | None = None,
    tiles: tuple[int, int, int, int] | None = None,
    double_buffer: bool = False,
) -> ConvResult:
    """Run a Conv2D layer on the GPU (float32, zero padding, cross-correlation like PyTorch).

    Arguments:
        x: ``(N, C, H, W)`` for nchw or ``(N, H, W, C)`` for nhwc.
        weights: ``(Cout, C/groups, kh, kw)`` in both layouts.
        bias: ``(Cout,)`` or ``None``.
        stride, dilation, padding, groups: the layer's hyper-parameters.
        layout: ``"nchw"`` or ``"nhwc"``; the output comes back in the same layout.
        strategy: ``"direct"``, ``"im2col"``, ``"implicit-gemm"``, ``"winograd"`` or ``"auto"``.
        repeats: timed runs; the fastest is reported (one warm-up run first when > 1).
        runner: the :class:`ConvRunner` to use (default: the process's one).
        winograd_tile: m of ``winograd``'s F(m×m, 3×3): 2 (default) or 4 (fewer multiplies,
            larger rounding error).
        dtype, accumulators, x_quant, w_quant, tiles, double_buffer: see :class:`ConvOptions`;
            the output is float32 whatever the dtype (int8: dequantised, ``sx·sw·acc``).

    Returns:
        A :class:`ConvResult` with the output, the strategy and why, GPU times and memory.

    Raises:
        UsageError: shapes that do not make a layer. StrategyError: a strategy that cannot run
        this layer (e.g. im2col with groups > 1). GpuUnavailableError: no adapter.
    """
    xs = check_array("input", x)
    ws = check_array("weights", weights)
    bs = None if bias is None else check_array("bias", bias)
    spec = ConvSpec.from_arrays(
        xs.shape,
        ws.shape,
        stride=stride,
        dilation=dilation,
        padding=padding,
        groups=groups,
        layout=layout,
        bias_shape=None if bs is None else bs.shape,
    )
    if strategy not in STRATEGIES:
        raise StrategyError(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    opts = ConvOptions(
        winograd_tile=winograd_tile,
        dtype=dtype,
        accumulators=accumulators,
        x_quant=x_quant,
        w_quant=w_quant,
        tiles=tiles,
        double_buffer=double_buffer,
    )
    return (runner or get_runner()).run(xs, ws, bs, spec, strategy, repeats=repeats, opts=opts)
