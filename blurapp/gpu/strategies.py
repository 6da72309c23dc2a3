"""The registry of GPU strategies: how each one splits a correlation into compute passes.

A strategy turns (kernel, border, image size, device limits) into a list of :class:`PassSpec`:
which shader runs with which template parameters and override constants, which texture it
reads and writes, its weights, its dispatch size and the global-memory bytes it is modelled
to move. :class:`blurapp.gpu.engine.GpuFilter` executes that list; adding a strategy is adding
one class here (plus its shader) and one entry in the registry of names,
:data:`blurapp.core.strategies.STRATEGIES` (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from blurapp.core import strategies as registry
from blurapp.core.errors import StrategyError
from blurapp.core.planner import BAKED_TAPS, DeviceLimits, choose_tile, line_block, tile_block

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

__all__ = [
    "OUTPUT_FORMATS",
    "STRATEGIES",
    "TEXEL_BYTES",
    "DirectStrategy",
    "FftStrategy",
    "LowRankStrategy",
    "PassSpec",
    "SeparableStrategy",
    "Strategy",
    "TiledStrategy",
    "TransposeStrategy",
    "buffer_variant",
    "get_strategy",
    "line_block",
    "with_output",
]

TEXEL_BYTES = 16  # one rgba32float texel, the unit of every global read and write
TRANSPOSE_TILE = 32
TRANSPOSE_ROWS = 8  # a 32×32 tile moved by 32×8 invocations, 4 texels each
_DIRECT_WORKGROUP = 8  # 8×8: a multiple of lavapipe's 8 SIMD lanes and of a GPU's 32-wide warp
# Workgroups of the 1-D passes, (x, y) invocations. On lavapipe a workgroup's invocations run
# 8 to a SIMD vector along x; the column pass wants many neighbouring columns (each row it reads
# is one contiguous stretch), the row pass fewer, as each of its invocations already covers a
# run of outputs. 3840×2160 R=8: rows 16×4, cols 32×2 take 0.81 and 0.67 × the time of 8×8.
_ROWS_WORKGROUP = (16, 4)
_COLS_WORKGROUP = (32, 2)

# output name -> (WebGPU format of the last pass's texture, bytes per texel). "rgba8" is for
# callers that quantise to 8 bits anyway: the store rounds to nearest and clamps to [0, 1], and
# the output texture and readback buffer are a quarter of the size. Intermediates stay f32.
OUTPUT_FORMATS: dict[str, tuple[str, int]] = {
    "rgba32f": ("rgba32float", TEXEL_BYTES),
    "rgba8": ("rgba8unorm", 4),
}


@dataclass(frozen=True, eq=False)
class PassSpec:
    """One compute dispatch of a strategy.

    Attributes:
        name: the pass as reported in timings (``"rows"``, ``"cols"``, ``"transpose"``, ...).
        shader: shader file name without ``.wgsl``.
        template: Jinja parameters that shape the code (array lengths, workgroup size).
        constants: WGSL ``override`` values (kernel size, border mode).
        src, dst: texture slots read and written (``"input"``, ``"output"``, ``"tmpN"``).
        size: (width, height) of ``src``; ``out_size`` the same for ``dst``.
        workgroups: dispatch size (x, y).
        weights: float32 taps the shader reads, or ``None``.
        constant: the value read outside the image in constant border mode.
        bytes_modelled: global-memory bytes read and written, halo loads included.
        add: a texture slot read at each output texel and added to the result (lowrank's
            running sum), or ``None``.
    """

    name: str
    shader: str
    template: tuple[tuple[str, Any], ...]
    constants: tuple[tuple[str, int | float], ...]
    src: str
    dst: str
    size: tuple[int, int]
    out_size: tuple[int, int]
    workgroups: tuple[int, int]
    weights: np.ndarray | None
    constant: float
    bytes_modelled: int
    add: str | None = None


def _groups(n: int, side: int) -> int:
    return max(1, math.ceil(n / side))


def _check_kernel_size(kernel: Kernel) -> tuple[int, int]:
    rows, cols = kernel.shape
    if rows < 1 or cols < 1:
        raise StrategyError(f"kernel {kernel.name!r} has no taps ({cols}×{rows})")
    return rows, cols


def with_output(passes: tuple[PassSpec, ...], output: str) -> tuple[PassSpec, ...]:
    """``passes`` with the last one writing the ``output`` format (a key of OUTPUT_FORMATS).

    Only the pass that writes ``"output"`` changes: its shader gets the ``dst_format`` template
    parameter and its modelled bytes count the narrower writes. ``"rgba32f"`` returns ``passes``
    unchanged (the templates, and so the cached pipelines, stay those of the default).
    """
    fmt, texel = OUTPUT_FORMATS[output]
    if texel == TEXEL_BYTES:
        return passes
    last = passes[-1]
    written = last.out_size[0] * last.out_size[1]
    narrowed = replace(
        last,
        template=(*last.template, ("dst_format", fmt)),
        bytes_modelled=last.bytes_modelled - written * (TEXEL_BYTES - texel),
    )
    return (*passes[:-1], narrowed)


class Strategy(ABC):
    """How one GPU strategy runs a kernel; stateless, one instance per registry entry."""

    name: ClassVar[str]  # its entry in blurapp.core.strategies.STRATEGIES

    @property
    def info(self) -> registry.StrategyInfo:
        """The registry entry: summary, colour, what it needs."""
        return registry.STRATEGIES[self.name]

    @property
    def summary(self) -> str:
        return self.info.summary

    def why_not(self, kernel: Kernel, tolerance: float | None = None) -> str | None:
        """Why this strategy cannot run ``kernel`` (one line), or ``None`` when it can."""
        return self.info.why_not(kernel, tolerance)

    def check(self, kernel: Kernel, tolerance: float | None = None) -> None:
        """Raise :class:`StrategyError` with :meth:`why_not`'s line when it cannot run."""
        reason = self.why_not(kernel, tolerance)
        if reason is not None:
            raise StrategyError(reason)

    @abstractmethod
    def passes(
        self,
        kernel: Kernel,
        border_mode: int,
        constant: float,
        size: tuple[int, int],
        limits: DeviceLimits,
        tile: int | None = None,
        channels: int = 4,
    ) -> tuple[PassSpec, ...]:
        """The dispatches that filter a (width, height) image.

        Arguments:
            kernel: the kernel (correlation, anchor at (rows // 2, cols // 2)).
            border_mode: ``BorderMode`` value (the shader's code).
            constant: the border value for constant mode.
            size: (width, height) of the image.
            limits: the device limits that size workgroups and halos.
            tile: the tile side asked for (used by ``tiled`` only).
            channels: channels that carry data (the scalar halo layout loops over them).

        Returns:
            The passes in order; the first reads ``"input"``, the last writes ``"output"``.
        """


