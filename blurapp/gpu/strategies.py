"""The registry of GPU strategies: how each one splits a correlation into compute passes.

A strategy turns (kernel, border, image size, device limits) into a list of :class:`PassSpec`:
which shader runs with which template parameters and override constants, which texture it
reads and writes, its weights, its dispatch size and the global-memory bytes it is modelled
to move. :class:`blurapp.gpu.engine.GpuFilter` executes that list; adding a strategy is adding
one class here (plus its shader) and one entry in :data:`STRATEGIES`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from blurapp.core.errors import StrategyError
from blurapp.core.planner import DeviceLimits, choose_tile

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

__all__ = [
    "STRATEGIES",
    "TEXEL_BYTES",
    "DirectStrategy",
    "PassSpec",
    "SeparableStrategy",
    "Strategy",
    "TiledStrategy",
    "TransposeStrategy",
    "get_strategy",
]

TEXEL_BYTES = 16  # one rgba32float texel, the unit of every global read and write
TRANSPOSE_TILE = 16
_DIRECT_WORKGROUP = 16


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


def _groups(n: int, side: int) -> int:
    return max(1, math.ceil(n / side))


def _check_kernel_size(kernel: Kernel) -> tuple[int, int]:
    rows, cols = kernel.shape
    if rows < 1 or cols < 1:
        raise StrategyError(f"kernel {kernel.name!r} has no taps ({cols}×{rows})")
    return rows, cols


class Strategy(ABC):
    """How one GPU strategy runs a kernel; stateless, one instance per registry entry."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def why_not(self, kernel: Kernel) -> str | None:
        """Why this strategy cannot run ``kernel`` (one line), or ``None`` when it can."""
        return None

    def check(self, kernel: Kernel) -> None:
        """Raise :class:`StrategyError` with :meth:`why_not`'s line when it cannot run."""
        reason = self.why_not(kernel)
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


