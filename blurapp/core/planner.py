"""Pick a strategy and a tile for a kernel from its rank and a small cost model, and say why.

The model counts, per output pixel, the multiply-adds a strategy does, the texels it reads from
global memory and from workgroup memory, and the texels it writes, each weighted in multiply-adds
(a global read or a write as ``READ_COST``, a workgroup-memory read as ``SHARED_READ_COST``).
The weights are calibrated on ``blurapp bench`` (docs/PERFORMANCE.md, lavapipe): direct, which
reads every tap, is the slowest for every radius; tiled runs in 0.5-0.8 of its time; separable,
which does 2(2R+1) instead of (2R+1)² multiply-adds and writes one intermediate, wins from 3×3
up. It is deliberately simple: its job is to make the choice that bench confirms and explain it
in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from blurapp.core.errors import StrategyError

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

TILE_SIDES = (32, 16, 8)
VEC4_TEXEL_BYTES = 16  # one vec4<f32> of workgroup memory
SCALAR_TEXEL_BYTES = 4  # one f32: the channels are then processed one at a time
READ_COST = 4.0  # a global-memory texel read or write, in multiply-adds
SHARED_READ_COST = 2.0  # a workgroup-memory read per tap (tiled: 0.5-0.8 × direct's time)
# The scalar halo is loaded and synchronised once per channel: an overhead per tile that
# small tiles amortise badly (bench on lavapipe: 49×49 at T=32 scalar 0.78 × direct's time,
# 65×65 at T=16 scalar 1.11 ×). Modelled as a factor 1 + SCALAR_TILE_COST / T on tiled's taps.
SCALAR_TILE_COST = 16.0
LINE_BLOCK = 8  # outputs per invocation of a separable 1-D pass (blurapp.gpu.strategies)


@dataclass(frozen=True)
class DeviceLimits:
    """The adapter limits the planner and the tiled strategy need (WebGPU defaults)."""

    workgroup_storage: int = 16384
    max_invocations: int = 256
    max_texture_side: int = 8192
    max_storage_binding: int = 134217728
    name: str = ""
    is_software: bool = False


@dataclass(frozen=True)
class TileChoice:
    """A halo tile that fits the device.

    ``layout`` is ``"vec4"`` when the whole (T+kw-1)×(T+kh-1) RGBA halo fits in workgroup memory
    and ``"scalar"`` when only one channel at a time does (the shader then loops over channels).
    """

    tile: int
    layout: Literal["vec4", "scalar"]
    halo_bytes: int

    @property
    def halo_overhead(self) -> float:
        """Extra texels loaded per tile as a fraction of the tile (125 % for T=16, R=4)."""
        texel = VEC4_TEXEL_BYTES if self.layout == "vec4" else SCALAR_TEXEL_BYTES
        return self.halo_bytes / texel / self.tile**2 - 1.0


def halo_texels(tile: int, kernel_shape: tuple[int, int]) -> int:
    """Texels of a T×T output tile plus its halo for a kernel of ``(rows, cols)``."""
    rows, cols = kernel_shape
    return (tile + rows - 1) * (tile + cols - 1)


def tile_block(tile: int) -> tuple[int, int]:
    """(rows, cols) of the block of outputs each invocation of a T×T tile computes.

    2×8 for T ≥ 16 and 2×4 for T = 8: a 32×32 tile runs on 64 invocations, a 16×16 one on 16.
    """
    return (2, 8) if tile >= 16 else (2, 4)


def tile_invocations(tile: int) -> int:
    """Invocations of the workgroup that computes a T×T tile (T² / block size)."""
    bh, bw = tile_block(tile)
    return (tile // bh) * (tile // bw)


def choose_tile(
    kernel_shape: tuple[int, int], limits: DeviceLimits, requested: int | None = None
) -> TileChoice:
    """The largest tile side whose halo fits the device, preferring a vec4 halo.

    Arguments:
        kernel_shape: ``(rows, cols)`` of the kernel.
        limits: the device's workgroup-storage and invocation limits.
        requested: a tile side the user asked for (8, 16 or 32); it is honoured if it fits.

    Returns:
        The tile side and halo layout.

    Raises:
        StrategyError: when the requested tile, or any tile, cannot hold the halo.
    """
    if requested is not None and requested not in TILE_SIDES:
        raise StrategyError(
            f"tile size {requested} is not one of {', '.join(map(str, TILE_SIDES))}"
        )
    sides = (requested,) if requested is not None else TILE_SIDES
    fitting = [t for t in sides if tile_invocations(t) <= limits.max_invocations]
    if not fitting:
        raise StrategyError(
            f"tile {requested}×{requested} needs {tile_invocations(requested)} invocations per "
            f"workgroup; this device allows {limits.max_invocations}"
        )
    for texel, layout in ((VEC4_TEXEL_BYTES, "vec4"), (SCALAR_TEXEL_BYTES, "scalar")):
        for t in fitting:
            need = halo_texels(t, kernel_shape) * texel
            if need <= limits.workgroup_storage:
                return TileChoice(t, layout, need)  # type: ignore[arg-type]
    t = min(fitting)
    need = halo_texels(t, kernel_shape) * SCALAR_TEXEL_BYTES
    rows, cols = kernel_shape
    raise StrategyError(
        f"a {cols}×{rows} kernel is too large for tiled on this device (a {t}×{t} tile's halo "
        f"needs {need} bytes of workgroup memory, the limit is {limits.workgroup_storage}): "
        "use direct, separable or cpu"
    )


@dataclass(frozen=True)
class Plan:
    """The strategy ``auto`` runs, the tile for ``tiled``, and a one-line reason."""

    strategy: str
    tile: int | None
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"strategy": self.strategy, "tile": self.tile, "reason": self.reason}


def plan(kernel: Kernel, limits: DeviceLimits | None) -> Plan:
    """Choose a strategy for ``kernel`` on a device with ``limits`` (``None``: no GPU).

    Arguments:
        kernel: the kernel to run.
        limits: the adapter's limits, or ``None`` when there is no adapter.

    Returns:
        A :class:`Plan` with its reason, e.g. ``"rank 1, 17×17 taps: separable does 34
        multiply-adds per pixel instead of 289"``.
    """
    rows, cols = kernel.shape
    taps = rows * cols
    if limits is None:
        return Plan("cpu", None, "no GPU adapter: the float64 numpy reference runs on the CPU")
    rank = kernel.separability.rank
    size = f"{cols}×{rows}"
    if taps == 1:
        return Plan("direct", None, "1×1 kernel: one tap per pixel, nothing to share; direct")

    tile: TileChoice | None
    try:
        tile = choose_tile((rows, cols), limits)
    except StrategyError:
        tile = None
    direct_cost = taps * (1.0 + READ_COST) + READ_COST
    tiled_cost = float("inf")
    one_d = rows == 1 or cols == 1
    # A 1-row or 1-column kernel leaves a 2-D tile nothing to share along the other axis: its
    # halo load and barrier are pure overhead (bench: box:3x1 tiled 1.8 × direct's time).
    if tile is not None and not one_d:
        per_tap = 1.0 + SHARED_READ_COST
        if tile.layout == "scalar":
            per_tap *= 1.0 + SCALAR_TILE_COST / tile.tile
        halo_reads = halo_texels(tile.tile, (rows, cols)) / tile.tile**2
        tiled_cost = taps * per_tap + READ_COST * (halo_reads + 1.0)
    sep_taps = rows + cols
    sep_cost = float("inf")
    if rank <= 1:
        # Each pass: its taps, a run of LINE_BLOCK outputs read with its 1-D halo, one write.
        sep_cost = sum(
            n + READ_COST * ((LINE_BLOCK + n - 1) / LINE_BLOCK + 1.0) for n in (rows, cols)
        )

    best = min(direct_cost, tiled_cost, sep_cost)
    if best == sep_cost:
        if one_d:
            n = max(rows, cols)
            reads = (LINE_BLOCK + n - 1) / LINE_BLOCK
            return Plan(
                "separable",
                None,
                f"1-D {size} kernel: separable's pass reads {reads:.2f} texels per pixel "
                f"(a run of {LINE_BLOCK} outputs shares its loads) instead of direct's {taps}",
            )
        return Plan(
            "separable",
            None,
            f"rank {rank}, {size} taps: separable does {sep_taps} multiply-adds per pixel "
            f"instead of {taps}",
        )
    if best == tiled_cost and tile is not None:
        per_px = halo_texels(tile.tile, (rows, cols)) / tile.tile**2
        why_not_sep = (
            f"rank {rank}, so not separable"
            if rank > 1
            else f"separable's second pass costs more than it saves on {taps} taps"
        )
        return Plan(
            "tiled",
            tile.tile,
            f"{why_not_sep}; tiled T={tile.tile} reads {per_px:.2f} texels per pixel from "
            f"global memory instead of {taps}",
        )
    if one_d:
        return Plan(
            "direct",
            None,
            f"1-D {size} kernel: nothing for a 2-D tile to share, and separable's second "
            f"(1-tap) pass costs more than it saves on {taps} taps; direct",
        )
    if tile is None:
        return Plan(
            "direct",
            None,
            f"rank {rank}, {size} taps: the halo does not fit workgroup memory "
            f"({limits.workgroup_storage} bytes); direct reads every tap from global memory",
        )
    return Plan(
        "direct",
        None,
        f"rank {rank}, {size} taps: only a {tile.tile}×{tile.tile} tile with a one-channel "
        "halo fits workgroup memory, and reloading it per channel costs more than direct's "
        "global reads",
    )
