"""The one registry of filter strategies: every list of strategy names reads it.

The command line's choices and help, the GUI's strategy combo, comparison panes and plot
colours, ``blurapp bench``, the planner and the tests all take their names from
:data:`STRATEGIES`. What a GPU strategy *does* and costs (its passes, shaders and cost model)
lives in its own module of :mod:`blurapp.gpu.strategies`, keyed by the same name; adding a
strategy is one entry here, one module there and its shader (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from blurapp.core.errors import StrategyError

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

__all__ = [
    "AUTO",
    "CPU",
    "LOWRANK",
    "STRATEGIES",
    "StrategyInfo",
    "compared_names",
    "get_info",
    "gpu_names",
    "names",
    "why_not",
]

AUTO = "auto"
CPU = "cpu"
LOWRANK = "lowrank"


@dataclass(frozen=True)
class StrategyInfo:
    """What every front end needs to know about one strategy, without running it.

    Attributes:
        name: the name users type (``--strategy``), shown in the GUI, bench and reports.
        runs_on: ``"gpu"`` (a module of blurapp.gpu.strategies), ``"cpu"`` (the float64 numpy
            reference) or ``"planner"`` (``auto``: picks one of the others and says why).
        summary: one line on how it works (help text, tooltips, ``kernel`` output).
        colour: its colour in plots and comparison panes (``#rrggbb``).
        needs_rank1: only rank ≤ 1 (separable) kernels.
        takes_tile: ``--tile`` means something to it.
        takes_tolerance: ``--tolerance`` means something to it (it may approximate the kernel
            within it: ``lowrank``, and ``auto`` when it picks lowrank).
        nan_overlay: its arithmetic would spread a NaN or Inf beyond the taps that read it (a
            sum of SVD pairs, a transform). On an image with NaN or Inf, blurapp.engine runs it
            on the finite values (the others as 0) and writes the non-finite outputs over the
            result, counted exactly (:mod:`blurapp.core.nonfinite`): its results follow
            DESIGN.md's NaN rule all the same, at the cost of the counts, and ``auto`` may pick
            it for any image. See :meth:`needs_nan_overlay`.
    """

    name: str
    runs_on: Literal["gpu", "cpu", "planner"]
    summary: str
    colour: str
    needs_rank1: bool = False
    takes_tile: bool = False
    takes_tolerance: bool = False
    nan_overlay: bool = False

    def needs_nan_overlay(self, kernel: Kernel) -> bool:
        """Whether this strategy's own arithmetic could put a NaN or Inf where DESIGN.md's
        rule does not, so that an image with NaN or Inf needs the exact overlay.

        Always for ``nan_overlay`` strategies; for the rank-1 ones (two 1-D passes) when the
        kernel's factors miss one of its zero taps (a rank-1 kernel whose tail products fall
        below float32's range, :func:`~blurapp.core.nonfinite.factors_keep_zeros`); never for
        the 2-D passes and the reference, which skip exactly the zero taps.
        """
        if self.nan_overlay:
            return True
        if not self.needs_rank1:
            return False
        from blurapp.core.nonfinite import factors_keep_zeros

        sep = kernel.separability
        if sep.column is None or sep.row is None:  # the zero kernel: no tap reads anything
            return False
        return not factors_keep_zeros(kernel.weights, sep.column, sep.row)

    def why_not(self, kernel: Kernel, tolerance: float | None = None) -> str | None:
        """Why this strategy cannot run ``kernel`` (one line), or ``None`` when it can.

        ``tolerance``: the ``--tolerance`` asked for (``None``: the default), for ``lowrank``.
        """
        if self.name == LOWRANK:
            from blurapp.core import lowrank

            return lowrank.why_not(kernel, tolerance)
        if self.needs_rank1:
            rank = kernel.separability.rank
            if rank > 1:
                return (
                    f"{self.name} needs a rank-1 kernel; {kernel.name} has rank {rank}: "
                    "use direct, tiled or cpu"
                )
        return None


STRATEGIES: dict[str, StrategyInfo] = {
    info.name: info
    for info in (
        StrategyInfo(AUTO, "planner", "the planner picks a strategy and says why", "#444444",
                     takes_tile=True, takes_tolerance=True),
        StrategyInfo("direct", "gpu",
                     "one invocation per output pixel, every tap read from global memory",
                     "#d62728"),
        StrategyInfo("tiled", "gpu",
                     "T×T output tile with its halo in workgroup memory, a block of outputs per "
                     "invocation", "#1f77b4", takes_tile=True),
        StrategyInfo("separable", "gpu",
                     "row pass then column pass, each invocation filtering a short run of "
                     "outputs", "#2ca02c", needs_rank1=True),
        StrategyInfo("transpose", "gpu",
                     "row pass, tiled transpose, the same row pass, transpose back", "#9467bd",
                     needs_rank1=True),
        StrategyInfo(LOWRANK, "gpu",
                     "a sum of k separable pass pairs from the SVD, k the exact rank or the "
                     "fewest within --tolerance", "#ff7f0e", takes_tolerance=True,
                     nan_overlay=True),
        StrategyInfo("fft", "gpu",
                     "FFT convolution in overlap-save blocks (power-of-two sides up to 2048), "
                     "the image's transforms on the GPU", "#17becf", nan_overlay=True),
        StrategyInfo(CPU, "cpu", "the float64 numpy reference on the CPU", "#7f7f7f"),
    )
}  # fmt: skip


def names() -> tuple[str, ...]:
    """Every strategy name, ``auto`` first (argparse choices, the GUI's combo)."""
    return tuple(STRATEGIES)


def gpu_names() -> tuple[str, ...]:
    """The strategies that run on the GPU, in registry order."""
    return tuple(n for n, info in STRATEGIES.items() if info.runs_on == "gpu")


def compared_names() -> tuple[str, ...]:
    """The strategies a side-by-side comparison runs: all but the planner."""
    return tuple(n for n, info in STRATEGIES.items() if info.runs_on != "planner")


def get_info(name: str) -> StrategyInfo:
    """The registry entry of ``name``.

    Raises:
        StrategyError: unknown name; the message lists the known ones.
    """
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise StrategyError(
            f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}"
        ) from None


def why_not(name: str, kernel: Kernel, tolerance: float | None = None) -> str | None:
    """Why strategy ``name`` cannot run ``kernel`` (within ``tolerance``, for lowrank), or
    ``None`` when it can; unknown names get a line too."""
    info = STRATEGIES.get(name) if isinstance(name, str) else None
    if info is None:
        return f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}"
    return info.why_not(kernel, tolerance)
