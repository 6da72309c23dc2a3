"""Pick the strategy ``auto`` runs: the cheapest registered one by the cost of its passes, and
say why, with the predicted times.

One rule: every GPU strategy registers a cost model (:func:`register_cost_model`; each one lives
beside its passes in a module of :mod:`blurapp.gpu.strategies`). A model turns a kernel, the
device's limits and an image size into linear *features* (output pixels, taps read, passes,
transform elements...); a :class:`CostTable` holds each feature's coefficient. The predicted
time of a strategy is the sum of its features times their coefficients; :func:`choose` runs the
cheapest one that can run the kernel, and its :class:`Plan` carries the predicted times of all
of them. The table is the built-in one (coefficients fitted to ``blurapp bench`` on lavapipe,
in units of one direct tap per output pixel, about :data:`BUILTIN_UNIT_NS` ns there) until the
adapter at hand is calibrated (:mod:`blurapp.gpu.calibration` measures it and installs its table
with :func:`use_table`). With no adapter, or no registered model, ``cpu`` (the float64
reference) runs. Images with NaN or Inf get the same plan: blurapp.engine places their
non-finite outputs exactly whatever runs (:mod:`blurapp.core.nonfinite`).

This module is numpy only: it never imports the GPU package; it sees what registered itself.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from blurapp.core.errors import StrategyError
from blurapp.core.strategies import CPU, STRATEGIES

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

TILE_SIDES = (32, 16, 8)
VEC4_TEXEL_BYTES = 16  # one vec4<f32> of workgroup memory
SCALAR_TEXEL_BYTES = 4  # one f32: the channels are then processed one at a time
BAKED_TAPS = 65  # up to this many taps a 1-D pass has its weights baked in and unrolled
FFT = "fft"
FFT_MAX_BLOCK = 1024  # the largest block side the size-less estimate (:func:`fft_block`) assumes
#: Nanoseconds of one built-in cost unit (one direct tap per output pixel): lavapipe on this
#: project's 2-core VM, bench at 1024×1024 RGBA f32 (direct: ~6 ms a tap).
BUILTIN_UNIT_NS = 6.0
#: The image size a plan made without one assumes (the built-in coefficients' fitting size).
REFERENCE_SIZE = (1024, 1024)
BUILTIN = "built-in"


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


# -- cost models and tables ----------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """What a cost model says about one run: its features, and what the plan needs.

    Attributes:
        features: feature name -> amount for the whole run (output pixels, taps read, passes,
            transform elements...); the predicted cost is their sum weighted by the table's
            coefficients of the strategy.
        tile: the tile side the run would use (``tiled``), else ``None``.
        detail: what the strategy's reason words (a TileChoice, a lowrank choice, a block plan).
    """

    features: Mapping[str, float]
    tile: int | None = None
    detail: Any = None


class CostModel(Protocol):
    """A strategy's cost model (in practice the strategy itself, :mod:`blurapp.gpu.strategies`)."""

    name: str
    builtin: Mapping[str, float]

    def estimate(
        self, kernel: Kernel, limits: DeviceLimits, size: tuple[int, int],
        tolerance: float | None = None,
    ) -> Estimate | None: ...  # fmt: skip

    def explain(self, kernel: Kernel, ctx: Context) -> str: ...


#: name -> the registered cost model of each GPU strategy (filled as their modules import).
COST_MODELS: dict[str, CostModel] = {}


def register_cost_model(model: CostModel) -> None:
    """Make ``model`` one of the strategies :func:`choose` compares (its ``name`` must be an
    entry of the registry of names; a second registration replaces the first)."""
    if model.name not in STRATEGIES:
        raise StrategyError(f"cost model {model.name!r} is not in the registry of strategies")
    COST_MODELS[model.name] = model


