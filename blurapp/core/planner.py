"""Pick a strategy and a tile for a kernel from its rank and a small cost model, and say why.

The model counts, per output pixel, the multiply-adds a strategy does and the texels it reads
from global memory (a texel read is weighted as ``READ_COST`` multiply-adds: on GPUs and on
lavapipe alike a global read costs several times an FMA). It is deliberately simple: its job is
to make the obvious choice and explain it in one line, and ``blurapp bench`` is there to check it.
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
READ_COST = 4.0  # a global-memory texel read, in multiply-adds
PASS_COST = 6.0  # a pass's fixed cost per pixel: write + read of an intermediate texel, in FMAs


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
    fitting = [t for t in sides if t * t <= limits.max_invocations]
    if not fitting:
        raise StrategyError(
            f"tile {requested}×{requested} needs {requested * requested} invocations per "
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
    direct_cost = taps * (1.0 + READ_COST)
    tiled_cost = (
        taps + READ_COST * halo_texels(tile.tile, (rows, cols)) / tile.tile**2
        if tile is not None
        else float("inf")
    )
    sep_taps = rows + cols
    sep_cost = sep_taps + 2 * READ_COST + PASS_COST if rank <= 1 else float("inf")

    best = min(direct_cost, tiled_cost, sep_cost)
    if best == sep_cost:
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
    return Plan(
        "direct",
        None,
        f"rank {rank}, {size} taps: the halo does not fit workgroup memory "
        f"({limits.workgroup_storage} bytes); direct reads every tap from global memory",
    )
