"""Pick a strategy and a tile for a kernel from its rank and a small cost model, and say why.

The model gives each strategy a time per output pixel, a + b · taps, in units of one direct
tap, fitted to ``blurapp bench`` on lavapipe at 1024×1024 (docs/PERFORMANCE.md, "How auto
chooses"): direct reads every tap from global memory (b = 1) but has little else to do; tiled
pays for its halo load and barrier (a = 10) and then reads taps from workgroup memory at half
the cost; each separable pass costs a little more than a copy and then almost nothing per tap.
So separable wins for every rank-1 kernel but 1×1, direct for small non-separable kernels (3×3)
and tiled from 5×5 up. A kernel of low rank k (:mod:`blurapp.core.lowrank`) costs k separable
pairs plus the running sum each later pair reads back: lowrank wins once its taps outgrow
k(rows + cols). ``fft`` costs a + b·log2(block) per pixel of its transform blocks, whatever the
kernel; it is considered only when the registry has it (:func:`fft_cost`). Images with NaN or
Inf get the same plan: blurapp.engine places their non-finite outputs exactly whatever runs
(:mod:`blurapp.core.nonfinite`). It is deliberately simple: its job is to make the choice that
bench confirms and explain it in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from blurapp.core import lowrank
from blurapp.core.errors import StrategyError
from blurapp.core.strategies import LOWRANK, STRATEGIES

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

TILE_SIDES = (32, 16, 8)
VEC4_TEXEL_BYTES = 16  # one vec4<f32> of workgroup memory
SCALAR_TEXEL_BYTES = 4  # one f32: the channels are then processed one at a time
# Cost per output pixel = FIXED + TAP × taps, in units of one direct tap. Bench, 1024×1024 RGBA
# f32: direct 39 ms at 3 taps, 73 at 9, 150 at 25, 306 at 49, 620 at 81 (~6 ms a tap); tiled 67,
# 95, 153, 225, 324; separable 28-40 ms for 3×1 up to 17×17.
DIRECT_FIXED = 3.0  # indexing, border mapping and the store
TILED_FIXED = 10.0  # the cooperative halo load, the barrier and the block's stores
TILED_TAP = 0.5  # a workgroup-memory read and a multiply-add
LINE_FIXED = 2.1  # per 1-D pass: its reads (a run of outputs shares them) and its store
LINE_TAP = 0.075  # a multiply-add on registers
# The scalar halo is loaded and synchronised once per channel: an overhead per tile that
# small tiles amortise badly (bench on lavapipe, 256×256: 49×49 at T=32 scalar 0.78 × direct's
# time, 65×65 at T=16 scalar 1.19 ×). Modelled as a factor 1 + SCALAR_TILE_COST / T on tiled's taps.
SCALAR_TILE_COST = 20.0
BAKED_TAPS = 65  # up to this many taps a 1-D pass has its weights baked in and unrolled
# lowrank, per pair: its two 1-D passes read their weights from a buffer and write f32
# intermediates the next pass reads; each pair after the first also reads the running sum back
# in its column pass, which doubles that pass on lavapipe. Fitted to one interleaved run at
# 1024×1024 RGBA f32 (docs/PERFORMANCE.md): a 9-tap pair 53 ms, its column pass 27 ms alone and
# 51-62 ms adding the sum; disk r=4 (k=5) 374 ms of passes, laplacian (k=2) 134 ms, where
# direct took 316 and 46 ms (3.75 ms a tap).
LOWRANK_FIXED = 13.0
LOWRANK_TAP = 0.3
LOWRANK_SUM = 7.0
# fft: per output pixel (FFT_FIXED + FFT_LOG2 * log2(block)) * block² / (block - K + 1)², the
# transform's passes over a block and its overlap. Placeholders until the fft strategy exists
# and bench fits them (docs/PERFORMANCE.md); the planner only uses them when "fft" is in the
# registry.
FFT = "fft"
FFT_FIXED = 35.0
FFT_LOG2 = 4.0
FFT_MAX_BLOCK = 1024


def line_block(taps: int) -> int:
    """Outputs each invocation of a separable 1-D pass computes for a ``taps``-long kernel.

    A run of B outputs reads B + taps - 1 texels into registers instead of B × taps. Measured
    on lavapipe at 3840×2160 (docs/PERFORMANCE.md): 16 outputs are fastest from 15 to 33 taps
    (R=8: 0.87-0.93 × the time of 8), 8 below (R=2: 16 takes 1.23 × the time of 8) and above
    (the unrolled code grows as block × taps); past BAKED_TAPS the pass loops over a weights
    buffer, one output per invocation.
    """
    if taps > BAKED_TAPS:
        return 1
    if 15 <= taps <= 33:
        return 16
    return 8


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


def lowrank_cost(k: int, kernel_shape: tuple[int, int]) -> float:
    """Modelled cost per pixel of k separable pairs summed on the GPU (units of a direct tap)."""
    rows, cols = kernel_shape
    return k * (LOWRANK_FIXED + LOWRANK_TAP * (rows + cols)) + (k - 1) * LOWRANK_SUM


def fft_block(kernel_shape: tuple[int, int]) -> int:
    """The transform block side the cost model assumes: the cheapest power of two that holds
    the kernel twice, up to FFT_MAX_BLOCK (see :func:`fft_cost`)."""
    side = max(kernel_shape)
    best, best_cost = 0, math.inf
    block = 1 << max(3, math.ceil(math.log2(2 * side)))
    while block <= max(FFT_MAX_BLOCK, 2 * side):
        cost = _fft_block_cost(block, side)
        if cost < best_cost:
            best, best_cost = block, cost
        block *= 2
    return best


def _fft_block_cost(block: int, side: int) -> float:
    valid = block - side + 1
    return (FFT_FIXED + FFT_LOG2 * math.log2(block)) * block * block / (valid * valid)


def fft_cost(kernel_shape: tuple[int, int]) -> float | None:
    """Modelled cost per pixel of ``fft`` (units of a direct tap), or ``None`` while the
    registry has no ``fft`` strategy. The form a + b·log2(block) per transformed pixel, times
    the overlap of the blocks, is fitted with bench once it exists."""
    if FFT not in STRATEGIES:
        return None
    return _fft_block_cost(fft_block(kernel_shape), max(kernel_shape))


def cost(
    strategy: str,
    kernel: Kernel,
    limits: DeviceLimits | None = None,
    *,
    tolerance: float | None = None,
) -> float:
    """The model's time per output pixel of ``strategy`` on ``kernel``, in direct taps (what
    :func:`plan` compares; ``auto``: the strategy it plans). ``math.inf`` where the strategy
    cannot run the kernel. For callers that size work by time (the live preview's tiles)."""
    limits = limits or DeviceLimits()
    rows, cols = kernel.shape
    taps = rows * cols
    info = STRATEGIES[strategy]
    if info.runs_on == "planner":
        strategy = plan(kernel, limits, tolerance=tolerance).strategy
        info = STRATEGIES[strategy]
    if info.why_not(kernel, tolerance) is not None:
        return math.inf
    if strategy == "tiled":
        try:
            choice = choose_tile((rows, cols), limits)
        except StrategyError:
            return math.inf
        per_tap = TILED_TAP
        if choice.layout == "scalar":
            per_tap *= 1.0 + SCALAR_TILE_COST / choice.tile
        return TILED_FIXED + taps * per_tap
    if info.needs_rank1:  # two 1-D passes (transpose adds two copies)
        passes = 2 * LINE_FIXED + LINE_TAP * (rows + cols)
        return passes + (2 * LINE_FIXED if strategy == "transpose" else 0.0)
    if strategy == LOWRANK:
        return lowrank_cost(lowrank.low_rank(kernel, tolerance).k, (rows, cols))
    if strategy == FFT:
        found = fft_cost((rows, cols))
        return math.inf if found is None else found
    return DIRECT_FIXED + taps  # direct; the reference costs about as much per tap


@dataclass(frozen=True)
class Plan:
    """The strategy ``auto`` runs, the tile for ``tiled``, and a one-line reason."""

    strategy: str
    tile: int | None
    reason: str

    def __post_init__(self) -> None:
        if STRATEGIES.get(self.strategy) is None or STRATEGIES[self.strategy].runs_on == "planner":
            raise ValueError(f"the planner chose {self.strategy!r}, which is not a strategy")

    def to_dict(self) -> dict[str, object]:
        return {"strategy": self.strategy, "tile": self.tile, "reason": self.reason}


def plan(
    kernel: Kernel,
    limits: DeviceLimits | None,
    *,
    tolerance: float | None = None,
) -> Plan:
    """Choose a strategy for ``kernel`` on a device with ``limits`` (``None``: no GPU).

    Arguments:
        kernel: the kernel to run.
        limits: the adapter's limits, or ``None`` when there is no adapter.
        tolerance: the error lowrank may make (``--tolerance``; ``None``: the default).

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

    direct_cost = DIRECT_FIXED + taps
    # Two 1-D passes cost about two copies whatever the taps (LINE_TAP is small): less than
    # one 2-D pass of any kernel larger than 1×1 (bench: box:3x1 separable 30 ms, direct 39;
    # box:2 38 and 45; 17×17 40 and 2168).
    if rank <= 1 and 2 * LINE_FIXED + LINE_TAP * (rows + cols) < direct_cost:
        if rows == 1 or cols == 1:
            n = max(rows, cols)
            block = line_block(n)
            reads = (block + n - 1) / block
            return Plan(
                "separable",
                None,
                f"1-D {size} kernel: separable's pass reads {reads:.2f} texels per pixel "
                f"(a run of {block} outputs shares its loads) instead of direct's {taps}",
            )
        sep_taps = rows + cols
        if sep_taps < taps:
            why = f"separable does {sep_taps} multiply-adds per pixel instead of {taps}"
        else:
            why = f"two 1-D passes of {cols} and {rows} taps cost less than one 2-D pass"
        return Plan("separable", None, f"rank {rank}, {size} taps: {why}")

    tile: TileChoice | None
    try:
        tile = choose_tile((rows, cols), limits)
    except StrategyError:
        tile = None
    tiled_cost = math.inf
    if tile is not None:
        per_tap = TILED_TAP
        if tile.layout == "scalar":
            per_tap *= 1.0 + SCALAR_TILE_COST / tile.tile
        tiled_cost = TILED_FIXED + taps * per_tap
    best = min(direct_cost, tiled_cost)
    fft = fft_cost((rows, cols))
    low = None
    if lowrank.why_not(kernel, tolerance) is None:
        low = lowrank.low_rank(kernel, tolerance)
    low_cost = lowrank_cost(low.k, (rows, cols)) if low is not None else math.inf
    if fft is not None and fft < min(best, low_cost):
        block = fft_block((rows, cols))
        rival = min(best, low_cost)
        name = "lowrank" if low_cost == rival else "direct" if direct_cost == rival else "tiled"
        return Plan(
            FFT,
            None,
            f"rank {rank}, {size} taps: fft's {block}×{block} transforms cost about as much "
            f"per pixel as {fft:.0f} direct taps, {name} {rival:.0f}",
        )
    if low is not None and low_cost < best:
        return Plan(
            LOWRANK,
            None,
            f"rank {rank}, {size} taps: {low.describe()}; {low.k} separable pairs do "
            f"{low.k * (rows + cols)} multiply-adds per pixel instead of {taps}",
        )
    if tile is None:
        return Plan(
            "direct",
            None,
            f"rank {rank}, {size} taps: the halo does not fit workgroup memory "
            f"({limits.workgroup_storage} bytes); direct reads every tap from global memory",
        )
    if tiled_cost < direct_cost:
        per_px = halo_texels(tile.tile, (rows, cols)) / tile.tile**2
        return Plan(
            "tiled",
            tile.tile,
            f"rank {rank}, so not separable; tiled T={tile.tile} reads {per_px:.2f} texels per "
            f"pixel from global memory instead of {taps}",
        )
    if tile.layout == "scalar":
        return Plan(
            "direct",
            None,
            f"rank {rank}, {size} taps: only a {tile.tile}×{tile.tile} tile with a one-channel "
            "halo fits workgroup memory, and reloading it per channel costs more than direct's "
            "global reads",
        )
    return Plan(
        "direct",
        None,
        f"rank {rank}, {size} taps: too few taps for tiled's halo load and barrier to pay off; "
        f"direct reads its {taps} taps from global memory",
    )