@dataclass(frozen=True)
class CostTable:
    """Coefficients of every strategy's features, and the unit they are in.

    Attributes:
        name: what the table is, as plans and ``blurapp info`` say it (``"built-in"``, or
            ``"calibrated for ADAPTER (BACKEND)"``).
        unit_ns: nanoseconds of one unit of cost (the built-in table: one direct tap per pixel
            on lavapipe, :data:`BUILTIN_UNIT_NS`; a calibrated one counts in nanoseconds, 1.0).
        coefficients: strategy -> feature -> coefficient. A strategy or feature missing from it
            takes its model's built-in coefficient, converted to this unit.
    """

    name: str = BUILTIN
    unit_ns: float = BUILTIN_UNIT_NS
    coefficients: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def coefficient(self, model: CostModel, feature: str) -> float:
        own = self.coefficients.get(model.name, {})
        if feature in own:
            return float(own[feature])
        return float(model.builtin.get(feature, 0.0)) * BUILTIN_UNIT_NS / self.unit_ns

    def cost(self, model: CostModel, estimate: Estimate) -> float:
        """The predicted cost of ``estimate`` in this table's unit."""
        return sum(self.coefficient(model, f) * v for f, v in estimate.features.items())

    @property
    def calibrated(self) -> bool:
        return self.name != BUILTIN


BUILTIN_TABLE = CostTable()
_table_lock = threading.Lock()
_active_table: CostTable | None = None


def use_table(table: CostTable | None) -> None:
    """Make ``table`` the one :func:`choose` uses by default (``None``: the built-in one)."""
    global _active_table
    with _table_lock:
        _active_table = table


def active_table() -> CostTable:
    """The table plans use now: a calibrated one once installed, else the built-in one."""
    with _table_lock:
        return _active_table or BUILTIN_TABLE


def _models() -> list[CostModel]:
    """The registered models of GPU strategies in the registry, in the registry's order."""
    return [
        COST_MODELS[name]
        for name, info in STRATEGIES.items()
        if info.runs_on == "gpu" and name in COST_MODELS
    ]


def estimates(
    kernel: Kernel,
    limits: DeviceLimits,
    *,
    size: tuple[int, int] | None = None,
    tolerance: float | None = None,
    table: CostTable | None = None,
) -> dict[str, tuple[Estimate, float]]:
    """``{strategy: (estimate, cost)}`` of every registered strategy that can run ``kernel`` on
    a (width, height) image of ``size`` (``None``: :data:`REFERENCE_SIZE`), cost in ``table``'s
    unit (``None``: :func:`active_table`), in the registry's order."""
    table = table or active_table()
    size = size or REFERENCE_SIZE
    found: dict[str, tuple[Estimate, float]] = {}
    for model in _models():
        if STRATEGIES[model.name].why_not(kernel, tolerance) is not None:
            continue
        try:
            est = model.estimate(kernel, limits, size, tolerance)
        except StrategyError:
            est = None
        if est is not None:
            found[model.name] = (est, table.cost(model, est))
    return found


@dataclass(frozen=True)
class Context:
    """What a strategy's :meth:`explain` may say: the kernel's rank and size, every estimate."""

    kernel: Kernel
    limits: DeviceLimits
    rank: int
    size: str  # "17×17", columns × rows
    taps: int
    pixels: int
    table: CostTable
    found: Mapping[str, tuple[Estimate, float]]
    chosen: str

    @property
    def unit(self) -> str:
        return "direct taps" if self.table.unit_ns == BUILTIN_UNIT_NS else "ns"

    def per_pixel(self, name: str) -> float:
        """``name``'s predicted cost per output pixel, in :attr:`unit`."""
        return self.found[name][1] / self.pixels

    def estimate(self, name: str) -> Estimate | None:
        got = self.found.get(name)
        return None if got is None else got[0]

    def rival(self) -> str | None:
        """The cheapest strategy other than the chosen one, or ``None``."""
        others = [(c, n) for n, (_, c) in self.found.items() if n != self.chosen]
        return min(others)[1] if others else None

    def registered(self, name: str) -> bool:
        return name in COST_MODELS and name in STRATEGIES


@dataclass(frozen=True)
class Plan:
    """The strategy ``auto`` runs, the tile for ``tiled``, a one-line reason, and the times.

    Attributes:
        strategy: what runs.
        tile: the tile side for ``tiled``, else ``None``.
        reason: why, in one line.
        predicted: ``(strategy, ms)`` of every strategy that could run, cheapest first, for the
            plan's image size (per megapixel when it was made without one).
        table: the cost table's name (``"built-in"`` or ``"calibrated for ..."``).
        size: the (width, height) the times are for, or ``None`` (per megapixel).
    """

    strategy: str
    tile: int | None
    reason: str
    predicted: tuple[tuple[str, float], ...] = ()
    table: str = ""
    size: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if STRATEGIES.get(self.strategy) is None or STRATEGIES[self.strategy].runs_on == "planner":
            raise ValueError(f"the planner chose {self.strategy!r}, which is not a strategy")

    @property
    def times(self) -> str:
        """The predicted times in words (``""`` when there are none)."""
        if not self.predicted:
            return ""
        where = f"{self.size[0]}×{self.size[1]}" if self.size else "per megapixel"
        shown = ", ".join(f"{name} {_ms(ms)}" for name, ms in self.predicted)
        return f"predicted {where} ({self.table} costs): {shown}"

    @property
    def explained(self) -> str:
        """The reason and the predicted times, one line."""
        return f"{self.reason}; {self.times}" if self.predicted else self.reason

    def to_dict(self) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "tile": self.tile,
            "reason": self.reason,
            "predicted_ms": dict(self.predicted),
            "table": self.table,
            "size": list(self.size) if self.size else None,
        }