def _has_zero(kernel: Kernel) -> bool:
    """Whether ``kernel`` has a zero weight (as float32): the 2-D shaders then skip zero taps
    instead of multiplying them, so that NaN and Inf spread only under non-zero weights."""
    return bool(np.any(np.asarray(kernel.weights, dtype=np.float32) == 0))


class DirectStrategy(Strategy):
    name = "direct"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = _check_kernel_size(kernel)
        width, height = size
        wg = _DIRECT_WORKGROUP
        pixels = width * height
        return (
            PassSpec(
                name="direct",
                shader="direct",
                # The kernel's columns are unrolled in the shader: its width shapes the code.
                template=(
                    ("wg_x", wg),
                    ("wg_y", wg),
                    ("kw", cols),
                    ("skip_zero", _has_zero(kernel)),
                ),
                constants=(("KH", rows), ("BORDER_MODE", border_mode)),
                src="input",
                dst="output",
                size=size,
                out_size=size,
                workgroups=(_groups(width, wg), _groups(height, wg)),
                weights=np.ascontiguousarray(kernel.weights, dtype=np.float32).ravel(),
                constant=constant,
                bytes_modelled=pixels * (rows * cols + 1) * TEXEL_BYTES,
            ),
        )


class TiledStrategy(Strategy):
    name = "tiled"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = _check_kernel_size(kernel)
        width, height = size
        choice = choose_tile((rows, cols), limits, tile)
        t = choice.tile
        bh, bw = tile_block(t)
        halo_len = (t + cols - 1) * (t + rows - 1)
        tiles = _groups(width, t) * _groups(height, t)
        # The scalar layout reloads the halo once per channel (a whole texel each time).
        loads = halo_len * (1 if choice.layout == "vec4" else channels)
        # BLOCK_H - 1 zero rows above and below: output row o of a block reads kernel row r - o.
        pad = np.zeros((bh - 1) * cols, dtype=np.float32)
        weights = np.concatenate([pad, np.asarray(kernel.weights, np.float32).ravel(), pad])
        return (
            PassSpec(
                name="tiled",
                shader="halo_tiled",
                template=(
                    ("tile", t),
                    ("kw", cols),
                    ("kh", rows),
                    ("block_w", bw),
                    ("block_h", bh),
                    ("layout", choice.layout),
                    ("skip_zero", _has_zero(kernel)),
                ),
                constants=(("BORDER_MODE", border_mode),),
                src="input",
                dst="output",
                size=size,
                out_size=size,
                workgroups=(_groups(width, t), _groups(height, t)),
                weights=weights,
                constant=constant,
                bytes_modelled=(tiles * loads + width * height) * TEXEL_BYTES,
            ),
        )