class DirectStrategy(Strategy):
    name = "direct"
    summary = "one invocation per output pixel, every tap read from global memory"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = _check_kernel_size(kernel)
        width, height = size
        wg = _DIRECT_WORKGROUP if limits.max_invocations >= _DIRECT_WORKGROUP**2 else 8
        pixels = width * height
        return (
            PassSpec(
                name="direct",
                shader="direct",
                template=(("wg_x", wg), ("wg_y", wg)),
                constants=(("KW", cols), ("KH", rows), ("BORDER_MODE", border_mode)),
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
    summary = "T×T output tile with its halo in workgroup memory"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = _check_kernel_size(kernel)
        width, height = size
        choice = choose_tile((rows, cols), limits, tile)
        t = choice.tile
        halo_len = (t + cols - 1) * (t + rows - 1)
        tiles = _groups(width, t) * _groups(height, t)
        # The scalar layout reloads the halo once per channel (a whole texel each time).
        loads = halo_len * (1 if choice.layout == "vec4" else channels)
        return (
            PassSpec(
                name="tiled",
                shader="halo_tiled",
                template=(("tile", t), ("halo_len", halo_len), ("layout", choice.layout)),
                constants=(("KW", cols), ("KH", rows), ("BORDER_MODE", border_mode)),
                src="input",
                dst="output",
                size=size,
                out_size=size,
                workgroups=(_groups(width, t), _groups(height, t)),
                weights=np.ascontiguousarray(kernel.weights, dtype=np.float32).ravel(),
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


def row_strip(taps: int, limits: DeviceLimits) -> tuple[int, int]:
    """(width, height) of the row pass's workgroup strip for a ``taps``-long kernel.

    64 outputs wide (coalesced reads), as many rows as workgroup memory allows (up to 4).
    """
    for width in (64, 32, 16, 8, 4, 2, 1):
        for height in (4, 2, 1):
            if (
                width * height <= limits.max_invocations
                and height * (width + taps - 1) * TEXEL_BYTES <= limits.workgroup_storage
            ):
                return width, height
    raise StrategyError(
        f"a {taps}-tap row does not fit this device's {limits.workgroup_storage} bytes of "
        "workgroup memory: use direct or cpu"
    )


def column_tile(taps: int, limits: DeviceLimits) -> tuple[int, int]:
    """(width, height) of the column pass's 2-D tile for a ``taps``-long kernel.

    Wide first (neighbouring invocations read neighbouring texels of a row), then as tall
    as workgroup memory allows: a taller tile amortises the vertical halo.
    """
    for width in (16, 8, 4, 2, 1):
        for height in (16, 8, 4, 2, 1):
            if (
                width * height <= limits.max_invocations
                and width * (height + taps - 1) * TEXEL_BYTES <= limits.workgroup_storage
            ):
                return width, height
    raise StrategyError(
        f"a {taps}-tap column does not fit this device's {limits.workgroup_storage} bytes of "
        "workgroup memory: use direct or cpu"
    )


def _rows_pass(
    name: str,
    taps: np.ndarray,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    limits: DeviceLimits,
    src: str,
    dst: str,
) -> PassSpec:
    width, height = size
    n = len(taps)
    sw, sh = row_strip(n, limits)
    strips = _groups(width, sw) * _groups(height, sh)
    return PassSpec(
        name=name,
        shader="separable_rows",
        template=(("strip_w", sw), ("strip_h", sh), ("halo_len", sh * (sw + n - 1))),
        constants=(("TAPS", n), ("BORDER_MODE", border_mode)),
        src=src,
        dst=dst,
        size=size,
        out_size=size,
        workgroups=(_groups(width, sw), _groups(height, sh)),
        weights=taps.astype(np.float32),
        constant=constant,
        bytes_modelled=(strips * sh * (sw + n - 1) + width * height) * TEXEL_BYTES,
    )


def _cols_pass(
    taps: np.ndarray,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    limits: DeviceLimits,
) -> PassSpec:
    width, height = size
    n = len(taps)
    tw, th = column_tile(n, limits)
    tiles = _groups(width, tw) * _groups(height, th)
    return PassSpec(
        name="cols",
        shader="separable_cols",
        template=(("tile_w", tw), ("tile_h", th), ("halo_len", tw * (th + n - 1))),
        constants=(("TAPS", n), ("BORDER_MODE", border_mode)),
        src="tmp0",
        dst="output",
        size=size,
        out_size=size,
        workgroups=(_groups(width, tw), _groups(height, th)),
        weights=taps.astype(np.float32),
        constant=constant,
        bytes_modelled=(tiles * tw * (th + n - 1) + width * height) * TEXEL_BYTES,
    )


def _transpose_pass(name: str, size: tuple[int, int], src: str, dst: str) -> PassSpec:
    width, height = size
    t = TRANSPOSE_TILE
    return PassSpec(
        name=name,
        shader="transpose",
        template=(("tile", t),),
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


class _RankOneStrategy(Strategy):
    def why_not(self, kernel: Kernel) -> str | None:
        rank = kernel.separability.rank
        if rank > 1:
            return (
                f"{self.name} needs a rank-1 kernel; {kernel.name} has rank {rank}: "
                "use direct, tiled or cpu"
            )
        return None


class SeparableStrategy(_RankOneStrategy):
    name = "separable"
    summary = "row pass over a workgroup strip, column pass over a 2-D tile"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        _check_kernel_size(kernel)
        self.check(kernel)
        column, row = _factors(kernel)
        # Outside the image along y, the column pass reads what the row pass makes of a row of
        # constants: V * sum(row). Clamp/reflect/mirror/wrap map each axis on its own.
        col_constant = float(constant * row.sum())
        return (
            _rows_pass("rows", row, border_mode, constant, size, limits, "input", "tmp0"),
            _cols_pass(column, border_mode, col_constant, size, limits),
        )


class TransposeStrategy(_RankOneStrategy):
    name = "transpose"
    summary = "row pass, tiled transpose, the same row pass, transpose back"

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        _check_kernel_size(kernel)
        self.check(kernel)
        column, row = _factors(kernel)
        width, height = size
        col_constant = float(constant * row.sum())
        return (
            _rows_pass("rows", row, border_mode, constant, size, limits, "input", "tmp0"),
            _transpose_pass("transpose", size, "tmp0", "tmp1"),
            _rows_pass(
                "rows_t", column, border_mode, col_constant, (height, width), limits, "tmp1", "tmp2"
            ),
            _transpose_pass("transpose_back", (height, width), "tmp2", "output"),
        )


STRATEGIES: dict[str, Strategy] = {
    s.name: s for s in (DirectStrategy(), TiledStrategy(), SeparableStrategy(), TransposeStrategy())
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