def _ms(ms: float) -> str:
    return f"{ms:.3g} ms" if ms < 1000 else f"{ms:,.0f} ms"


def choose(
    kernel: Kernel,
    limits: DeviceLimits | None,
    *,
    size: tuple[int, int] | None = None,
    tolerance: float | None = None,
    table: CostTable | None = None,
) -> Plan:
    """The cheapest registered strategy for ``kernel`` on a (width, height) image of ``size``.

    Arguments:
        kernel: the kernel to run.
        limits: the adapter's limits, or ``None`` when there is no adapter (``cpu`` then).
        size: the image's (width, height); ``None``: :data:`REFERENCE_SIZE`, and the plan's
            times are per megapixel.
        tolerance: the error lowrank may make (``--tolerance``; ``None``: the default).
        table: the cost table (``None``: :func:`active_table`).

    Returns:
        A :class:`Plan`: the strategy whose predicted cost is least (ties: the registry's
        order), the reason its cost model words, and every candidate's predicted time.
    """
    if limits is None:
        return Plan(CPU, None, "no GPU adapter: the float64 numpy reference runs on the CPU")
    table = table or active_table()
    # The built-in coefficients were fitted per pixel at the reference size, without the fixed
    # costs of a run (dispatches, fft's whole blocks): they compare strategies there, and the
    # image's own size only scales the times. A calibrated table predicts the image at hand.
    width, height = size if size and table.calibrated else REFERENCE_SIZE
    found = estimates(kernel, limits, size=(width, height), tolerance=tolerance, table=table)
    if not found:
        why = "no GPU strategy is registered" if not _models() else "no GPU strategy can run it"
        return Plan(CPU, None, f"{why}: the float64 numpy reference runs on the CPU")
    chosen = min(found, key=lambda n: found[n][1])  # min keeps the first of equal costs
    rows, cols = kernel.shape
    ctx = Context(
        kernel, limits, kernel.separability.rank, f"{cols}×{rows}", rows * cols,
        width * height, table, found, chosen,
    )  # fmt: skip
    shown = size[0] * size[1] if size else 1e6  # per megapixel without a size
    scale = table.unit_ns / 1e6 * shown / (width * height)
    predicted = tuple(sorted(((n, c * scale) for n, (_, c) in found.items()), key=lambda t: t[1]))
    est = found[chosen][0]
    return Plan(
        chosen, est.tile, COST_MODELS[chosen].explain(kernel, ctx), predicted, table.name,
        tuple(size) if size else None,
    )  # fmt: skip


def plan(
    kernel: Kernel,
    limits: DeviceLimits | None,
    *,
    tolerance: float | None = None,
) -> Plan:
    """:func:`choose` without an image size (the reference size; times per megapixel).

    Returns:
        A :class:`Plan` with its reason, e.g. ``"rank 1, 17×17 taps: separable does 34
        multiply-adds per pixel instead of 289"``.
    """
    return choose(kernel, limits, tolerance=tolerance)


def cost(
    strategy: str,
    kernel: Kernel,
    limits: DeviceLimits | None = None,
    *,
    tolerance: float | None = None,
) -> float:
    """The built-in table's cost per output pixel of ``strategy`` on ``kernel``, in direct taps
    (``auto``: the strategy it plans; the reference costs about one unit per tap). ``math.inf``
    where the strategy cannot run the kernel. For callers that size work by time; see
    :func:`predict_ms` for times on the adapter's own table."""
    limits = limits or DeviceLimits()
    info = STRATEGIES[strategy]
    if info.runs_on == "planner":
        strategy = choose(kernel, limits, tolerance=tolerance, table=BUILTIN_TABLE).strategy
        info = STRATEGIES[strategy]
    if info.runs_on == "cpu":
        rows, cols = kernel.shape
        return rows * cols + 3.0
    found = estimates(kernel, limits, tolerance=tolerance, table=BUILTIN_TABLE).get(strategy)
    return math.inf if found is None else found[1] / (REFERENCE_SIZE[0] * REFERENCE_SIZE[1])