def _factors(kernel: Kernel) -> tuple[np.ndarray, np.ndarray]:
    """The (column, row) 1-D factors of a rank ≤ 1 kernel, float64."""
    sep = kernel.separability
    rows, cols = kernel.shape
    if sep.column is None or sep.row is None:  # rank 0: the zero kernel
        return np.zeros(rows), np.zeros(cols)
    return np.asarray(sep.column, dtype=np.float64), np.asarray(sep.row, dtype=np.float64)


def _literal(value: float) -> str:
    """A WGSL literal for the float32 ``value`` (shortest text that rounds back to it)."""
    return repr(float(np.float32(value)))


def _line_pass(
    name: str,
    taps: np.ndarray,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    src: str,
    dst: str,
    *,
    vertical: bool,
    bake: bool = True,
    add: str | None = None,
) -> PassSpec:
    """A 1-D pass; ``bake=False`` reads the weights from the buffer (unrolled all the same up to
    BAKED_TAPS), ``add`` is the slot of a running sum to add (lowrank)."""
    width, height = size
    n = len(taps)
    if n > BAKED_TAPS:
        # The looped pass reads its weights from the buffer anyway: pad them with zeros (which
        # it skips) to a multiple of 64 taps plus one, so that one pipeline serves every
        # kernel of the bucket instead of one per length.
        m = LOOP_BUCKET * -(-(n - 1) // LOOP_BUCKET) + 1
        padded = np.zeros(m, np.float64)
        front = m // 2 - n // 2
        padded[front : front + n] = taps
        taps, n = padded, m
    block = line_block(n)
    unrolled = n <= BAKED_TAPS
    baked = tuple(_literal(v) for v in taps) if unrolled and bake else None
    template: tuple[tuple[str, Any], ...] = (
        ("wg_x", _COLS_WORKGROUP[0] if vertical else _ROWS_WORKGROUP[0]),
        ("wg_y", _COLS_WORKGROUP[1] if vertical else _ROWS_WORKGROUP[1]),
        ("taps", n),
        ("block", block),
        ("baked", baked),
    )
    if not bake:
        template += (("unrolled", unrolled),)
    if add is not None:
        template += (("accumulate", True),)
    wg_x, wg_y = _COLS_WORKGROUP if vertical else _ROWS_WORKGROUP
    if vertical:
        blocks = width * _groups(height, block)
        workgroups = (_groups(width, wg_x), _groups(_groups(height, block), wg_y))
    else:
        blocks = _groups(width, block) * height
        workgroups = (_groups(_groups(width, block), wg_x), _groups(height, wg_y))
    return PassSpec(
        name=name,
        shader="separable_cols" if vertical else "separable_rows",
        template=template,
        constants=(("BORDER_MODE", border_mode),),
        src=src,
        dst=dst,
        size=size,
        out_size=size,
        workgroups=workgroups,
        weights=np.asarray(taps, dtype=np.float32),
        constant=constant,
        # Each block reads its outputs plus the 1-D halo once, and writes its outputs (and
        # reads the running sum once per output when it adds one).
        bytes_modelled=(blocks * (block + n - 1) + (2 if add else 1) * width * height)
        * TEXEL_BYTES,
        add=add,
    )


def _rows_pass(
    name: str,
    taps: np.ndarray,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    src: str,
    dst: str,
) -> PassSpec:
    return _line_pass(name, taps, border_mode, constant, size, src, dst, vertical=False)


def _cols_pass(
    taps: np.ndarray, border_mode: int, constant: float, size: tuple[int, int]
) -> PassSpec:
    return _line_pass("cols", taps, border_mode, constant, size, "tmp0", "output", vertical=True)


def _transpose_pass(name: str, size: tuple[int, int], src: str, dst: str) -> PassSpec:
    width, height = size
    t = TRANSPOSE_TILE
    return PassSpec(
        name=name,
        shader="transpose",
        template=(("tile", t), ("rows", TRANSPOSE_ROWS)),
        constants=(),
        src=src,
        dst=dst,
        size=size,
        out_size=(height, width),
        workgroups=(_groups(width, t), _groups(height, t)),
        weights=None,
        constant=0.0,
        bytes_modelled=2 * width * height * TEXEL_BYTES,
    )


#: Tap counts of the 1-D passes that read their weights from the buffer: a kernel's taps are
#: padded with zeros to the next bucket, so that one pipeline serves every kernel up to it (a
#: sigma sweep compiles a handful of pipelines, not two per step).
TAP_BUCKETS = (3, 5, 9, 13, 17, 25, 33, 49, 65)
LOOP_BUCKET = 64  # longer 1-D kernels loop over the buffer, padded to 64·k + 1 taps
LINE_SHADERS = ("separable_rows", "separable_cols")


def buffer_variant(p: PassSpec) -> PassSpec | None:
    """The same 1-D pass reading its weights from the buffer instead of baked literals, its
    taps padded with zeros to a :data:`TAP_BUCKETS` size around the same anchor; ``None`` when
    ``p`` is not a baked 1-D pass. It computes the same values: a zero weight adds an exact 0."""
    template = dict(p.template)
    if p.shader not in LINE_SHADERS or template.get("baked") is None or p.weights is None:
        return None
    n = int(template["taps"])
    m = next(b for b in TAP_BUCKETS if b >= n)
    front = m // 2 - n // 2  # keeps the anchor (taps // 2) on the same weight
    taps = np.zeros(m, np.float32)
    taps[front : front + n] = p.weights
    variant = _line_pass(
        p.name, taps, int(dict(p.constants)["BORDER_MODE"]), p.constant, p.size, p.src, p.dst,
        vertical=p.shader == "separable_cols", bake=False, add=p.add,
    )  # fmt: skip
    # What with_output added (the output texture's format) stays; the traffic is the model's
    # of the kernel itself, not of its zero padding.
    kept = tuple(item for item in p.template if item[0] == "dst_format")
    return replace(variant, template=variant.template + kept, bytes_modelled=p.bytes_modelled)


class _RankOneStrategy(Strategy):
    def _factors(self, kernel: Kernel, constant: float) -> tuple[np.ndarray, np.ndarray, float]:
        """The column and row factors, and the border constant the column filter must read.

        Outside the image along y, the column filter reads what the row filter makes of a row
        of constants: V * sum(row). Clamp/reflect/mirror/wrap map each axis on its own.
        """
        _check_kernel_size(kernel)
        self.check(kernel)
        column, row = _factors(kernel)
        return column, row, float(constant * row.sum())


class SeparableStrategy(_RankOneStrategy):
    name = "separable"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        column, row, col_constant = self._factors(kernel, constant)
        return (
            _rows_pass("rows", row, border_mode, constant, size, "input", "tmp0"),
            _cols_pass(column, border_mode, col_constant, size),
        )


class TransposeStrategy(_RankOneStrategy):
    name = "transpose"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        column, row, col_constant = self._factors(kernel, constant)
        width, height = size
        return (
            _rows_pass("rows", row, border_mode, constant, size, "input", "tmp0"),
            _transpose_pass("transpose", size, "tmp0", "tmp1"),
            _rows_pass(
                "rows_t", column, border_mode, col_constant, (height, width), "tmp1", "tmp2"
            ),
            _transpose_pass("transpose_back", (height, width), "tmp2", "output"),
        )


class LowRankStrategy(Strategy):
    """A sum of k separable pairs (blurapp.core.lowrank chooses k and states the error).

    Pair j runs a row pass (input -> tmp0) and a column pass that adds the sum of pairs
    0..j-1, read from one of two ping-pong textures (tmp1, tmp2), and writes the sum so far;
    the last one writes the output. Nothing is read back in between. The 1-D passes read their
    weights from the buffer (unrolled all the same), so every pair, and every kernel of the same
    size, shares one row and one column pipeline instead of compiling 2k.
    """

    name = "lowrank"

    def passes(
        self, kernel, border_mode, constant, size, limits, tile=None, channels=4, tolerance=None
    ):
        from blurapp.core.lowrank import low_rank

        _check_kernel_size(kernel)
        chosen = low_rank(kernel, tolerance)
        out: list[PassSpec] = []
        total = None
        for j, (column, row) in enumerate(zip(chosen.columns, chosen.rows, strict=True)):
            last = j == chosen.k - 1
            dst = "output" if last else ("tmp1", "tmp2")[j % 2]
            out.append(
                _line_pass(
                    f"rows{j + 1}", row, border_mode, constant, size, "input", "tmp0",
                    vertical=False, bake=False,
                )
            )  # fmt: skip
            # Outside the image along y the column pass reads pair j's rows of constants.
            out.append(
                _line_pass(
                    f"cols{j + 1}", column, border_mode, float(constant * row.sum()), size,
                    "tmp0", dst, vertical=True, bake=False, add=total,
                )
            )  # fmt: skip
            total = dst
        return tuple(out)


class FftStrategy(Strategy):
    """FFT convolution in overlap-save blocks; the passes and shaders are in blurapp.gpu.fft.

    It runs itself (:meth:`run`: complex buffers and batches of blocks, not texture slots);
    :meth:`passes` describes its four passes for timings and the byte model.

    Float32 error: max |error| ≤ 2^-24 · log2(NR·NC) · max|x| · ||k||_1, max|x| over what the
    blocks hold (a constant border's value included); measured at 0.15 to 0.4 of that against
    the float64 reference (docs/PERFORMANCE.md has the table), tested on every border mode. At
    the largest block, 2048², that is 1.3e-6 · max|x| · ||k||_1: rounding in a transform grows
    with log2 of its length, not with the kernel's size. A transform spreads a NaN or Inf over
    its whole block: blurapp.engine runs fft on an image's finite values and places the
    non-finite outputs exactly (:mod:`blurapp.gpu.nonfinite`).
    """

    name = "fft"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        from blurapp.gpu import fft  # it builds on this module's PassSpec

        _check_kernel_size(kernel)
        return fft.passes(kernel, border_mode, constant, size, limits, channels)

    def run(self, engine, x, kernel, border, passes, **options):
        """Filter ``x`` with ``passes`` on ``engine`` (a GpuFilter); see blurapp.gpu.fft.run."""
        from blurapp.gpu import fft

        return fft.run(engine, x, kernel, border, passes, **options)


# In the registry's order; tests check that every GPU entry of the registry has its class.
_CLASSES = {
    c.name: c
    for c in (
        DirectStrategy, TiledStrategy, SeparableStrategy, TransposeStrategy, LowRankStrategy,
        FftStrategy,
    )
}  # fmt: skip
STRATEGIES: dict[str, Strategy] = {
    name: _CLASSES[name]() for name in registry.gpu_names() if name in _CLASSES
}


def get_strategy(name: str) -> Strategy:
    """The registered strategy called ``name``.

    Raises:
        StrategyError: unknown name (the message lists the GPU strategies).
    """
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise StrategyError(
            f"unknown GPU strategy {name!r}; choose one of {', '.join(STRATEGIES)}"
        ) from None
