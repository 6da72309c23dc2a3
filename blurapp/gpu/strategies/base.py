"""What every GPU strategy shares: the PassSpec it plans, the Strategy base with its cost model,
and the registry a strategy module adds itself to.

A strategy is one module of this package: a :class:`Strategy` subclass decorated with
:func:`register`, holding both halves of what it is. :meth:`Strategy.passes` turns (kernel,
border, image size, device limits) into :class:`PassSpec` dispatches that
:class:`blurapp.gpu.engine.GpuFilter` executes; :meth:`Strategy.estimate` is its cost model, the
linear features whose coefficients (:attr:`Strategy.builtin`, or a calibrated table from
:mod:`blurapp.gpu.calibration`) give the time :mod:`blurapp.core.planner` compares. Registering
puts the instance in :data:`STRATEGIES` and its cost model in the planner's registry
(:func:`blurapp.core.planner.register_cost_model`): the planner, being numpy only, never imports
this package, it sees what was registered. Its name must be an entry of
:data:`blurapp.core.strategies.STRATEGIES`, the one list of names.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from blurapp.core import planner
from blurapp.core import strategies as registry
from blurapp.core.errors import StrategyError

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel
    from blurapp.core.planner import Context, DeviceLimits, Estimate

__all__ = [
    "OUTPUT_FORMATS",
    "STRATEGIES",
    "TEXEL_BYTES",
    "PassSpec",
    "Strategy",
    "get_strategy",
    "register",
    "with_output",
]

TEXEL_BYTES = 16  # one rgba32float texel, the unit of every global read and write

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


def groups(n: int, side: int) -> int:
    """Workgroups of ``side`` that cover ``n`` (at least one)."""
    return max(1, math.ceil(n / side))


def check_kernel_size(kernel: Kernel) -> tuple[int, int]:
    """``(rows, cols)`` of ``kernel``, or StrategyError for a kernel without taps."""
    rows, cols = kernel.shape
    if rows < 1 or cols < 1:
        raise StrategyError(f"kernel {kernel.name!r} has no taps ({cols}×{rows})")
    return rows, cols


def has_zero(kernel: Kernel) -> bool:
    """Whether ``kernel`` has a zero weight (as float32): the 2-D shaders then skip zero taps
    instead of multiplying them, so that NaN and Inf spread only under non-zero weights."""
    return bool(np.any(np.asarray(kernel.weights, dtype=np.float32) == 0))


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
    """How one GPU strategy runs a kernel, and what it costs; stateless, one instance each.

    Subclasses set :attr:`name` (an entry of the registry of names) and :attr:`builtin` (the
    cost coefficients used until this adapter is calibrated), and implement :meth:`passes`
    and :meth:`estimate`; :meth:`explain` words the planner's reason when it picks them, and
    :attr:`calibration` lists the micro-runs that fit the coefficients on an adapter.
    """

    name: ClassVar[str]  # its entry in blurapp.core.strategies.STRATEGIES
    #: Cost coefficient -> built-in value, in the built-in table's unit (one direct tap per
    #: output pixel on lavapipe, :data:`blurapp.core.planner.BUILTIN_UNIT_NS`).
    builtin: ClassVar[Mapping[str, float]] = {}
    #: ``(width, height, kernel spec)`` micro-runs whose times fit the coefficients: sizes and
    #: kernels that move each feature of :meth:`estimate` on its own.
    calibration: ClassVar[tuple[tuple[int, int, str], ...]] = ()
    #: Features calibration fits on their own; the others keep the built-in proportions under
    #: one scale for the adapter (a few timed runs cannot pin a coefficient per feature).
    fitted: ClassVar[tuple[str, ...]] = ()

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

    @abstractmethod
    def estimate(
        self,
        kernel: Kernel,
        limits: DeviceLimits,
        size: tuple[int, int],
        tolerance: float | None = None,
    ) -> Estimate | None:
        """The cost model: the features of one run on a (width, height) image (each multiplied
        by its coefficient and summed, the planner's predicted time), or ``None`` when this
        strategy cannot run ``kernel`` on this device. Numpy only: no device is touched."""

    def explain(self, kernel: Kernel, ctx: Context) -> str:
        """The planner's one-line reason when it picks this strategy (``ctx``: the rank, the
        other strategies' estimates and costs)."""
        rival = ctx.rival()
        against = f"; {rival} {ctx.per_pixel(rival):.3g}" if rival else ""
        return (
            f"rank {ctx.rank}, {ctx.size} taps: {self.name} costs the least per pixel "
            f"({ctx.per_pixel(self.name):.3g} {ctx.unit}{against})"
        )


_S = TypeVar("_S", bound=type[Strategy])

#: name -> the registered strategy, in the registry of names' order once all are imported.
STRATEGIES: dict[str, Strategy] = {}


def register(cls: _S) -> _S:
    """Class decorator: register one instance of ``cls`` as the GPU strategy ``cls.name`` and
    its cost model with the planner. The name must be a GPU entry of the registry of names."""
    info = registry.STRATEGIES.get(cls.name)
    if info is None or info.runs_on != "gpu":
        raise StrategyError(
            f"strategy class {cls.__name__} is called {cls.name!r}, which is not a GPU entry "
            "of blurapp.core.strategies.STRATEGIES"
        )
    instance = cls()
    STRATEGIES[cls.name] = instance
    planner.register_cost_model(instance)
    return cls


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