def predict_ms(
    strategy: str,
    kernel: Kernel,
    limits: DeviceLimits,
    size: tuple[int, int],
    *,
    tolerance: float | None = None,
    table: CostTable | None = None,
) -> float:
    """Predicted milliseconds of ``strategy`` (``auto``: what it would pick) on a (width,
    height) image on this adapter's table (``None``: :func:`active_table`); ``math.inf`` where
    it cannot run; the reference costs :data:`BUILTIN_UNIT_NS` / 2 ns per tap and pixel."""
    table = table or active_table()
    if STRATEGIES[strategy].runs_on == "planner":
        strategy = choose(kernel, limits, size=size, tolerance=tolerance, table=table).strategy
    if STRATEGIES[strategy].runs_on == "cpu":
        rows, cols = kernel.shape
        return size[0] * size[1] * rows * cols * BUILTIN_UNIT_NS / 2 / 1e6
    at = size if table.calibrated else REFERENCE_SIZE  # as choose() compares them
    found = estimates(kernel, limits, size=at, tolerance=tolerance, table=table).get(strategy)
    if found is None:
        return math.inf
    return found[1] * table.unit_ns / 1e6 * (size[0] * size[1]) / (at[0] * at[1])


# -- the built-in model's closed forms (docs/PERFORMANCE.md, "How auto chooses") --------------


def lowrank_cost(k: int, kernel_shape: tuple[int, int]) -> float:
    """Built-in cost per pixel of k separable pairs summed on the GPU (units of a direct tap)."""
    c = COST_MODELS["lowrank"].builtin
    rows, cols = kernel_shape
    return k * (c["pair"] + c["tap"] * (rows + cols)) + (k - 1) * c["sum"]


def fft_block(kernel_shape: tuple[int, int]) -> int:
    """The square block side a size-less fft estimate assumes: the cheapest power of two that
    holds the kernel twice, up to FFT_MAX_BLOCK or the first that holds it (see
    :func:`fft_cost`); never 0, whatever the kernel."""
    side = max(1, max(kernel_shape))
    first = 1 << max(3, math.ceil(math.log2(2 * side)))
    best, best_cost = first, math.inf
    block = first
    while block <= max(FFT_MAX_BLOCK, first):
        found = _fft_block_cost(block, side)
        if found < best_cost:
            best, best_cost = block, found
        block *= 2
    return best


def _fft_block_cost(block: int, side: int) -> float:
    c = COST_MODELS[FFT].builtin
    valid = block - side + 1
    return (c["element"] + c["element_log2"] * math.log2(block)) * block * block / (valid * valid)


def fft_cost(kernel_shape: tuple[int, int]) -> float | None:
    """Built-in cost per pixel of ``fft`` with :func:`fft_block`'s block (units of a direct
    tap): a + b·log2(block) per transformed pixel, times the overlap of the blocks; ``None``
    while the registry has no ``fft`` strategy."""
    if FFT not in STRATEGIES or FFT not in COST_MODELS:
        return None
    return _fft_block_cost(fft_block(kernel_shape), max(kernel_shape))


# The built-in coefficients under the names this module once defined them by.
_LEGACY = {
    "DIRECT_FIXED": ("direct", "pixel"),
    "TILED_FIXED": ("tiled", "pixel"),
    "TILED_TAP": ("tiled", "tap"),
    "LINE_FIXED": ("separable", "pass"),
    "LINE_TAP": ("separable", "row_tap"),
    "LOWRANK_FIXED": ("lowrank", "pair"),
    "LOWRANK_TAP": ("lowrank", "tap"),
    "LOWRANK_SUM": ("lowrank", "sum"),
    "FFT_FIXED": (FFT, "element"),
    "FFT_LOG2": (FFT, "element_log2"),
}


def __getattr__(name: str) -> float:
    if name in _LEGACY:
        model, feature = _LEGACY[name]
        if model in COST_MODELS:
            return float(COST_MODELS[model].builtin[feature])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
